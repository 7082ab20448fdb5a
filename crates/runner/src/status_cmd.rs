//! `runner status`: per user and role — pid, uptime, restarts, endpoint, health.

use anyhow::Result;
use runner::{
    GATEWAY_MARKER, GatewayMarker, HEALTH_FILE, Health, RUNNER_MARKER, RunnerMarker, read_json,
};
use serde_json::json;
use types::WorkspacePaths;

use crate::Global;
use crate::out::{age, duration, say};

pub fn run(global: &Global, as_json: bool) -> Result<()> {
    let config = global.runner_config()?;
    let users = config.select(global.user.as_deref())?;
    let mut rows = Vec::new();
    for user in users {
        let ws = WorkspacePaths::for_user(&config.workspace_root, &user.id);
        let ipc = ws.ipc();
        let marker = read_json::<RunnerMarker>(&ipc.join(RUNNER_MARKER))?
            .filter(|m| runner::looks_like(m.pid, "runner"));
        let gateway = read_json::<GatewayMarker>(&ipc.join(GATEWAY_MARKER))?
            .filter(|g| runner::is_alive(g.pid));
        let health = read_json::<Health>(&ipc.join(HEALTH_FILE))?;
        if as_json {
            rows.push(json!({
                "user": user.id,
                "running": marker.is_some(),
                "runner": marker,
                "gateway": gateway,
                "health": health,
            }));
            continue;
        }
        let Some(m) = marker else {
            say(format!("{}  stopped", user.id));
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
            let alive = runner::looks_like(c.pid, role);
            let endpoint = match role.as_str() {
                "oxydra-vm" => gateway.as_ref().map_or("-".to_owned(), |g| g.url.clone()),
                _ => ipc.join(types::SHELL_SOCKET_NAME).display().to_string(),
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
        say(serde_json::to_string_pretty(&rows)?);
    }
    Ok(())
}
