//! [`ShellLauncher`]: how `oxydra-vm` starts the user's stdio MCP servers — never as a child of
//! its own, always through the user's shell daemon (`shell-vm`, the shell's uid and Landlock; or,
//! for a container-tier server with `image`, the daemon in that server's own container), which
//! pipes the server's stdio over the authenticated socket.

use std::fmt;

use mcp::client::{LaunchError, Launched, Launcher};
use types::{McpServerConfig, McpSpawn, WorkspacePaths};

use crate::Tier;
use crate::mcp_guest::mcp_socket;

/// Starts stdio servers through the user's shell daemon(s).
pub struct ShellLauncher {
    ws: WorkspacePaths,
    tier: Tier,
}

impl ShellLauncher {
    /// The launcher of the user whose workspace is `ws`, whose agent runs in `tier`.
    pub fn new(ws: WorkspacePaths, tier: Tier) -> Self {
        Self { ws, tier }
    }
}

impl fmt::Debug for ShellLauncher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShellLauncher")
            .field("tier", &self.tier.name())
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Launcher for ShellLauncher {
    async fn launch(&self, name: &str, server: &McpServerConfig) -> Result<Launched, LaunchError> {
        let Some(command) = server.command.clone() else {
            return Err(LaunchError::Unsupported(format!(
                "`{name}` is not a stdio server (it has no `command`)"
            )));
        };
        let socket = mcp_socket(&self.ws, name, server, self.tier);
        let secret = tools::read_secret(&types::shell_secret_path(&self.ws))
            .await
            .map_err(|e| LaunchError::Channel(e.to_string()))?;
        let spec = McpSpawn {
            command,
            args: server.args.clone(),
            env: server.env.clone(),
        };
        let pipe = tools::spawn_mcp_server(&socket, &secret, &spec)
            .await
            .map_err(|e| LaunchError::Channel(e.to_string()))?;
        Ok(Launched {
            reader: Box::new(pipe.reader),
            writer: Box::new(pipe.writer),
            stderr: None,
            guard: Box::new(pipe.guard),
        })
    }
}
