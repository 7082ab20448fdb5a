//! `runner start`: check, provision and claim each selected user's workspace, then supervise their
//! guests in the foreground (Ctrl-C or SIGTERM stops them) or, with `--detach`, in one background
//! runner per user (see `detach`), returning once every agent is ready.
//!
//! A user whose agent already runs is restarted when its settings changed since it started (see
//! `running`), skipped when every user was asked for, and refused when named with `--user`. A
//! signal before every agent is ready stops what this start began and exits with status 130.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use runner::{RunnerMarker, Tier, UserEntry, guest_binary, provision, read_json};
use rustix::process::Signal;
use tokio::task::JoinSet;
use types::{AgentConfig, CancellationToken, DbPath, WorkspacePaths};

use crate::Global;
use crate::container_guest::remove_workspace_containers;
use crate::interrupt::{Interrupt, Interrupted};
use crate::out::say;
use crate::running::{config_digest, running};
use crate::supervise::{self, Plan};

/// Where the agents run once started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// In this process, until Ctrl-C.
    Foreground,
    /// One background runner per user (`--detach`).
    Detached,
    /// This process is the background runner a `--detach` started.
    Supervisor,
}

pub async fn run(global: &Global, mode: Mode) -> Result<()> {
    let (config, users) = global.launchable_users()?;
    let docker = if users.iter().any(|u| u.tier == Tier::Container) {
        let docker = runner::connect_docker().await?;
        runner::images::require_images(&docker, &config.container).await?;
        Some(docker)
    } else {
        None
    };
    let process = users.iter().any(|u| u.tier == Tier::Process);
    let (shell_bin, vm_bin, unconfined) = if process {
        let unconfined = !sandbox::landlock_available();
        if unconfined {
            tracing::error!(
                "this kernel has no Landlock: with --insecure the agents and shells run UNCONFINED \
                 (each can read every file this uid can, other users' workspaces included)"
            );
            say("WARNING: Landlock is not available on this kernel; guests run unconfined");
        }
        (
            guest_binary("shell-vm")?,
            guest_binary("oxydra-vm")?,
            unconfined,
        )
    } else {
        (PathBuf::new(), PathBuf::new(), false)
    };
    if !runner::runs_as_root() && process && mode != Mode::Supervisor {
        say(format!("note: {}", runner::SHARED_UID_NOTICE));
    }
    let rules = runner::ReadPathRules {
        workspace_root: config.workspace_root.clone(),
        runner_state: runner_state(global),
    };
    let mut plans = Vec::new();
    for user in users {
        let ws = provision_healed(&config.workspace_root, &user.id)?;
        let agent = preflight(&user, &ws).await?;
        // A user forgotten before starts afresh: their memory commands work again.
        runner::clear_forgotten(&config.workspace_root, &user.id)?;
        let mcp = runner::plan_mcp(&agent, user.tier, &rules)
            .with_context(|| format!("{}: cannot confine its MCP servers", user.id))?;
        // An MCP server's own container runs our shell-vm from the host, mounted read-only.
        let shell_bin = match &docker {
            Some(docker) if !mcp.containers.is_empty() => {
                runner::images::require_mcp_images(docker, &mcp).await?;
                guest_binary("shell-vm")?
            }
            _ => shell_bin.clone(),
        };
        // Before the workspace is handed to the guest uid: an unencrypted file is encrypted now.
        let place = runner::MemoryPlace::of(&agent, &ws);
        let memory_key = runner::key_for_agent(
            &config.memory_encryption,
            &config.workspace_root,
            &user.id,
            &place,
        )
        .await
        .with_context(|| format!("{}: cannot prepare the memory encryption key", user.id))?;
        let separation =
            runner::separation(&config.workspace_root, config.guest_uid_base, &user.id)?;
        let digest = config_digest(&config, &user);
        let mut user = user;
        let container = user.tier == Tier::Container;
        if let Some(ids) = separation.identity() {
            runner::check_reachable(&config.workspace_root)?;
            // Ownership is (re)applied with the rest of the workspace before each launch (see
            // `runner::heal`, called by the supervisor).
            // The guest reads its own copy: the original may be readable by the runner only.
            if !container && let Some(original) = &user.agent_config {
                user.agent_config = Some(runner::agent_config_copy(&ws, original, ids.agent)?);
            }
        }
        plans.push(Plan {
            separation,
            config_digest: digest,
            config: config.clone(),
            user,
            ws,
            shell_bin,
            vm_bin: vm_bin.clone(),
            mcp,
            unconfined,
            agent,
            docker: docker.clone().filter(|_| container),
            memory_key,
        });
    }
    // From here on a signal stops what this start began (nothing is launched before this line).
    let mut interrupt = Interrupt::listen()?;
    let named = global.user.is_some() || mode == Mode::Supervisor;
    let mut to_start = Vec::new();
    for plan in plans {
        if claim(&plan, named).await? {
            to_start.push(plan);
        }
    }
    if to_start.is_empty() {
        return Ok(());
    }
    if let Some(sig) = interrupt.arrived() {
        return Err(Interrupted(format!(
            "{sig} before anything started; nothing was started"
        ))
        .into());
    }
    match mode {
        Mode::Detached => crate::detach::detach_all(global, &config, &to_start, interrupt).await,
        Mode::Supervisor => {
            // The background supervisor of `--detach`: its own session, away from the terminal.
            if let Err(e) = rustix::process::setsid() {
                tracing::debug!(error = %e, "setsid");
            }
            // Its stdout is runner.log: every line it says carries the time.
            crate::out::stamp_lines();
            foreground(to_start, interrupt).await
        }
        Mode::Foreground => foreground(to_start, interrupt).await,
    }
}

/// Provisions `user`'s workspace; when that fails (a runner not started as root cannot pass a
/// workspace root the shell closed with `chmod 0`), heals it (see [`runner::heal`]; the
/// supervisor heals again, ownership included, before it launches anything) and tries once more.
fn provision_healed(root: &std::path::Path, user: &types::UserId) -> Result<WorkspacePaths> {
    let first = match provision(root, user) {
        Ok(ws) => return Ok(ws),
        Err(e) => e,
    };
    let ws = WorkspacePaths::for_user(root, user);
    match runner::heal(&ws, runner::Occasion::WhileRunning) {
        Ok(repairs) if !repairs.is_empty() => {
            for what in repairs {
                tracing::warn!(%user, "repaired: {what}");
                say(format!("{user}: repaired: {what}"));
            }
            Ok(provision(root, user)?)
        }
        _ => Err(first.into()),
    }
}

/// Makes the user's workspace this runner's to start: true when it should be started. A live
/// runner started with other settings is stopped (the agent is restarted with the new ones); one
/// with the same settings is refused when the user was `named`, else skipped. What a dead runner
/// left behind is cleared (stopping guests it orphaned).
async fn claim(plan: &Plan, named: bool) -> Result<bool> {
    let ws = &plan.ws;
    let user = &plan.user.id;
    if let Some(live) = running(ws) {
        let url = live.url.clone().unwrap_or_else(|| "starting".to_owned());
        if live.is_stale(&plan.config_digest) {
            say(format!(
                "{user}: its settings changed since its agent started (runner pid {}); \
                 restarting it",
                live.pid
            ));
            let line = crate::stop_cmd::stop_one(&plan.config, plan.docker.as_ref(), ws).await?;
            tracing::info!(%user, "{line}");
        } else if named {
            bail!(
                "{user} is already running (runner pid {}, gateway {url}, workspace {}); stop it \
                 with `runner --user {user} stop`, or `runner --user {user} restart` to restart it",
                live.pid,
                ws.root.display()
            );
        } else {
            say(format!(
                "{user}: already running (runner pid {}, gateway {url})",
                live.pid
            ));
            return Ok(false);
        }
    }
    // Containers a runner that died left, also when the user has since moved to the process tier.
    let docker = match &plan.docker {
        None if crate::stop_cmd::ran_in_containers(ws) => Some(runner::connect_docker().await?),
        given => given.clone(),
    };
    if let Some(marker) = read_json::<RunnerMarker>(&runner::runner_marker_path(ws))
        .ok()
        .flatten()
    {
        for (role, child) in &marker.children {
            if runner::looks_like(child.pid, role) {
                tracing::warn!(%user, %role, pid = child.pid, "stopping a guest left by a runner that died");
                runner::signal(child.pid, Signal::KILL);
            }
        }
    }
    // Whatever is left in the user's cgroups (commands that escaped a shell whose runner died)
    // could keep the agent from starting: it ends here.
    if plan.docker.is_none()
        && let Some(cgroup) = runner::Tracking::of(ws).cgroup()
    {
        let n = cgroup.kill(None);
        if n > 0 {
            tracing::warn!(%user, "ended {n} processes left in the user's cgroup");
        }
    }
    runner::remove_run_files(ws)?;
    if let Some(docker) = &docker {
        for name in remove_workspace_containers(docker, &ws.root).await? {
            tracing::warn!(%user, "removed the stale container {name}");
        }
    }
    Ok(true)
}

/// Supervises every plan in this process until SIGINT or SIGTERM (or one user fails).
async fn foreground(plans: Vec<Plan>, mut interrupt: Interrupt) -> Result<()> {
    let stop = CancellationToken::default();
    let mut tasks = JoinSet::new();
    for plan in &plans {
        let (stop, plan) = (stop.clone(), plan.clone());
        let user = plan.user.id.clone();
        tasks.spawn(async move { (user, supervise::run(plan, stop).await) });
    }
    let mut errors = Vec::new();
    let mut not_ready: Vec<String> = Vec::new();
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                None => break,
                Some(Ok((_, Ok(())))) => {}
                Some(Ok((user, Err(e)))) => {
                    tracing::error!(%user, "{e:#}");
                    errors.push(format!("{e:#}"));
                    // One user failing stops the others: the operator sees one clear state.
                    stop.cancel();
                }
                Some(Err(e)) => errors.push(format!("a supervisor task failed: {e}")),
            },
            sig = interrupt.recv(), if !stop.is_cancelled() => {
                tracing::info!("{sig}: stopping");
                not_ready = plans
                    .iter()
                    .filter(|p| !is_ready(&p.ws))
                    .map(|p| p.user.id.to_string())
                    .collect();
                stop.cancel();
            }
        }
    }
    // A guest created while the supervisor was being stopped is removed all the same.
    for plan in &plans {
        if let Some(docker) = &plan.docker {
            match remove_workspace_containers(docker, &plan.ws.root).await {
                Ok(left) if !left.is_empty() => {
                    tracing::warn!(user = %plan.user.id, "removed containers left behind: {}", left.join(", "));
                }
                Ok(_) => {}
                Err(e) => errors.push(format!("{e:#}")),
            }
        }
    }
    if !errors.is_empty() {
        bail!(errors.join("; "));
    }
    if !not_ready.is_empty() {
        return Err(Interrupted(format!(
            "interrupted before {} was ready; stopped what had started",
            not_ready.join(", ")
        ))
        .into());
    }
    say("stopped");
    Ok(())
}

/// True once the user's supervisor recorded running guests (it does so when both serve).
fn is_ready(ws: &WorkspacePaths) -> bool {
    read_json::<RunnerMarker>(&runner::runner_marker_path(ws))
        .ok()
        .flatten()
        .is_some_and(|m| m.pid == std::process::id() && !m.children.is_empty())
}

/// The loud warning for a gateway set to listen beyond this machine without TLS, if it is.
pub fn exposure(agent: &AgentConfig) -> Option<String> {
    let bind = agent
        .gateway
        .bind
        .unwrap_or(gateway::GatewayConfig::default().bind);
    gateway::exposure_warning(bind, agent.gateway.tls_cert.is_some())
}

/// The runner's own state, which no MCP server may read: its configuration's directory and the
/// guest-id record's.
fn runner_state(global: &Global) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = runner::RunnerConfig::locate(global.config.as_deref())
        .ok()
        .and_then(|p| std::path::absolute(p).ok())
        .and_then(|p| p.parent().map(PathBuf::from))
        .into_iter()
        .collect();
    if let Some(ids) = std::path::Path::new(runner::HOST_GUEST_IDS).parent() {
        dirs.push(ids.to_owned());
    }
    dirs
}

/// Checks the user's agent.toml, its TLS certificate and key, and the provider key before anything starts (so a typo is one clear
/// error, not a crash loop), and moves a legacy `./.oxydra/memory.db` into the workspace once.
/// Returns the user's agent settings.
async fn preflight(user: &UserEntry, ws: &WorkspacePaths) -> Result<AgentConfig> {
    let where_ = user.agent_config.as_ref().map_or_else(
        || "the defaults (no agent.toml)".to_owned(),
        |p| p.display().to_string(),
    );
    let agent = runner::load_agent_config(user.agent_config.as_deref())?;
    runner::TlsPem::read(&agent.gateway)
        .with_context(|| format!("{}: the gateway's TLS (settings from {where_})", user.id))?;
    if let Some(warning) = exposure(&agent) {
        say(format!("{}: WARNING: {warning}", user.id));
    }
    if let Some(var) = &agent.provider.api_key_env
        && std::env::var(var).map_or(true, |v| v.trim().is_empty())
    {
        bail!(
            "{}: provider.api_key_env names {var}, which is not set; export {var}=... before \
             starting (or set api_key_env = \"\" in [provider] for a local server without auth) — \
             settings from {where_}",
            user.id
        );
    }
    if let Some(model) = &user.model
        && model != types::DEFAULT_MODEL_NAME
        && !agent.models.contains_key(model)
    {
        bail!(
            "{}: runner.toml starts this user's sessions on the model {model:?}, which their \
             agent.toml does not offer: add [models.{model}] there, or remove model — settings \
             from {where_}",
            user.id
        );
    }
    let legacy = PathBuf::from(".oxydra/memory.db");
    let auto = agent.memory.db_path == DbPath::Auto;
    if auto
        && agent.memory.remote_url.is_none()
        && legacy.is_file()
        && !ws.default_memory_db().exists()
    {
        // oxydra-vm is sandboxed away from this directory: the runner moves the file.
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let options = memory::OpenOptions {
            legacy_dir: memory::LegacyDir::Dir(cwd),
            ..memory::OpenOptions::default()
        };
        memory::MemoryStore::open(
            memory::Target::Config {
                config: &agent.memory,
                user_root: &ws.root,
            },
            options,
        )
        .await
        .context("cannot move the legacy memory database")?;
    }
    if user.tier == Tier::Container && agent.memory.remote_url.is_none() {
        let db = agent.memory.db_path.resolve(&ws.root);
        if !db.starts_with(ws.internal()) {
            bail!(
                "{}: memory.db_path {} is not inside {}, the only place the oxydra-vm container \
                 keeps its database; use db_path = \"auto\" (settings from {where_})",
                user.id,
                db.display(),
                ws.internal().display()
            );
        }
        // Phase D advisory, one calm line: nothing is wrong with a local database.
        tracing::info!(
            user = %user.id,
            db = %db.display(),
            "memory: local database on this host (for several hosts: [memory] remote_url)"
        );
    }
    Ok(agent)
}
