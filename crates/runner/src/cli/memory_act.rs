//! What `runner memory <action>` does once the user's store is open: one function per action,
//! each through the governance of the `cli` surface ([`CliMemory`]) and printing its report.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use memory::{HybridQuery, MemoryStore, Similar, Weights};
use types::{AgentConfig, SessionId, UserId, memory_ops};

use crate::args::{MemoryAction, Organise, SearchScope, TargetArgs};
use crate::memory_cmd::{parse_note_id, print_json, progress};
use crate::memory_governed::{Changed, CliMemory};
use crate::{memory_audit, memory_organise, memory_tree};

/// Runs `action` on `user`'s open `store`.
pub(crate) async fn act(
    action: MemoryAction,
    user: &UserId,
    config: &AgentConfig,
    store: &MemoryStore,
    user_root: &Path,
) -> Result<()> {
    let governed = CliMemory::new(store, config, user, user_root)?;
    let out = &mut std::io::stdout().lock();
    match action {
        MemoryAction::Save {
            text,
            organise,
            allow_similar,
        } => save(&governed, user, text, &organise, allow_similar, out).await,
        MemoryAction::Search {
            query,
            top_k,
            scope,
            organise,
            json,
            raw,
        } => {
            let mut q = search_query(user, config, query, top_k, &organise)?;
            q.sessions = searched_sessions(store, user, scope).await?;
            let zone = q.time.unwrap_or_else(|| tools::query_time(None)).tz;
            let (rows, time) = governed.search(q).await?;
            if let Some(time) = time {
                say_time(&time, raw, &mut std::io::stderr().lock())?;
            }
            print_hits(&rows, json, raw, &zone, out)
        }
        MemoryAction::Get { note_id } => {
            print_json(out, &governed.get(&parse_note_id(&note_id)?).await?)
        }
        MemoryAction::Update { note_id, text } => {
            let report = governed.update(&parse_note_id(&note_id)?, &text).await?;
            print_json(out, &report)
        }
        MemoryAction::Delete { note_id } => delete(&governed, user, config, &note_id, out).await,
        MemoryAction::History { note_id } => {
            print_json(out, &governed.history(&parse_note_id(&note_id)?).await?)
        }
        MemoryAction::Restore { note_id, version } => {
            let note = governed.restore(&parse_note_id(&note_id)?, version).await?;
            print_json(out, &note)
        }
        MemoryAction::Confirm { note_id } => confirm(&governed, &note_id, out).await,
        MemoryAction::Deleted => print_json(out, &governed.deleted().await?),
        whole => act_on_all(whole, user, store, &governed, user_root, out).await,
    }
}

/// The actions on all of the user's notes at once: stats, reindex, list, export, audit, import,
/// and the `/memories` tree's export and import.
async fn act_on_all(
    action: MemoryAction,
    user: &UserId,
    store: &MemoryStore,
    governed: &CliMemory,
    user_root: &Path,
    out: &mut impl Write,
) -> Result<()> {
    match action {
        MemoryAction::Stats => print_json(out, &store.upkeep().stats().await?),
        MemoryAction::Reindex => {
            let n = store.upkeep().reindex(progress("re-embedding")).await?;
            print_json(out, &serde_json::json!({ "reindexed_chunks": n }))
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
            let list = memory_organise::list(store, user, args, out);
            governed.read(memory_ops::LIST, list).await
        }
        MemoryAction::Export {
            organise,
            since,
            markdown,
            raw,
        } => {
            let format = memory_organise::ExportFormat { markdown, raw };
            let export =
                memory_organise::export(store, user, &organise, since.as_deref(), format, out);
            governed.read(memory_ops::EXPORT, export).await
        }
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
            memory_audit::print(store, args, json, raw, out).await
        }
        MemoryAction::Import {
            file,
            allow_similar,
            target,
        } => import(governed, file, allow_similar, target, user_root, out).await,
        MemoryAction::ExportTree { dir, target } => {
            let policy = policy(target, user_root);
            export_tree(governed, store, user, &dir, &policy, out).await
        }
        MemoryAction::ImportTree { dir, target } => {
            let policy = policy(target, user_root);
            let dir = runner::open_operator_dir(&dir, runner::Want::Existing, &policy)?;
            print_json(out, &governed.import_tree(&dir).await?)
        }
        // Handled before the store is opened.
        MemoryAction::Rekey => Ok(()),
        // The note verbs, which [`act`] serves itself.
        verb => bail!("not an action on all notes: {verb:?}"),
    }
}

/// `save`: through `memory_save`, its report in the operator's words.
async fn save(
    governed: &CliMemory,
    user: &UserId,
    text: String,
    organise: &Organise,
    allow_similar: bool,
    out: &mut impl Write,
) -> Result<()> {
    let mut args = serde_json::json!({"content": text, "allow_similar": allow_similar});
    if let Some(category) = memory_organise::category(organise)? {
        args["category"] = serde_json::json!(category);
    }
    if !organise.tags.is_empty() {
        args["tags"] = serde_json::json!(organise.tags);
    }
    let report = governed.call(tools::MEMORY_SAVE_TOOL_NAME, args).await?;
    print_json(out, &saved_for_the_operator(report, user))
}

/// `search`'s query: the user's notes, `top_k` (the configured one by default) within bounds.
fn search_query(
    user: &UserId,
    config: &AgentConfig,
    query: String,
    top_k: Option<usize>,
    organise: &Organise,
) -> Result<HybridQuery> {
    let top_k = top_k.unwrap_or(config.retrieval.top_k);
    if top_k == 0 || top_k > HybridQuery::MAX_TOP_K {
        bail!("--top-k must be between 1 and {}", HybridQuery::MAX_TOP_K);
    }
    let mut q = HybridQuery::new(vec![SessionId::user_memory(user)], query, top_k);
    q.weights = Weights::from(&config.retrieval);
    q.filters = memory_organise::filters(organise)?;
    let zone =
        tools::resolve_timezone(config.user.timezone.as_deref()).map_err(anyhow::Error::msg)?;
    q.time = Some(tools::query_time(Some(zone)));
    Ok(q)
}

/// The sessions `--scope` searches: the user's notes, their conversation sessions, or both.
async fn searched_sessions(
    store: &MemoryStore,
    user: &UserId,
    scope: SearchScope,
) -> Result<Vec<SessionId>> {
    let scope = match scope {
        SearchScope::Notes => tools::SearchScope::Notes,
        SearchScope::Conversations => tools::SearchScope::Conversations,
        SearchScope::All => tools::SearchScope::All,
    };
    tools::scope_sessions(store, user, scope, None)
        .await
        .context("listing the user's conversations")
}

/// How `search` read its words about time, one line (on stderr: stdout stays the hits, one per
/// line or JSON).
fn say_time(time: &types::TimeReadView, raw: bool, err: &mut impl Write) -> Result<()> {
    writeln!(err, "{}", crate::out::field(&time.read, raw))?;
    Ok(())
}

/// `search`'s hits, as JSON or one line each (score, id, text); a message dated on the day of
/// `zone` (the user's), the zone its words about time were read in.
fn print_hits<Z: chrono::TimeZone>(
    rows: &[crate::memory_governed::SearchRow],
    json: bool,
    raw: bool,
    zone: &Z,
    out: &mut impl Write,
) -> Result<()>
where
    Z::Offset: std::fmt::Display,
{
    if json {
        return print_json(out, &rows);
    }
    for h in rows {
        // A message is named by its session and place in it, and dated.
        let id = match (&h.note_id, &h.session_id) {
            (Some(id), _) => id.as_str().to_owned(),
            (None, Some(session)) => format!(
                "{session}#{} {}",
                h.event_seq.unwrap_or_default(),
                h.created_at.with_timezone(zone).format("%Y-%m-%d")
            ),
            (None, None) => "-".to_owned(),
        };
        let text = crate::out::field(&h.text, raw);
        let id = crate::out::field(&id, raw);
        writeln!(out, "{:.3}  {id}  {text}", h.score)?;
    }
    Ok(())
}

/// `delete`: through `memory_delete`, saying how to restore the note.
async fn delete(
    governed: &CliMemory,
    user: &UserId,
    config: &AgentConfig,
    note_id: &str,
    out: &mut impl Write,
) -> Result<()> {
    let id = parse_note_id(note_id)?;
    let args = serde_json::json!({"note_id": id});
    let mut report = governed.call(tools::MEMORY_DELETE_TOOL_NAME, args).await?;
    report["message"] = serde_json::json!(format!(
        "Deleted. It can be restored for {} days with `runner memory --user {user} \
         restore {id}` (`runner memory --user {user} deleted` lists what can be).",
        config.memory.tombstone_retention_days
    ));
    print_json(out, &report)
}

/// `confirm`: the note, or that nothing changed.
async fn confirm(governed: &CliMemory, note_id: &str, out: &mut impl Write) -> Result<()> {
    match governed.confirm(&parse_note_id(note_id)?).await? {
        (note, Changed::Yes) => print_json(out, &note),
        (note, Changed::No) => print_json(
            out,
            &serde_json::json!({
                "note_id": note.note_id,
                "changed": false,
                "message": "Already confirmed (or trusted from the start): nothing changed.",
            }),
        ),
    }
}

/// `export-tree`: the `/memories` tree written out as files into `dir`.
async fn export_tree(
    governed: &CliMemory,
    store: &MemoryStore,
    user: &UserId,
    dir: &Path,
    policy: &runner::TargetPolicy,
    out: &mut impl Write,
) -> Result<()> {
    // The target is made only once the read is allowed: a refusal changes nothing.
    let export = async {
        let dir = runner::open_operator_dir(dir, runner::Want::NewOrEmpty, policy)?;
        memory_tree::export(store, user, &dir).await
    };
    let n = governed.read(memory_ops::EXPORT_TREE, export).await?;
    print_json(out, &serde_json::json!({ "exported_files": n }))
}

/// `import`: exported notes from a file (or stdin), as one governed import.
async fn import(
    governed: &CliMemory,
    file: Option<PathBuf>,
    allow_similar: bool,
    target: TargetArgs,
    user_root: &Path,
    out: &mut impl Write,
) -> Result<()> {
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
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned());
    let report = governed
        .import(notes, similar(allow_similar), from.as_deref())
        .await?;
    print_json(out, &report)
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
fn policy(target: TargetArgs, user_root: &Path) -> runner::TargetPolicy {
    runner::TargetPolicy {
        allow_shell_writable: target.allow_shell_writable,
        workspace_root: user_root.parent().map(Path::to_owned),
    }
}

fn similar(allow: bool) -> Similar {
    match allow {
        true => Similar::Allow,
        false => Similar::Refuse,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory_governed::SearchRow;

    /// A message is listed on the user's day: said at 08:30 on 3 March in Tokyo, it is of 3
    /// March (in UTC it was listed as 2 March, beside a time reading in Tokyo's days).
    #[test]
    fn a_message_hit_is_dated_on_the_users_day() {
        let at = chrono::DateTime::parse_from_rfc3339("2025-03-02T23:30:00Z")
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or_default();
        let row = SearchRow {
            note_id: None,
            session_id: Some("chat-old".into()),
            event_seq: Some(4),
            text: "The Lisbon trip tickets are booked".into(),
            score: 0.5,
            created_at: at,
            updated_at: at,
            category: None,
            tags: Vec::new(),
        };
        let tokyo = tools::query_time(tools::resolve_timezone(Some("Asia/Tokyo")).ok()).tz;
        let mut out = Vec::new();
        let printed = print_hits(&[row], false, false, &tokyo, &mut out);
        assert!(printed.is_ok(), "{printed:?}");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "0.500  chat-old#4 2025-03-03  The Lisbon trip tickets are booked\n"
        );
    }
}
