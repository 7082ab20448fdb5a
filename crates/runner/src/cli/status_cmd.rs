//! `runner status`: per user and role — pid (or container and its state), uptime, restarts,
//! endpoint, health; what the runner repaired in the workspace before a (re)start; and, in the
//! process tier, stray processes: those in the user's cgroups that no running guest started
//! (a command that left its shell's session, or anything a runner that died left).

use anyhow::Result;
use runner::{GatewayMarker, Health, RunnerMarker, read_json};
use std::collections::BTreeMap;

use bollard::query_parameters::InspectContainerOptions;
use runner::Tier;
use serde_json::json;
use types::WorkspacePaths;

use crate::Global;
use crate::out::{age, duration, say};

pub async fn run(global: &Global, as_json: bool) -> Result<()> {
    let config = global.runner_config()?;
    let users = config.select(global.user.as_deref())?;
    // What runs is read from each workspace's marker, not from the config: a user whose tier was
    // switched since their agent started still shows their containers.
    let docker = if users.iter().any(|u| {
        u.tier == Tier::Container
            || crate::stop_cmd::ran_in_containers(&WorkspacePaths::for_user(
                &config.workspace_root,
                &u.id,
            ))
    }) {
        runner::connect_docker().await.ok()
    } else {
        None
    };
    let mut rows = Vec::new();
    for user in users {
        let ws = WorkspacePaths::for_user(&config.workspace_root, &user.id);
        let status = UserStatus::read(&user, ws, docker.as_ref()).await?;
        match (as_json, status.marker.as_ref()) {
            (true, _) => rows.push(status.json(&user)),
            (false, None) => say_stopped(&user, &status),
            (false, Some(m)) => say_running(&user, &status, m),
        }
    }
    if as_json {
        say(types::terminal::escape_json(&serde_json::to_string_pretty(
            &rows,
        )?));
    }
    Ok(())
}

/// What `status` knows of one user's agent.
struct UserStatus {
    ws: WorkspacePaths,
    marker: Option<RunnerMarker>,
    gateway: Option<GatewayMarker>,
    health: Option<Health>,
    /// Each container's state, by role.
    states: BTreeMap<String, String>,
    /// Containers of this workspace with no live runner: left by one that was killed.
    orphans: Vec<String>,
    /// The tier the agent runs in (its marker), else the one it will start in.
    tier: Tier,
    tracking: runner::Tracking,
    strays: Vec<Stray>,
}

impl UserStatus {
    async fn read(
        user: &runner::UserEntry,
        ws: WorkspacePaths,
        docker: Option<&bollard::Docker>,
    ) -> Result<Self> {
        let marker = read_json::<RunnerMarker>(&runner::runner_marker_path(&ws))?
            .filter(|m| runner::looks_like(m.pid, "runner"));
        let in_containers = marker
            .as_ref()
            .is_some_and(|m| m.tier == Tier::Container.name());
        // A container's gateway pid is its own namespace's; its marker goes when it stops.
        let gateway = read_json::<GatewayMarker>(&ws.endpoint())?
            .filter(|g| in_containers || runner::is_alive(g.pid));
        let health = read_json::<Health>(&runner::health_path(&ws))?;
        let mut states = BTreeMap::new();
        if let (Some(docker), Some(m)) = (docker, &marker) {
            for (role, c) in &m.children {
                if let Some(name) = &c.container {
                    states.insert(role.clone(), container_state(docker, name).await);
                }
            }
        }
        let orphans = match (docker, &marker) {
            (Some(docker), None) => orphaned(docker, &ws).await,
            _ => Vec::new(),
        };
        let tier = match &marker {
            Some(_) if in_containers => Tier::Container,
            Some(_) => Tier::Process,
            None => user.tier,
        };
        let tracking = match tier {
            Tier::Process => runner::Tracking::of(&ws),
            Tier::Container => runner::Tracking::Untracked("container tier"),
        };
        let guests: Vec<u32> = marker
            .iter()
            .flat_map(|m| m.children.values().map(|c| c.pid))
            .collect();
        let strays = tracking
            .cgroup()
            .map(|c| strays(c, &guests))
            .unwrap_or_default();
        Ok(UserStatus {
            ws,
            marker,
            gateway,
            health,
            states,
            orphans,
            tier,
            tracking,
            strays,
        })
    }

    fn json(&self, user: &runner::UserEntry) -> serde_json::Value {
        json!({
            "user": user.id,
            "tier": self.tier.name(),
            "running": self.marker.is_some(),
            "runner": self.marker,
            "containers": self.states,
            "gateway": self.gateway,
            "health": self.health,
            "left_behind": self.orphans,
            "strays": self.strays,
        })
    }
}

/// A stopped agent, and what it left behind.
fn say_stopped(user: &runner::UserEntry, status: &UserStatus) {
    if !status.strays.is_empty() {
        say(format!(
            "{id}  stopped, but {} stray processes are left: {}; `runner --user {id} \
             stop` ends them (`start` too)",
            status.strays.len(),
            shown(&status.strays),
            id = user.id
        ));
    } else if status.orphans.is_empty() {
        say(format!("{}  stopped", user.id));
    } else {
        say(format!(
            "{id}  stopped, but a runner that died left containers behind: {}; \
             `runner --user {id} stop` removes them (`start` replaces them)",
            status.orphans.join(", "),
            id = user.id
        ));
    }
}

/// A running agent: its runner, each guest, what is not tracked, strays, repairs, health.
fn say_running(user: &runner::UserEntry, status: &UserStatus, m: &RunnerMarker) {
    say(format!(
        "{}  running  runner pid {}, up {}, tier {}",
        user.id,
        m.pid,
        duration(age(&m.started_at)),
        m.tier
    ));
    let agent = runner::load_agent_config(user.agent_config.as_deref()).ok();
    if let Some(warning) = agent.as_ref().and_then(crate::start_cmd::exposure) {
        say(format!("  WARNING: {warning}"));
    }
    for (role, c) in &m.children {
        say_guest(status, role, c);
    }
    if let runner::Tracking::Untracked(why) = &status.tracking
        && status.tier == Tier::Process
    {
        say(format!(
            "  processes  not tracked ({why}): a command that leaves its session can outlive \
             stop"
        ));
    }
    if !status.strays.is_empty() {
        say(format!(
            "  strays     {} processes outside any guest: {}; `runner --user {} stop` ends them",
            status.strays.len(),
            shown(&status.strays),
            user.id
        ));
    }
    for repair in m.repairs.iter().rev().take(10).rev() {
        say(format!("  repaired   {repair}"));
    }
    if let Some(h) = &status.health {
        say(format!(
            "  health     {} (updated {} ago)",
            h.summary(),
            duration(age(&h.updated_at))
        ));
    }
}

/// One guest of a running agent: pid, uptime, restarts, endpoint, and its container.
fn say_guest(status: &UserStatus, role: &str, c: &runner::ChildInfo) {
    let alive = match status.states.get(role) {
        Some(state) => state == "running",
        None => runner::looks_like(c.pid, role),
    };
    let endpoint = match role {
        "oxydra-vm" => status
            .gateway
            .as_ref()
            .map_or("-".to_owned(), |g| g.url.clone()),
        _ => types::shell_socket_path(&status.ws).display().to_string(),
    };
    say(format!(
        "  {role:<10} pid {:<7} {} restarts {}  {endpoint}",
        c.pid,
        if alive {
            format!("up {:<7}", duration(age(&c.started_at)))
        } else {
            "exited    ".into()
        },
        c.restarts,
    ));
    if let Some(name) = &c.container {
        let state = status.states.get(role).map_or("unknown", String::as_str);
        say(format!("  {:<10} container {name} ({state})", ""));
    }
}

/// The containers serving `ws` (as `name (state)`), when no runner supervises them.
async fn orphaned(docker: &bollard::Docker, ws: &WorkspacePaths) -> Vec<String> {
    match crate::container_guest::workspace_containers(docker, &ws.root).await {
        Ok(found) => found
            .into_iter()
            .map(|c| {
                let name = c
                    .names
                    .and_then(|n| n.into_iter().next())
                    .unwrap_or_default();
                let state = c
                    .state
                    .map_or_else(|| "unknown".to_owned(), |s| s.to_string());
                format!("{} ({state})", name.trim_start_matches('/'))
            })
            .collect(),
        Err(e) => vec![format!("unknown ({e:#})")],
    }
}

/// `running`, `exited`, ... or `missing`.
async fn container_state(docker: &bollard::Docker, name: &str) -> String {
    match docker
        .inspect_container(name, None::<InspectContainerOptions>)
        .await
    {
        Ok(info) => info
            .state
            .and_then(|s| s.status)
            .map_or_else(|| "unknown".to_owned(), |s| s.to_string()),
        Err(e) if runner::is_not_found(&e) => "missing".to_owned(),
        Err(e) => format!("unknown ({})", runner::docker_message(&e)),
    }
}

/// A process in the user's cgroups that no running guest started.
#[derive(Debug, Clone, serde::Serialize)]
struct Stray {
    pid: u32,
    role: String,
    command: String,
}

/// `pid 123 (sleep), pid 456 (sh)`. A stray's name is the shell's to choose (`prctl`, or the
/// name of the file it runs): a newline in it would print a line of its own in the status (a
/// forged `repaired` or `health` line), so it is shown as one escaped field.
fn shown(strays: &[Stray]) -> String {
    strays
        .iter()
        .map(|s| format!("pid {} ({})", s.pid, crate::out::field(&s.command, false)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The processes in `cgroup` that are neither one of `guests` nor descended from one.
fn strays(cgroup: &runner::UserCgroup, guests: &[u32]) -> Vec<Stray> {
    cgroup
        .processes()
        .into_iter()
        .filter(|(_, pid)| !descends_from(*pid, guests))
        .map(|(role, pid)| Stray {
            pid,
            role,
            command: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|c| c.trim().to_owned())
                .unwrap_or_default(),
        })
        .collect()
}

/// True when `pid` is one of `guests` or its parents lead to one.
fn descends_from(pid: u32, guests: &[u32]) -> bool {
    let mut current = pid;
    for _ in 0..64 {
        if guests.contains(&current) {
            return true;
        }
        match parent_of(current) {
            Some(parent) if parent > 1 => current = parent,
            _ => return false,
        }
    }
    false
}

/// The parent pid from `/proc/<pid>/stat` (after the command name, which may hold spaces).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strays_name_is_one_escaped_field() {
        let stray = |command: &str| Stray {
            pid: 7,
            role: "shell-vm".into(),
            command: command.into(),
        };
        assert_eq!(
            shown(&[stray("sleep"), stray("x\n  health  ok")]),
            "pid 7 (sleep), pid 7 (x\\n  health  ok)"
        );
    }
}
