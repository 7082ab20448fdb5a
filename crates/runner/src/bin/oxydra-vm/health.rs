//! `oxydra-vm`'s health file, `.oxydra/health.json`: what `runner status` shows.
//!
//! It lives in `.oxydra/`, which the shell never sees, and is written through
//! [`runner::write_json_atomic`] (a fresh `O_EXCL | O_NOFOLLOW` temporary file and a rename): a
//! link or FIFO planted at any name cannot redirect or block the write. There is no copy in
//! `ipc/`.

use runner::{Health, MemoryState, VmBootstrap};
use types::{AgentConfig, WorkspacePaths};

/// What the health file reports on, for one user.
pub struct HealthProbe<'a> {
    pub boot: &'a VmBootstrap,
    pub ws: &'a WorkspacePaths,
    pub config: &'a AgentConfig,
    pub memory: MemoryState,
    pub sandbox: &'static str,
    /// The user's MCP servers, whose status the file carries.
    pub mcp: Option<std::sync::Arc<mcp::client::McpClients>>,
}

impl HealthProbe<'_> {
    /// Writes the health file; true when everything is `ok`.
    pub async fn write(&self) -> bool {
        let shell = match tools::connect_unfollowed(&self.boot.shell_socket()).await {
            Ok(_) => "connected",
            Err(_) => "not running",
        };
        let p = &self.config.provider;
        let health = Health {
            status: if shell == "connected" {
                "ok"
            } else {
                "degraded"
            }
            .into(),
            user_id: self.boot.user_id.to_string(),
            memory: self.memory.as_str().into(),
            provider: format!("{}/{}", serde_plain(&p.kind), p.model),
            shell: shell.into(),
            sandbox: self.sandbox.into(),
            updated_at: crate::serve::now(),
            mcp_servers: self
                .mcp
                .iter()
                .flat_map(|c| c.status())
                .map(|s| s.to_string())
                .collect(),
        };
        if let Err(e) =
            runner::write_json_atomic(&self.ws.root, &runner::health_path(self.ws), &health)
        {
            tracing::warn!(error = %e, "could not write the health file");
        }
        health.status == "ok"
    }
}

fn serde_plain(kind: &types::ProviderKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
