//! The user's MCP servers that have containers of their own (container tier, `image` set):
//! started just before both guests and stopped with them (see `runner::mcp_container_body` for
//! what each container may see). A server's container that ends is not restarted here: the
//! agent's MCP client reports the server down until the user's agent is restarted.

use std::time::Duration;

use anyhow::{Context, Result};
use runner::{McpContainerSpec, mcp_container_body, mcp_container_name};
use sandbox::Role;

use super::Plan;
use crate::container_guest::ContainerGuest;

/// Starts a container for each of `plan`'s own-container MCP servers; on a failure the ones
/// started are stopped again.
pub(super) async fn start(plan: &Plan, keys: &runner::ShellKeys) -> Result<Vec<ContainerGuest>> {
    let Some(docker) = &plan.docker else {
        return Ok(Vec::new());
    };
    let (uid, gid) = match plan.separation.guest(Role::ShellVm) {
        Some(id) => (id.uid, id.gid),
        None => (
            rustix::process::getuid().as_raw(),
            rustix::process::getgid().as_raw(),
        ),
    };
    let mut started = Vec::new();
    for server in &plan.mcp.containers {
        let socket = types::mcp_server_socket(&plan.ws, &server.name);
        let launched = async {
            runner::remove_if_exists(&socket)?;
            let body = mcp_container_body(&McpContainerSpec {
                server,
                user: &plan.user,
                ws: &plan.ws,
                shell_vm: &plan.shell_bin,
                uid,
                gid,
                shell_keys: keys,
                agent_uid: plan.separation.guest(Role::OxydraVm).map(|id| id.uid),
                limits: plan.config.container.shell_vm,
            })?;
            let name = mcp_container_name(&plan.config.workspace_root, &plan.user.id, &server.name);
            let dir = runner::runner_log_dir(&plan.ws)?;
            let log = format!("mcp-{}.log", server.name);
            ContainerGuest::launch(docker, &name, body, dir, log).await
        }
        .await
        .with_context(|| format!("cannot start MCP server {}'s container", server.name));
        match launched {
            Ok(guest) => started.push(guest),
            Err(e) => {
                stop(&mut started, plan.config.supervision.stop_timeout).await;
                return Err(e);
            }
        }
    }
    Ok(started)
}

/// Stops and removes every container in `guests`.
pub(super) async fn stop(guests: &mut Vec<ContainerGuest>, grace: Duration) {
    for mut guest in guests.drain(..) {
        guest.stop(grace).await;
        tracing::info!(container = %guest.name, "MCP server container stopped");
    }
}
