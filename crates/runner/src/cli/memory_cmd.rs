//! `runner memory ...`: a user's memory from the command line, through the same store API the
//! memory tools use; every write through the governance of the `cli` surface
//! ([`crate::memory_governed`]).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use memory::{HybridQuery, MemoryStore, OpenOptions, Similar, Weights};
use types::{NoteId, SessionId, UserId};

use crate::args::{MemoryAction, MemoryArgs, TargetArgs};
use crate::memory_governed::CliMemory;
use crate::{Global, memory_audit, memory_governed, memory_organise, memory_tree};

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

/// Whether a memory command may start a forgotten user's memory afresh (`--fresh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fresh {
    Yes,
    No,
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
    open_or_rekey(global, root, agent_config, false, Fresh::No)
        .await?
        .context("the store was not opened")
}

/// Opens the --user's store, or with `rekey` re-keys its file instead (`None`).
async fn open_or_rekey(
    global: &Global,
    root: Option<PathBuf>,
    agent_config: Option<PathBuf>,
    rekey: bool,
    fresh: Fresh,
) -> Result<Option<UserStore>> {
    let (user, root, agent_config, encryption) = user_setup(global, root, agent_config)?;
    match (runner::forgotten_at(&root, &user), fresh) {
        (Some(when), Fresh::No) => bail!(
            "{user}'s memory was forgotten ({when}, `runner forget`): nothing to read or change, \
             and nothing was created; `runner --user {user} start` starts them afresh with an \
             empty memory (or `runner memory --user {user} --fresh ...`)"
        ),
        (Some(_), Fresh::Yes) => runner::clear_forgotten(&root, &user)?,
        (None, _) => {}
    }
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
    let store = MemoryStore::open(
        memory::Target::Config {
            config: &config.memory,
            user_root: &user_root,
        },
        options,
    )
    .await
    .context("cannot open the memory store")?;
    Ok(Some(UserStore {
        user,
        config,
        user_root,
        store,
    }))
}

/// The --user, the workspace root, their agent.toml (when any) and the memory encryption, as
/// every command about one user finds them.
pub(crate) fn user_setup(
    global: &Global,
    root: Option<PathBuf>,
    agent_config: Option<PathBuf>,
) -> Result<(UserId, PathBuf, Option<PathBuf>, runner::MemoryEncryption)> {
    let Some(name) = global.user.as_deref() else {
        bail!("which user? pass --user NAME");
    };
    let user = UserId::parse(name).context("invalid --user")?;
    let (root, agent_config, encryption) = match root {
        Some(root) => {
            let agent_config = match agent_config {
                Some(path) => Some(path),
                None => users_agent_toml(global, &root, &user),
            };
            (root, agent_config, runner::MemoryEncryption::default())
        }
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
    Ok((user, root, agent_config, encryption))
}

/// The agent.toml of `user` under `root` when `--agent-config` is not given, so that the user's
/// `[governance]` holds for every command that opens their store: the one runner.toml gives
/// (when its workspace_root is `root`), else the copy the runner gave the user's agent when it
/// last started (`<root>/<user>/.oxydra/agent.toml`). With neither, the defaults apply, and the
/// log says so (`-v`).
fn users_agent_toml(global: &Global, root: &std::path::Path, user: &UserId) -> Option<PathBuf> {
    let same = |a: &std::path::Path| match (a.canonicalize(), root.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if let Ok(config) = global.runner_config()
        && same(&config.workspace_root)
        && let Ok(mut entries) = config.select(Some(user.as_str()))
    {
        return entries.pop().and_then(|entry| entry.agent_config);
    }
    let copy = types::WorkspacePaths::new(root.join(user.as_str()))
        .internal()
        .join("agent.toml");
    if copy.is_file() {
        return Some(copy);
    }
    // There is no config of this user's to drop: the defaults are theirs (shown with -v).
    tracing::info!(
        user = %user,
        "no agent.toml found for this user (not in runner.toml for this root, no \
         .oxydra/agent.toml): the default [governance] applies; pass --agent-config PATH"
    );
    None
}

async fn run_as_operator(args: MemoryArgs, global: &Global) -> Result<()> {
    let rekey = matches!(args.action, MemoryAction::Rekey);
    let Some(UserStore {
        user,
        config,
        store,
        user_root,
    }) = open_or_rekey(
        global,
        args.root,
        args.agent_config,
        rekey,
        if args.fresh { Fresh::Yes } else { Fresh::No },
    )
    .await?
    else {
        return Ok(());
    };
    let result = act(args.action, &user, &config, &store, &user_root).await;
    // The database threads close their connections before the process exits.
    store.close().await;
    result
}

async fn act(
    action: MemoryAction,
    user: &UserId,
    config: &types::AgentConfig,
    store: &MemoryStore,
    user_root: &std::path::Path,
) -> Result<()> {
    let governed = CliMemory::new(store, config, user, user_root)?;
    let mut out = std::io::stdout().lock();
    match action {
        MemoryAction::Save {
            text,
            organise,
            allow_similar,
        } => {
            let mut args = serde_json::json!({"content": text, "allow_similar": allow_similar});
            if let Some(category) = memory_organise::category(&organise)? {
                args["category"] = serde_json::json!(category);
            }
            if !organise.tags.is_empty() {
                args["tags"] = serde_json::json!(organise.tags);
            }
            let report = governed.call(tools::MEMORY_SAVE_TOOL_NAME, args).await?;
            print_json(&mut out, &saved_for_the_operator(report, user))?;
        }
        MemoryAction::Search {
            query,
            top_k,
            organise,
            json,
            raw,
        } => {
            let top_k = top_k.unwrap_or(config.retrieval.top_k);
            if top_k == 0 || top_k > HybridQuery::MAX_TOP_K {
                bail!("--top-k must be between 1 and {}", HybridQuery::MAX_TOP_K);
            }
            let mut q = HybridQuery::new(vec![SessionId::user_memory(user)], query, top_k);
            q.weights = Weights::from(&config.retrieval);
            q.filters = memory_organise::filters(&organise)?;
            let rows = governed.search(q).await?;
            if json {
                print_json(&mut out, &rows)?;
            } else {
                for h in &rows {
                    let id = h.note_id.as_ref().map_or("-", NoteId::as_str);
                    let text = crate::out::field(&h.text, raw);
                    let id = crate::out::field(id, raw);
                    writeln!(out, "{:.3}  {id}  {text}", h.score)?;
                }
            }
        }
        MemoryAction::Get { note_id } => {
            let note = governed.get(&parse_note_id(&note_id)?).await?;
            print_json(&mut out, &note)?;
        }
        MemoryAction::Update { note_id, text } => {
            let report = governed.update(&parse_note_id(&note_id)?, &text).await?;
            print_json(&mut out, &report)?;
        }
        MemoryAction::Delete { note_id } => {
            let id = parse_note_id(&note_id)?;
            let args = serde_json::json!({"note_id": id});
            let mut report = governed.call(tools::MEMORY_DELETE_TOOL_NAME, args).await?;
            report["message"] = serde_json::json!(format!(
                "Deleted. It can be restored for {} days with `runner memory --user {user} \
                 restore {id}` (`runner memory --user {user} deleted` lists what can be).",
                config.memory.tombstone_retention_days
            ));
            print_json(&mut out, &report)?;
        }
        MemoryAction::History { note_id } => {
            let history = governed.history(&parse_note_id(&note_id)?).await?;
            print_json(&mut out, &history)?;
        }
        MemoryAction::Restore { note_id, version } => {
            let note = governed.restore(&parse_note_id(&note_id)?, version).await?;
            print_json(&mut out, &note)?;
        }
        MemoryAction::Confirm { note_id } => {
            let id = parse_note_id(&note_id)?;
            match governed.confirm(&id).await? {
                (note, memory_governed::Changed::Yes) => print_json(&mut out, &note)?,
                (note, memory_governed::Changed::No) => print_json(
                    &mut out,
                    &serde_json::json!({
                        "note_id": note.note_id,
                        "changed": false,
                        "message": "Already confirmed (or trusted from the start): nothing changed.",
                    }),
                )?,
            }
        }
        MemoryAction::Deleted => print_json(&mut out, &governed.deleted().await?)?,
        MemoryAction::Stats => print_json(&mut out, &store.upkeep().stats().await?)?,
        MemoryAction::Reindex => {
            let n = store.upkeep().reindex(progress("re-embedding")).await?;
            print_json(&mut out, &serde_json::json!({ "reindexed_chunks": n }))?;
        }
        MemoryAction::List {
            organise,
            limit,
            cursor,
            expired,
            json,
            raw,
        } => {
            let args = memory_organise::ListArgs {
                organise,
                limit,
                cursor,
                expired,
                json,
                raw,
            };
            let list = memory_organise::list(store, user, args, &mut out);
            governed.read(types::memory_ops::LIST, list).await?;
        }
        MemoryAction::Export {
            organise,
            since,
            markdown,
            raw,
        } => {
            let format = memory_organise::ExportFormat { markdown, raw };
            let export =
                memory_organise::export(store, user, &organise, since.as_deref(), format, &mut out);
            governed.read(types::memory_ops::EXPORT, export).await?;
        }
        // Handled above, before the store is opened.
        MemoryAction::Rekey => {}
        MemoryAction::Audit {
            since,
            limit,
            before,
            json,
            raw,
        } => {
            let args = memory_audit::AuditArgs {
                since: since.as_deref(),
                before,
                limit,
            };
            memory_audit::print(store, args, json, raw, &mut out).await?;
        }
        MemoryAction::Import {
            file,
            allow_similar,
            target,
        } => {
            let notes = match &file {
                Some(path) => {
                    let f = runner::open_operator_file(path, &policy(target, user_root))?;
                    read_jsonl(std::io::BufReader::new(f))?
                }
                None => read_jsonl(std::io::stdin().lock())?,
            };
            // The file's name only: notes are shown to the model, host paths never are.
            let from = file
                .as_deref()
                .and_then(std::path::Path::file_name)
                .map(|n| n.to_string_lossy().into_owned());
            let report = governed
                .import(notes, similar(allow_similar), from.as_deref())
                .await?;
            print_json(&mut out, &report)?;
        }
        MemoryAction::ExportTree { dir, target } => {
            let policy = policy(target, user_root);
            // The target is made only once the read is allowed: a refusal changes nothing.
            let export = async {
                let dir = runner::open_operator_dir(&dir, runner::Want::NewOrEmpty, &policy)?;
                memory_tree::export(store, user, &dir).await
            };
            let n = governed
                .read(types::memory_ops::EXPORT_TREE, export)
                .await?;
            print_json(&mut out, &serde_json::json!({ "exported_files": n }))?;
        }
        MemoryAction::ImportTree { dir, target } => {
            let policy = policy(target, user_root);
            let dir = runner::open_operator_dir(&dir, runner::Want::Existing, &policy)?;
            print_json(&mut out, &governed.import_tree(&dir).await?)?;
        }
    }
    Ok(())
}

/// A save's report in the operator's words: the model-facing advice (which names tools) becomes
/// the commands that do the same.
fn saved_for_the_operator(mut report: serde_json::Value, user: &UserId) -> serde_json::Value {
    let id = report["note_id"].as_str().unwrap_or("NOTE_ID").to_owned();
    let message = if report["similar"].is_array() {
        "Not saved: similar notes exist. If one says the same thing, change it with `runner \
         memory update NOTE_ID TEXT`; if this is a different fact, save again with \
         --allow-similar."
            .to_owned()
    } else if report["saved"] == serde_json::json!(false) {
        format!("Not saved again: {id} already says it.")
    } else {
        format!(
            "Saved as {id}. Change it with `runner memory --user {user} update {id} TEXT`, \
             remove it with `runner memory --user {user} delete {id}`."
        )
    };
    report["message"] = serde_json::json!(message);
    report
}

/// The operator's `--allow-shell-writable`, with every user's shell areas under this workspace
/// root counted as the shell's.
fn policy(target: TargetArgs, user_root: &std::path::Path) -> runner::TargetPolicy {
    runner::TargetPolicy {
        allow_shell_writable: target.allow_shell_writable,
        workspace_root: user_root.parent().map(std::path::Path::to_owned),
    }
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
    crate::out::write_json(out, value)
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
