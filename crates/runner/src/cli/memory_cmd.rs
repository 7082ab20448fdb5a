//! `runner memory ...`: a user's memory from the command line, through the same store API the
//! memory tools use; every write through the governance of the `cli` surface
//! ([`crate::memory_governed`]). The one place every command about one user's memory (`memory`,
//! `usage`, `sessions`, `schedule`, `mcp`, `rekey`) opens it: a link the agent planted in
//! `.oxydra/` is refused first ([`runner::check_db_links`]).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use memory::{MemoryStore, OpenOptions};
use types::{NoteId, UserId};

use crate::Global;
use crate::args::{MemoryAction, MemoryArgs};

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
    if let Some(path) = agent_config.as_deref()
        && crate::agent_copy::is_agents_copy(path, &root, &user)
    {
        config = crate::agent_copy::inert(config, path)?;
    }
    let ws = types::WorkspacePaths::new(root.join(user.as_str()));
    if rekey {
        let place = runner::MemoryPlace::of(&config, &ws);
        runner::check_db_links(&place, &root)?;
        crate::keys_cmd::rekey(&encryption, &root, &user, &ws, &place).await?;
        return Ok(None);
    }
    // The agent may hold an embedded replica at db_path: a second replica on the same file is
    // not safe, so the CLI talks to the primary directly (the agent's replica syncs it).
    config.memory.replica = false;
    if !config.memory.enabled {
        bail!("memory is disabled in the agent config ([memory] enabled = false)");
    }
    runner::check_db_place(&config.memory, &ws)?;
    let place = runner::MemoryPlace::of(&config, &ws);
    // The agent can write .oxydra/: no link it planted there turns this command on another file.
    runner::check_db_links(&place, &root)?;
    let user_root = ws.root.clone();
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
/// last started (`<root>/<user>/.oxydra/agent.toml`; the agent can write it, so only what
/// [`crate::agent_copy::inert`] keeps of it is followed). With neither, the defaults apply, and
/// the log says so (`-v`).
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
    let result = crate::memory_act::act(args.action, &user, &config, &store, &user_root).await;
    // The database threads close their connections before the process exits.
    store.close().await;
    result
}

pub(crate) fn parse_note_id(raw: &str) -> Result<NoteId> {
    NoteId::parse(raw).with_context(|| format!("invalid note id {raw:?}"))
}

pub(crate) fn print_json(out: &mut impl Write, value: &impl serde::Serialize) -> Result<()> {
    crate::out::write_json(out, value)
}

/// Progress on stderr, at most once per percent.
pub(crate) fn progress(what: &'static str) -> impl FnMut(usize, usize) + Send + 'static {
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
