//! `runner memory ...`: a user's memory from the command line, through the same store API the
//! memory tools use.

use std::io::{BufRead, Write};

use anyhow::{Context, Result, bail};
use memory::{HybridQuery, MemoryStore, OpenOptions, Weights};
use types::{NoteId, SessionId, UserId};

use crate::cli::{MemoryAction, MemoryArgs};
use crate::{Global, memory_organise};

pub async fn run(args: MemoryArgs, global: &Global) -> Result<()> {
    let root = args.root.clone();
    let result = run_as_operator(args, global).await;
    // Run as root, the store may have created files (the database, its journal) its agent, which
    // runs as the user's own uid, could not write: they go back to that uid.
    if let (Some(name), true) = (global.user.as_deref(), runner::runs_as_root()) {
        let root = match root {
            Some(root) => Some(root),
            None => global.runner_config().ok().map(|c| c.workspace_root),
        };
        if let (Some(root), Ok(user)) = (root, UserId::parse(name))
            && let Some(id) = runner::recorded_identity(&root, &user)
        {
            let ws = types::WorkspacePaths::for_user(&root, &user);
            if let Err(e) = runner::own_workspace(&ws, id) {
                tracing::warn!(error = %e, "could not give the memory files back to the agent's uid");
            }
        }
    }
    result
}

async fn run_as_operator(args: MemoryArgs, global: &Global) -> Result<()> {
    let Some(name) = global.user.as_deref() else {
        bail!("which user? pass --user NAME");
    };
    let user = UserId::parse(name).context("invalid --user")?;
    let (root, agent_config, encryption) = match args.root {
        Some(root) => (root, args.agent_config, runner::MemoryEncryption::default()),
        None => {
            let config = global.runner_config()?;
            let entry = config.select(Some(name))?.remove(0);
            (
                config.workspace_root,
                args.agent_config.or(entry.agent_config),
                config.memory_encryption,
            )
        }
    };
    let mut config = runner::load_agent_config(agent_config.as_deref())?;
    if let MemoryAction::Rekey = args.action {
        let ws = types::WorkspacePaths::new(root.join(user.as_str()));
        let place = runner::MemoryPlace::of(&config, &ws);
        return crate::keys_cmd::rekey(&encryption, &root, &user, &ws, &place).await;
    }
    // The agent may hold an embedded replica at db_path: a second replica on the same file is
    // not safe, so the CLI talks to the primary directly (the agent's replica syncs it).
    config.memory.replica = false;
    if !config.memory.enabled {
        bail!("memory is disabled in the agent config ([memory] enabled = false)");
    }
    let user_root = root.join(user.as_str());
    runner::check_db_place(&config.memory, &types::WorkspacePaths::new(&user_root))?;
    let place = runner::MemoryPlace::of(&config, &types::WorkspacePaths::new(&user_root));
    let options = OpenOptions {
        progress: Some(Box::new(progress("re-embedding"))),
        encryption_key: runner::key_for_cli(&encryption, &root, &user, &place)?,
        ..Default::default()
    };
    let store = MemoryStore::open_with(&config.memory, &user_root, options)
        .await
        .context("cannot open the memory store")?;
    let mut out = std::io::stdout().lock();
    match args.action {
        MemoryAction::Save { text, organise } => {
            let note = store
                .store_note(&user, &text, memory_organise::save_metadata(&organise)?)
                .await?;
            print_json(&mut out, &serde_json::json!({ "note_id": note.note_id }))?;
        }
        MemoryAction::Search {
            query,
            top_k,
            organise,
            json,
        } => {
            let top_k = top_k.unwrap_or(config.retrieval.top_k);
            if top_k == 0 || top_k > HybridQuery::MAX_TOP_K {
                bail!("--top-k must be between 1 and {}", HybridQuery::MAX_TOP_K);
            }
            let mut q = HybridQuery::new(vec![SessionId::user_memory(&user)], query, top_k);
            q.weights = Weights::from(&config.retrieval);
            q.filters = memory_organise::filters(&organise)?;
            let hits = store.hybrid_query(&q).await?;
            if json {
                let rows: Vec<_> = hits
                    .iter()
                    .map(|h| {
                        serde_json::json!({
                            "note_id": h.note_id, "text": h.text, "score": h.score,
                            "created_at": h.created_at, "updated_at": h.updated_at,
                            "category": h.category, "tags": h.tags,
                        })
                    })
                    .collect();
                print_json(&mut out, &rows)?;
            } else {
                for h in &hits {
                    let id = h.note_id.as_ref().map_or("-", NoteId::as_str);
                    writeln!(out, "{:.3}  {id}  {}", h.score, h.text.replace('\n', " "))?;
                }
            }
        }
        MemoryAction::Get { note_id } => {
            let note = store.get_note(&user, &parse_note_id(&note_id)?).await?;
            print_json(&mut out, &note)?;
        }
        MemoryAction::Update { note_id, text } => {
            let note = store
                .update_note(&user, &parse_note_id(&note_id)?, &text)
                .await?;
            print_json(
                &mut out,
                &serde_json::json!({ "note_id": note.note_id, "message": "note updated" }),
            )?;
        }
        MemoryAction::Delete { note_id } => {
            let id = parse_note_id(&note_id)?;
            store.delete_note(&user, &id).await?;
            print_json(
                &mut out,
                &serde_json::json!({ "note_id": id, "message": "note deleted" }),
            )?;
        }
        MemoryAction::Stats => print_json(&mut out, &store.stats().await?)?,
        MemoryAction::Reindex => {
            let n = store.reindex(progress("re-embedding")).await?;
            print_json(&mut out, &serde_json::json!({ "reindexed_chunks": n }))?;
        }
        MemoryAction::List {
            organise,
            limit,
            cursor,
            expired,
            json,
        } => {
            let args = memory_organise::ListArgs {
                organise,
                limit,
                cursor,
                expired,
                json,
            };
            memory_organise::list(&store, &user, args, &mut out).await?;
        }
        MemoryAction::Export {
            organise,
            since,
            markdown,
        } => {
            memory_organise::export(
                &store,
                &user,
                &organise,
                since.as_deref(),
                markdown,
                &mut out,
            )
            .await?;
        }
        // Handled above, before the store is opened.
        MemoryAction::Rekey => {}
        MemoryAction::Import { file } => {
            let notes = match file {
                Some(path) => {
                    let f = std::fs::File::open(&path)
                        .with_context(|| format!("cannot open {}", path.display()))?;
                    read_jsonl(std::io::BufReader::new(f))?
                }
                None => read_jsonl(std::io::stdin().lock())?,
            };
            let added = store.import_notes(&user, notes).await?;
            print_json(&mut out, &serde_json::json!({ "imported": added }))?;
        }
    }
    Ok(())
}

fn parse_note_id(raw: &str) -> Result<NoteId> {
    NoteId::parse(raw).with_context(|| format!("invalid note id {raw:?}"))
}

fn read_jsonl(reader: impl BufRead) -> Result<Vec<memory::ExportedNote>> {
    let mut notes = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let note = serde_json::from_str(&line)
            .with_context(|| format!("line {}: not an exported note", n + 1))?;
        notes.push(note);
    }
    Ok(notes)
}

fn print_json(out: &mut impl Write, value: &impl serde::Serialize) -> Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

/// Progress on stderr, at most once per percent.
fn progress(what: &'static str) -> impl FnMut(usize, usize) + Send + 'static {
    let mut last = usize::MAX;
    move |done, total| {
        let pct = (done * 100).checked_div(total).unwrap_or(100);
        if pct != last {
            last = pct;
            #[allow(
                clippy::print_stderr,
                reason = "progress of long CLI work goes to the terminal"
            )]
            {
                eprint!("\r{what}: {done}/{total} chunks ({pct}%)");
                if done >= total {
                    eprintln!();
                }
            }
        }
    }
}
