//! `runner status`: per user and role — pid (or container and its state), uptime, restarts,
//! endpoint, health.

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
    let docker = match config.tier {
        Tier::Container => runner::connect_docker().await.ok(),
        Tier::Process => None,
    };
    let mut rows = Vec::new();
    for user in users {
        let ws = WorkspacePaths::for_user(&config.workspace_root, &user.id);
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
        if let (Some(docker), Some(m)) = (&docker, &marker) {
            for (role, c) in &m.children {
                if let Some(name) = &c.container {
                    states.insert(role.clone(), container_state(docker, name).await);
                }
            }
        }
        // Containers of this workspace with no live runner: left by one that was killed.
        let orphans = match (&docker, &marker) {
            (Some(docker), None) => orphaned(docker, &ws).await,
            _ => Vec::new(),
        };
        if as_json {
            rows.push(json!({
                "user": user.id,
                "running": marker.is_some(),
                "runner": marker,
                "containers": states,
                "gateway": gateway,
                "health": health,
                "left_behind": orphans,
            }));
            continue;
        }
        let Some(m) = marker else {
            if orphans.is_empty() {
                say(format!("{}  stopped", user.id));
            } else {
                say(format!(
                    "{id}  stopped, but a runner that died left containers behind: {}; \
                     `runner --user {id} stop` removes them (`start` replaces them)",
                    orphans.join(", "),
                    id = user.id
                ));
            }
            continue;
        };
        say(format!(
            "{}  running  runner pid {}, up {}, tier {}",
            user.id,
            m.pid,
            duration(age(&m.started_at)),
            m.tier
        ));
        for (role, c) in &m.children {
            let alive = match states.get(role) {
                Some(state) => state == "running",
                None => runner::looks_like(c.pid, role),
            };
            let endpoint = match role.as_str() {
                "oxydra-vm" => gateway.as_ref().map_or("-".to_owned(), |g| g.url.clone()),
                _ => types::shell_socket_path(&ws).display().to_string(),
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
                let state = states.get(role).map_or("unknown", String::as_str);
                say(format!("  {:<10} container {name} ({state})", ""));
            }
        }
        if let Some(h) = health {
            say(format!(
                "  health     {} (updated {} ago)",
                h.summary(),
                duration(age(&h.updated_at))
            ));
        }
    }
    if as_json {
        say(types::terminal::escape_json(&serde_json::to_string_pretty(
            &rows,
        )?));
    }
    Ok(())
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
