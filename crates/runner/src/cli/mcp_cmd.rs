//! `runner mcp --user U`: the user's memory tools over MCP on stdin/stdout, for desktop clients
//! that start a command (Claude Desktop, Claude Code). The same registry the gateway's `/mcp`
//! serves ([`runner::mcp_registry`]), over the user's own store; the identity is `--user`, the
//! operator's choice, never anything the client sends. Logs go to stderr: stdout is the protocol.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::Global;
use crate::memory_cmd::{UserStore, give_back, open_user_store};

pub async fn run(
    global: &Global,
    root: Option<PathBuf>,
    agent_config: Option<PathBuf>,
) -> Result<()> {
    let result = serve(global, root.clone(), agent_config).await;
    give_back(root, global);
    result
}

async fn serve(
    global: &Global,
    root: Option<PathBuf>,
    agent_config: Option<PathBuf>,
) -> Result<()> {
    let UserStore {
        user,
        config,
        user_root,
        store,
    } = open_user_store(global, root, agent_config).await?;
    let governance = tools::Governance::new(config.governance.clone()).with_store(&store);
    let registry = runner::mcp_registry(Some(&store), &config, Arc::new(governance))
        .context("cannot assemble the tools")?;
    let workspace = types::WorkspacePaths::new(&user_root);
    let server = mcp::McpServer::new(Arc::new(registry), user.clone(), workspace)
        .context("cannot set up the MCP server")?;
    tracing::info!(user = %user, "serving MCP on stdio");
    mcp::serve_stdio(server)
        .await
        .context("MCP over stdio stopped")?;
    Ok(())
}
