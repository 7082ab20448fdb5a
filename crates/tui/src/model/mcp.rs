//! The user's own MCP servers, as the gateway's `mcp_status` frames say: kept for the status
//! bar (which names the servers that are down), with a notice in the transcript when one goes
//! down and when it comes back.

use types::{ClientFrame, McpServerState, McpServerView};

use super::{App, Entry};

impl App {
    /// Applies an `mcp_status` frame.
    pub(super) fn mcp_status(&mut self, servers: Vec<McpServerView>) -> Vec<ClientFrame> {
        for server in &servers {
            let was = self
                .mcp_servers
                .iter()
                .find(|s| s.name == server.name)
                .map(|s| s.state);
            let name = types::terminal::escape_line(&server.name);
            match (was, server.state) {
                (Some(McpServerState::Down), McpServerState::Down) => {}
                (_, McpServerState::Down) => {
                    let reason = server
                        .reason
                        .as_deref()
                        .map(types::terminal::escape_line)
                        .unwrap_or_default();
                    self.push(Entry::error(format!(
                        "MCP server {name} is down ({reason}); its tools answer that it is down \
                         until it is back (it is restarted)."
                    )));
                }
                (Some(McpServerState::Down), McpServerState::Up) => {
                    self.push(Entry::info(format!("MCP server {name} is back up.")));
                }
                _ => {}
            }
        }
        self.mcp_servers = servers;
        Vec::new()
    }

    /// The names of the MCP servers that are down, for the status bar.
    pub fn mcp_down(&self) -> Vec<String> {
        self.mcp_servers
            .iter()
            .filter(|s| s.state == McpServerState::Down)
            .map(|s| types::terminal::escape_line(&s.name).into_owned())
            .collect()
    }
}
