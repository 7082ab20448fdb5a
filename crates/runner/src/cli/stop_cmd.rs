//! `runner stop`: signal each selected user's runner (it stops both guests and removes the
//! markers), or — when that runner died — stop the guests it left and clean up after it. In the
//! container tier, every container serving the user's workspace is removed either way; in the
//! process tier, every process left in the user's cgroups is ended (see [`runner::Tracking`]).

use std::time::{Duration, Instant};

use anyhow::Result;
use runner::{GatewayMarker, RunnerConfig, RunnerMarker, Tier, read_json};
use rustix::process::Signal;
use types::WorkspacePaths;

use crate::Global;
use crate::container_guest::remove_workspace_containers;
use crate::out::say;

pub async fn run(global: &Global) -> Result<()> {
    let config = global.runner_config()?;
    let users = config.select(global.user.as_deref())?;
    // No engine is an error only for a user whose runner ran in containers (see `stop_one`):
    // the others stop all the same.
    let docker = if users.iter().any(|u| u.tier == Tier::Container) {
        runner::connect_docker().await.ok()
    } else {
        None
    };
    for user in users {
        let ws = WorkspacePaths::for_user(&config.workspace_root, &user.id);
        let docker = docker.as_ref().filter(|_| user.tier == Tier::Container);
        let line = stop_one(&config, docker, &ws).await?;
        say(format!("{}: {line}", user.id));
    }
    Ok(())
}

/// True when any selected user's agent runs in the background (`start --detach`): `restart`
/// then restarts in the background too.
pub fn any_detached(global: &Global) -> Result<bool> {
    let config = global.runner_config()?;
    let users = config.select(global.user.as_deref())?;
    Ok(users.iter().any(|u| {
        let ws = WorkspacePaths::for_user(&config.workspace_root, &u.id);
        crate::running::running(&ws).is_some_and(|r| r.detached)
    }))
}

/// Stops one user (the workspace `ws`): its runner, any guest or container left, its run files.
/// One line saying what was done. `docker` is given for a user of the container tier; a user
/// whose runner ran in containers before a switch of tier gets its own connection here.
pub async fn stop_one(
    config: &RunnerConfig,
    docker: Option<&bollard::Docker>,
    ws: &WorkspacePaths,
) -> Result<String> {
    // A workspace the shell closed (`chmod 0`) hides the markers from a runner not started as
    // root (root reads them anyway, and its next start heals and records the repairs): its modes
    // are put back first (see `runner::heal`).
    let mut repaired = Vec::new();
    if !runner::runs_as_root() {
        match runner::heal(ws, runner::Occasion::WhileRunning) {
            Ok(repairs) => repaired = repairs,
            Err(e) => tracing::warn!("could not repair the workspace: {e:#}"),
        }
    }
    let own;
    let docker = match docker {
        None if ran_in_containers(ws) => {
            own = runner::connect_docker().await?;
            Some(&own)
        }
        given => given,
    };
    let budget = crate::supervise::stop_budget(config);
    let mut line = stop_user(ws, budget).await?;
    for what in repaired {
        line.push_str(&format!("; repaired: {what}"));
    }
    // Every process the guests left (process tier): a command that left its shell's session.
    if docker.is_none()
        && let Some(cgroup) = runner::Tracking::of(ws).cgroup()
    {
        let n = cgroup.kill(None);
        cgroup.remove();
        if n > 0 {
            line.push_str(&format!("; ended {n} stray processes"));
        }
    }
    if let Some(docker) = docker {
        let left = remove_workspace_containers(docker, &ws.root).await?;
        if !left.is_empty() {
            line.push_str(&format!(
                "; removed containers left behind: {}",
                left.join(", ")
            ));
        }
    }
    // Only now that no guest is left can nothing write these again (an orphaned oxydra-vm
    // refreshes its health file until its container is gone).
    runner::remove_run_files(ws)?;
    Ok(line)
}

/// True when the runner marker in `ws` (live or left by a runner that died) says its guests
/// ran in containers.
pub fn ran_in_containers(ws: &WorkspacePaths) -> bool {
    read_json::<RunnerMarker>(&runner::runner_marker_path(ws))
        .ok()
        .flatten()
        .is_some_and(|m| m.tier == Tier::Container.name())
}

async fn stop_user(ws: &WorkspacePaths, budget: Duration) -> Result<String> {
    let marker = read_json::<RunnerMarker>(&runner::runner_marker_path(ws))
        .ok()
        .flatten();
    let in_containers = ran_in_containers(ws);
    // Every process that may serve this user: the runner, its guests, a gateway it lost track of.
    let mut guests: Vec<(String, u32)> = marker
        .iter()
        .flat_map(|m| m.children.iter().map(|(r, c)| (r.clone(), c.pid)))
        .collect();
    // A container's pids are its own namespace's: never signal them on the host.
    guests.retain(|_| !in_containers);
    if let Some(g) = read_json::<GatewayMarker>(&ws.endpoint())
        .ok()
        .flatten()
        .filter(|_| !in_containers)
    {
        guests.push(("oxydra-vm".into(), g.pid));
    }
    guests.retain(|(role, pid)| runner::looks_like(*pid, role));
    let runner_pid = marker
        .as_ref()
        .map(|m| m.pid)
        .filter(|pid| runner::looks_like(*pid, "runner"));
    let line = match runner_pid {
        Some(pid) => {
            runner::signal(pid, Signal::TERM);
            if wait_gone(&[pid], budget).await {
                format!("stopped (runner pid {pid})")
            } else {
                runner::signal(pid, Signal::KILL);
                format!(
                    "runner pid {pid} did not stop within {} s; killed it",
                    budget.as_secs()
                )
            }
        }
        None if guests.is_empty() => "not running".to_owned(),
        None => "its runner was gone; stopped the guests it left".to_owned(),
    };
    // Guests still alive (the runner was killed, or died earlier): SIGTERM, then SIGKILL.
    guests.retain(|(role, pid)| runner::looks_like(*pid, role));
    for (_, pid) in &guests {
        runner::signal(*pid, Signal::TERM);
    }
    let pids: Vec<u32> = guests.iter().map(|(_, p)| *p).collect();
    if !wait_gone(&pids, Duration::from_secs(5)).await {
        for pid in &pids {
            runner::signal(*pid, Signal::KILL);
        }
        wait_gone(&pids, Duration::from_secs(2)).await;
    }
    Ok(line)
}

/// Waits until none of `pids` is alive; false on timeout.
async fn wait_gone(pids: &[u32], timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while pids.iter().any(|p| runner::is_alive(*p)) {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}
