//! `runner sessions list|export --user U`: the user's conversations, and one of them written out
//! as Markdown or JSON Lines (rendered by `types::export`, as the terminal client's `/export`
//! does). `--out FILE` creates a new file (never replaces one, never follows a link; a place the
//! user's shell can write is refused unless `--allow-shell-writable`); without it, stdout.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use types::export::{Transcript, to_jsonl, to_markdown};
use types::{HistoryEvent, SessionId};

use crate::Global;
use crate::args::TargetArgs;
use crate::memory_cmd::{UserStore, give_back, open_user_store};

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// The workspace root holding one directory per user (default: runner.toml's workspace_root).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// agent.toml to read [memory] from (default: the user's).
    #[arg(long = "agent-config")]
    pub agent_config: Option<PathBuf>,
    #[command(subcommand)]
    pub action: SessionsAction,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// The user's conversations, most recently active first: id, last active, messages, title.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write one conversation as Markdown (default) or JSON Lines (system prompts left out).
    Export {
        /// The session id (from `runner sessions list`).
        #[arg(long)]
        session: String,
        #[arg(long, value_enum, default_value_t = Format::Md)]
        format: Format,
        /// Write to this new file instead of stdout (an existing file is never replaced).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        target: TargetArgs,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Md,
    Jsonl,
}

/// Messages read per page of history.
const PAGE: usize = 500;

pub async fn run(args: SessionsArgs, global: &Global) -> Result<()> {
    let root = args.root.clone();
    let result = match open_user_store(global, args.root, args.agent_config).await {
        Ok(us) => {
            let result = act(args.action, &us).await;
            us.store.close().await;
            result
        }
        Err(e) => Err(e),
    };
    give_back(root, global);
    result
}

async fn act(action: SessionsAction, us: &UserStore) -> Result<()> {
    let sessions = us.store.sessions();
    match action {
        SessionsAction::List { json } => {
            let mut list = sessions.list_sessions(&us.user).await?;
            list.retain(|s| s.kind == memory::SessionKind::Conversation);
            let mut out = std::io::stdout().lock();
            if json {
                return crate::out::write_json(&mut out, &list);
            }
            if list.is_empty() {
                writeln!(out, "{} has no conversations yet", us.user)?;
            }
            for s in &list {
                let title = s.title.as_deref().unwrap_or("untitled");
                writeln!(
                    out,
                    "{}  {}  {:>4} messages  {}",
                    s.session_id,
                    s.last_active_at.format("%Y-%m-%d %H:%M"),
                    s.events,
                    crate::out::field(title, false)
                )?;
            }
            Ok(())
        }
        SessionsAction::Export {
            session,
            format,
            out,
            target,
        } => {
            let id = SessionId::parse(&session)
                .with_context(|| format!("invalid --session {session:?}"))?;
            // Another user's session, or the memory namespace, is "no such conversation".
            let info = match sessions.session_info(&id).await {
                Ok(info)
                    if info.user_id == us.user
                        && info.kind == memory::SessionKind::Conversation =>
                {
                    info
                }
                Ok(_) | Err(memory::MemoryError::SessionNotFound(_)) => bail!(
                    "{} has no conversation {id}; `runner --user {} sessions list` shows theirs",
                    us.user,
                    us.user
                ),
                Err(e) => return Err(e.into()),
            };
            let events = all_events(us, &id).await?;
            let transcript = Transcript {
                session_id: &id,
                title: info.title.as_deref(),
                events: &events,
            };
            let text = match format {
                Format::Md => to_markdown(&transcript),
                Format::Jsonl => to_jsonl(&transcript),
            };
            write_out(out, target, &us.user_root, &text)
        }
    }
}

/// Every message of `session`, oldest first, as the gateway's history shows them.
async fn all_events(us: &UserStore, session: &SessionId) -> Result<Vec<HistoryEvent>> {
    let mut events = Vec::new();
    let mut before = None;
    loop {
        let page = us.store.sessions().history(session, before, PAGE).await?;
        let Some(first) = page.first() else { break };
        before = Some(first.seq);
        let full = page.len() == PAGE;
        let mut older: Vec<HistoryEvent> = page
            .into_iter()
            .map(|e| HistoryEvent {
                number: e.seq,
                message: e.message,
                created_at: e
                    .created_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            })
            .collect();
        older.append(&mut events);
        events = older;
        if !full {
            break;
        }
    }
    Ok(events)
}

/// `text` on stdout, or in the new file `out` (see the module doc).
fn write_out(
    out: Option<PathBuf>,
    target: TargetArgs,
    user_root: &std::path::Path,
    text: &str,
) -> Result<()> {
    let Some(path) = out else {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        return Ok(());
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("--out {} is not a file name", path.display()))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let policy = runner::TargetPolicy {
        allow_shell_writable: target.allow_shell_writable,
        workspace_root: user_root.parent().map(std::path::Path::to_owned),
    };
    let dir = runner::open_operator_dir(parent, runner::Want::Existing, &policy)?;
    let mut file = dir
        .create_new(name, 0o600)
        .with_context(|| format!("--out {} must be a new file", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    crate::out::say(format!("wrote {}", path.display()));
    Ok(())
}
