//! `runner start`: check, provision and claim each selected user's workspace, then supervise their
//! guests in the foreground (Ctrl-C or SIGTERM stops them) or, with `--detach`, in one background
//! runner per user, returning once every agent is ready.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use runner::{
    GatewayMarker, RunnerConfig, RunnerMarker, Tier, UserEntry, guest_binary, provision, read_json,
};
use rustix::process::Signal;
use tokio::task::JoinSet;
use types::{AgentConfig, CancellationToken, DbPath, WorkspacePaths};

use crate::Global;
use crate::container_guest::remove_workspace_containers;
use crate::out::say;
use crate::supervise::{self, Plan};

pub async fn run(global: &Global, detach: bool, supervisor: bool) -> Result<()> {
    let config = global.launchable_config()?;
    let users = config.select(global.user.as_deref())?;
    let container = config.tier == Tier::Container;
    let (docker, shell_bin, vm_bin, unconfined) = if container {
        let docker = runner::connect_docker().await?;
        runner::images::require_images(&docker, &config.container).await?;
        (Some(docker), PathBuf::new(), PathBuf::new(), false)
    } else {
        let unconfined = !sandbox::landlock_available();
        if unconfined {
            tracing::error!(
                "this kernel has no Landlock: with --insecure the agents and shells run UNCONFINED \
                 (each can read every file this uid can, other users' workspaces included)"
            );
            say("WARNING: Landlock is not available on this kernel; guests run unconfined");
        }
        (
            None,
            guest_binary("shell-vm")?,
            guest_binary("oxydra-vm")?,
            unconfined,
        )
    };
    let mut plans = Vec::new();
    for user in users {
        let ws = provision(&config.workspace_root, &user.id)?;
        let agent = preflight(&user, &ws, config.tier).await?;
        plans.push(Plan {
            config: config.clone(),
            user,
            ws,
            shell_bin: shell_bin.clone(),
            vm_bin: vm_bin.clone(),
            unconfined,
            agent,
            docker: docker.clone(),
        });
    }
    for plan in &plans {
        refuse_if_running(plan)?;
        if let Some(docker) = &plan.docker {
            for name in remove_workspace_containers(docker, &plan.ws.root).await? {
                tracing::warn!(user = %plan.user.id, "removed the stale container {name}");
            }
        }
    }
    if detach {
        return detach_all(global, &config, &plans).await;
    }
    if supervisor {
        // The background supervisor of `--detach`: its own session, away from the terminal.
        if let Err(e) = rustix::process::setsid() {
            tracing::debug!(error = %e, "setsid");
        }
    }
    foreground(plans).await
}

/// Supervises every plan in this process until SIGINT or SIGTERM.
async fn foreground(plans: Vec<Plan>) -> Result<()> {
    let stop = CancellationToken::default();
    let mut tasks = JoinSet::new();
    for plan in plans {
        let stop = stop.clone();
        let user = plan.user.id.clone();
        tasks.spawn(async move { (user, supervise::run(plan, stop).await) });
    }
    let signals = stop.clone();
    let watcher = tokio::spawn(async move {
        wait_for_signal().await;
        signals.cancel();
    });
    let mut errors = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((_, Ok(()))) => {}
            Ok((user, Err(e))) => {
                tracing::error!(%user, "{e:#}");
                errors.push(format!("{e:#}"));
                // One user failing stops the others: the operator sees one clear state.
                stop.cancel();
            }
            Err(e) => errors.push(format!("a supervisor task failed: {e}")),
        }
    }
    watcher.abort();
    match errors.len() {
        0 => {
            say("stopped");
            Ok(())
        }
        _ => bail!(errors.join("; ")),
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot listen for signals");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
        _ = int.recv() => tracing::info!("SIGINT: stopping"),
    }
}

/// Refuses a user another runner already serves; clears what a dead one left behind (stopping
/// guests it orphaned).
fn refuse_if_running(plan: &Plan) -> Result<()> {
    let ws = &plan.ws;
    let user = &plan.user.id;
    if let Some(marker) = read_json::<RunnerMarker>(&runner::runner_marker_path(ws))
        .ok()
        .flatten()
    {
        if marker.pid != std::process::id() && runner::looks_like(marker.pid, "runner") {
            let url = read_json::<GatewayMarker>(&ws.endpoint())
                .ok()
                .flatten()
                .map_or_else(|| "starting".to_owned(), |m| m.url);
            bail!(
                "{user} is already running (runner pid {}, gateway {url}, workspace {}); stop it \
                 with `runner --user {user} stop`",
                marker.pid,
                plan.ws.root.display()
            );
        }
        for (role, child) in &marker.children {
            if runner::looks_like(child.pid, role) {
                tracing::warn!(%user, %role, pid = child.pid, "stopping a guest left by a runner that died");
                runner::signal(child.pid, Signal::KILL);
            }
        }
    }
    for file in runner::run_files(ws) {
        runner::remove_if_exists(&file)?;
    }
    Ok(())
}

/// Checks the user's agent.toml and provider key before anything starts (so a typo is one clear
/// error, not a crash loop), and moves a legacy `./.oxydra/memory.db` into the workspace once.
/// Returns the user's agent settings.
async fn preflight(user: &UserEntry, ws: &WorkspacePaths, tier: Tier) -> Result<AgentConfig> {
    let where_ = user.agent_config.as_ref().map_or_else(
        || "the defaults (no agent.toml)".to_owned(),
        |p| p.display().to_string(),
    );
    let agent = runner::load_agent_config(user.agent_config.as_deref())?;
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
        memory::MemoryStore::open_with(&agent.memory, &ws.root, options)
            .await
            .context("cannot move the legacy memory database")?;
    }
    if tier == Tier::Container && agent.memory.remote_url.is_none() {
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
        // Phase D advisory: where a local database lives, and what to use across hosts.
        tracing::warn!(
            user = %user.id,
            "memory: local database at {} on the host (the container's .oxydra/ is that host \
             directory, so notes persist across container recreation); for several hosts or \
             replicated agents use a remote libSQL server ([memory] remote_url)",
            db.display()
        );
    }
    Ok(agent)
}

/// Starts one background runner per user and waits until each serves.
async fn detach_all(global: &Global, config: &RunnerConfig, plans: &[Plan]) -> Result<()> {
    let exe = std::env::current_exe().context("cannot find the runner executable")?;
    for plan in plans {
        let user = &plan.user.id;
        let log = crate::guest::log_path(&plan.ws, "runner");
        let (stdout, stderr) = crate::guest::open_log(&log)?;
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg("--config")
            .arg(&config.path)
            .arg("--user")
            .arg(user.as_str());
        if config.tier == Tier::Process {
            cmd.arg("--insecure");
        }
        if global.verbose {
            cmd.arg("--verbose");
        }
        let mut child = cmd
            .args(["start", "--supervisor"])
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("cannot start a background runner for {user}"))?;
        let pid = child.id();
        let budget = config.supervision.ready_timeout * 2 + Duration::from_secs(5);
        let url = wait_detached(&plan.ws, pid, budget, &mut child, &log).await?;
        say(format!(
            "{user}: running in the background (runner pid {pid}) at {url}; token in {}; stop \
             with `runner --user {user} stop`",
            plan.ws
                .internal()
                .join(gateway::GatewayToken::FILE_NAME)
                .display()
        ));
    }
    Ok(())
}

async fn wait_detached(
    ws: &WorkspacePaths,
    pid: u32,
    budget: Duration,
    child: &mut std::process::Child,
    log: &Path,
) -> Result<String> {
    let deadline = Instant::now() + budget;
    let mut poll = crate::out::Poll::new();
    loop {
        if let Some(status) = child.try_wait()? {
            bail!(
                "the background runner exited ({}); last lines of {}:\n{}",
                crate::guest::describe(status),
                log.display(),
                crate::out::tail(log, 15)
            );
        }
        let runner_marker = read_json::<RunnerMarker>(&runner::runner_marker_path(ws))
            .ok()
            .flatten();
        let gateway = read_json::<GatewayMarker>(&ws.endpoint()).ok().flatten();
        // A container's gateway pid is its own; its marker is written only once it serves.
        if let (Some(r), Some(g)) = (runner_marker, gateway)
            && r.pid == pid
            && r.children
                .get("oxydra-vm")
                .is_some_and(|c| c.pid == g.pid || c.container.is_some())
        {
            return Ok(g.url);
        }
        if Instant::now() >= deadline {
            bail!(
                "the background runner was not ready within {} s; see {}",
                budget.as_secs(),
                log.display()
            );
        }
        poll.pause().await;
    }
}
