//! `runner memory ...`: a user's memory from the command line, through the same store API the
//! memory tools use.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use memory::{
    HybridQuery, MemoryStore, OpenOptions, Origin, Provenance, SaveOutcome, Similar, Weights,
};
use types::{NoteId, SessionId, UserId};

use crate::cli::{MemoryAction, MemoryArgs};
use crate::{Global, memory_audit, memory_organise, memory_tree};

pub async fn run(args: MemoryArgs, global: &Global) -> Result<()> {
    let root = args.root.clone();
    let result = run_as_operator(args, global).await;
    give_back(root, global);
    result
}

/// Run as root, the store may have created files (the database, its journal) its agent, which
/// runs as the user's own uid, could not write: they go back to that uid.
pub(crate) fn give_back(root: Option<PathBuf>, global: &Global) {
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
}

/// The --user's store, opened as the CLI opens it (the primary, never a second replica).
pub(crate) struct UserStore {
    pub(crate) user: UserId,
    pub(crate) config: types::AgentConfig,
    pub(crate) user_root: PathBuf,
    pub(crate) store: MemoryStore,
}

pub(crate) async fn open_user_store(
    global: &Global,
    root: Option<PathBuf>,
    agent_config: Option<PathBuf>,
) -> Result<UserStore> {
    open_or_rekey(global, root, agent_config, false)
        .await?
        .context("the store was not opened")
}

/// Opens the --user's store, or with `rekey` re-keys its file instead (`None`).
async fn open_or_rekey(
    global: &Global,
    root: Option<PathBuf>,
    agent_config: Option<PathBuf>,
    rekey: bool,
) -> Result<Option<UserStore>> {
    let Some(name) = global.user.as_deref() else {
        bail!("which user? pass --user NAME");
    };
    let user = UserId::parse(name).context("invalid --user")?;
    let (root, agent_config, encryption) = match root {
        Some(root) => (root, agent_config, runner::MemoryEncryption::default()),
        None => {
            let config = global.runner_config()?;
            let entry = config.select(Some(name))?.remove(0);
            (
                config.workspace_root,
                agent_config.or(entry.agent_config),
                config.memory_encryption,
            )
        }
    };
    let mut config = runner::load_agent_config(agent_config.as_deref())?;
    if rekey {
        let ws = types::WorkspacePaths::new(root.join(user.as_str()));
        let place = runner::MemoryPlace::of(&config, &ws);
        crate::keys_cmd::rekey(&encryption, &root, &user, &ws, &place).await?;
        return Ok(None);
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
    Ok(Some(UserStore {
        user,
        config,
        user_root,
        store,
    }))
}

async fn run_as_operator(args: MemoryArgs, global: &Global) -> Result<()> {
    let rekey = matches!(args.action, MemoryAction::Rekey);
    let Some(UserStore {
        user,
        config,
        store,
        ..
    }) = open_or_rekey(global, args.root, args.agent_config, rekey).await?
    else {
        return Ok(());
    };
    let mut out = std::io::stdout().lock();
    match args.action {
        MemoryAction::Save {
            text,
            organise,
            allow_similar,
        } => {
            let text = memory_audit::screen(&config.governance, &text)?;
            let key = memory_audit::cli_write("save", None);
            let metadata = memory::NoteMetadata {
                provenance: Some(Provenance::outside_turn(Origin::Cli)),
                ..memory_organise::save_metadata(&organise)?
            };
            let outcome = store
                .store_note_checked(&user, Some(&key), &text, metadata, similar(allow_similar))
                .await?;
            let report = match outcome {
                SaveOutcome::Saved(receipt) => serde_json::json!({ "note_id": receipt.note_id }),
                SaveOutcome::Duplicate { note_id, .. } => serde_json::json!({
                    "note_id": note_id, "saved": false,
                    "message": "not saved: this note already says it",
                }),
                SaveOutcome::Similar(notes) => serde_json::json!({
                    "saved": false, "similar": notes,
                    "message": "not saved: similar notes exist (update one, or pass --allow-similar)",
                }),
            };
            print_json(&mut out, &report)?;
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
            let text = memory_audit::screen(&config.governance, &text)?;
            let id = parse_note_id(&note_id)?;
            let current = store.get_note(&user, &id).await?;
            let key = memory_audit::cli_write("update", Some(id.as_str()));
            let receipt = store
                .update_note_patched(
                    &user,
                    Some(&key),
                    &id,
                    &text,
                    &memory::note_version(&current.content),
                    memory::MetadataPatch::default(),
                )
                .await?;
            print_json(
                &mut out,
                &serde_json::json!({ "note_id": receipt.note_id, "message": "note updated" }),
            )?;
        }
        MemoryAction::Delete { note_id } => {
            let id = parse_note_id(&note_id)?;
            let key = memory_audit::cli_write("delete", Some(id.as_str()));
            store.delete_note_once(&user, Some(&key), &id).await?;
            print_json(
                &mut out,
                &serde_json::json!({ "note_id": id, "message": "note deleted" }),
            )?;
        }
        MemoryAction::History { note_id } => {
            let history = store.note_history(&user, &parse_note_id(&note_id)?).await?;
            print_json(&mut out, &history)?;
        }
        MemoryAction::Restore { note_id, version } => {
            let note = store
                .restore_note(&user, &parse_note_id(&note_id)?, version)
                .await?;
            print_json(&mut out, &note)?;
        }
        MemoryAction::Confirm { note_id } => {
            let note = store.confirm_note(&user, &parse_note_id(&note_id)?).await?;
            print_json(&mut out, &note)?;
        }
        MemoryAction::Deleted => print_json(&mut out, &store.list_deleted(&user).await?)?,
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
        MemoryAction::Audit { since, json } => {
            memory_audit::print(&store, since.as_deref(), json, &mut out).await?;
        }
        MemoryAction::Import {
            file,
            allow_similar,
        } => {
            let notes = match file {
                Some(path) => {
                    let f = std::fs::File::open(&path)
                        .with_context(|| format!("cannot open {}", path.display()))?;
                    read_jsonl(std::io::BufReader::new(f))?
                }
                None => read_jsonl(std::io::stdin().lock())?,
            };
            let report = store
                .import_notes_checked(&user, notes, similar(allow_similar))
                .await?;
            print_json(&mut out, &report)?;
        }
        MemoryAction::ExportTree { dir } => {
            let n = memory_tree::export(&store, &user, &dir).await?;
            print_json(&mut out, &serde_json::json!({ "exported_files": n }))?;
        }
        MemoryAction::ImportTree { dir } => {
            let n = memory_tree::import(&store, &user, &dir).await?;
            print_json(&mut out, &serde_json::json!({ "imported_files": n }))?;
        }
    }
    // The database threads close their connections before the process exits.
    store.close().await;
    Ok(())
}

fn similar(allow: bool) -> Similar {
    match allow {
        true => Similar::Allow,
        false => Similar::Refuse,
    }
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
