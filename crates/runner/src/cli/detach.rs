//! `runner start --detach`: one background runner (`start --supervisor`) per user, waiting until
//! each agent serves. A signal while waiting stops every background runner this command started
//! (and what they started) before it exits; one that lands as the last agent gets ready leaves
//! them running, says so, and still exits with status 130.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use runner::{GatewayMarker, RunnerConfig, RunnerMarker, Tier, read_json};
use rustix::process::Signal;
use types::WorkspacePaths;

use crate::Global;
use crate::interrupt::{Interrupt, Interrupted};
use crate::out::say;
use crate::supervise::Plan;

/// Starts one background runner per plan and waits until each serves.
pub async fn detach_all(
    global: &Global,
    config: &RunnerConfig,
    plans: &[Plan],
    mut interrupt: Interrupt,
) -> Result<()> {
    let exe = std::env::current_exe().context("cannot find the runner executable")?;
    let mut started: Vec<(&Plan, std::process::Child)> = Vec::new();
    for plan in plans {
        let user = &plan.user.id;
        let log = crate::guest::log_path(&plan.ws, "runner");
        let (stdout, stderr) = crate::guest::open_log(&plan.ws, "runner")?;
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg("--config")
            .arg(&config.path)
            .arg("--user")
            .arg(user.as_str());
        if plan.user.tier == Tier::Process {
            cmd.arg("--insecure");
        }
        if global.verbose {
            cmd.arg("--verbose");
        }
        let child = cmd
            .args(["start", "--supervisor"])
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("cannot start a background runner for {user}"))?;
        let pid = child.id();
        started.push((plan, child));
        let budget = config.supervision.ready_timeout * 2 + Duration::from_secs(5);
        let ready = tokio::select! {
            r = wait_detached(&plan.ws, pid, budget, &mut started, &log) => r?,
            sig = interrupt.recv() => {
                let users = undo(config, &mut started).await;
                return Err(Interrupted(format!(
                    "{sig} before {user} was ready; stopped the background runners this start \
                     began ({users})"
                ))
                .into());
            }
        };
        say(format!(
            "{user}: running in the background (runner pid {pid}) at {ready}; token in {}; stop \
             with `runner --user {user} stop`",
            plan.ws
                .internal()
                .join(gateway::GatewayToken::FILE_NAME)
                .display()
        ));
    }
    // A signal that landed as the last agent got ready (the wait saw it ready first): the agents
    // stay, each said above how to stop it, and the command still ends as interrupted, so a
    // script that runs it (`scripts/run.sh`) does not go on as if nobody had pressed Ctrl+C.
    if let Some(sig) = interrupt.arrived() {
        let users: Vec<&str> = plans.iter().map(|p| p.user.id.as_str()).collect();
        return Err(Interrupted(format!(
            "{sig} after {} became ready; left running in the background",
            users.join(", ")
        ))
        .into());
    }
    Ok(())
}

/// Stops the background runners in `started` (SIGTERM: each stops its guests) and whatever they
/// left; the users' names.
async fn undo(config: &RunnerConfig, started: &mut [(&Plan, std::process::Child)]) -> String {
    let budget = crate::supervise::stop_budget(config);
    for (_, child) in started.iter() {
        runner::signal(child.id(), Signal::TERM);
    }
    let deadline = Instant::now() + budget;
    let mut names = Vec::new();
    for (plan, child) in started.iter_mut() {
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
            let _ = child.wait();
        }
        // A runner killed before it could stop its guests leaves them: stop them here.
        if let Err(e) = crate::stop_cmd::stop_one(config, plan.docker.as_ref(), &plan.ws).await {
            tracing::warn!(user = %plan.user.id, "{e:#}");
        }
        names.push(plan.user.id.to_string());
    }
    names.join(", ")
}

/// Waits until the background runner `pid` (the last of `started`) serves; its gateway URL.
async fn wait_detached(
    ws: &WorkspacePaths,
    pid: u32,
    budget: Duration,
    started: &mut [(&Plan, std::process::Child)],
    log: &Path,
) -> Result<String> {
    let deadline = Instant::now() + budget;
    let mut poll = crate::out::Poll::new();
    loop {
        if let Some((_, child)) = started.last_mut()
            && let Some(status) = child.try_wait()?
        {
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
