//! `runner mcp-servers --user U`: checks each of the user's MCP servers (`[mcp.servers]` of
//! their agent.toml) — starts it, lists its tools — and says, per server, whether it is up with
//! which tools, or what is wrong. Also the MCP part of `runner tools` ([`start`], [`tool_rows`]).
//!
//! The runner runs as the operator (often root) and unconfined, so a stdio server starts in a
//! private scratch directory, never in the user's `shared/`: the shell writes there, and a
//! server started in it runs what the shell planted (`python -m x` imports `shared/x.py`, `npx`
//! reads `shared/.npmrc`, a relative script is `shared/`'s). Nor does it start or reach the
//! servers of the copy of agent.toml in `.oxydra/`, which the user's `oxydra-vm` can write (a
//! command run as the operator; a URL sent the operator's variable `bearer_token_env` names).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use mcp::client::{DirectLauncher, McpClients, ServerState};
use tools::DynamicTools;
use types::AgentConfig;

use crate::Global;
use crate::memory_cmd::user_setup;
use crate::out::field;

pub async fn run(
    global: &Global,
    root: Option<PathBuf>,
    agent_config: Option<PathBuf>,
) -> Result<()> {
    let (user, root, agent_config, _) = user_setup(global, root, agent_config)?;
    let config = runner::load_agent_config(agent_config.as_deref())?;
    // The copy the runner gives the agent (`.oxydra/agent.toml`) is writable by the user's
    // `oxydra-vm`: its servers are neither started nor reached as the operator.
    if let Some(copy) = agent_config
        .as_deref()
        .filter(|path| crate::agent_copy::is_agents_copy(path, &root, &user))
    {
        crate::agent_copy::refuse_servers(&config, copy)?;
    }
    let mut out = std::io::stdout().lock();
    if config.mcp.servers.is_empty() {
        writeln!(
            out,
            "no MCP servers configured ([mcp.servers.<name>] in agent.toml)"
        )?;
        return Ok(());
    }
    // Kept while the servers run (their working directory): see the module's note.
    let scratch = tempfile::tempdir()?;
    let clients = start(&config, scratch.path()).await;
    let mut down = 0;
    // What a server said (its tool names, errors, stderr) with control characters as escapes:
    // a server cannot drive the operator's terminal.
    for status in clients.status() {
        writeln!(out, "{}", field(&status.to_string(), false))?;
        for tool in &status.tools {
            writeln!(out, "  {}", field(tool, false))?;
        }
        for refused in &status.refused {
            writeln!(out, "  {}", refused_line(refused))?;
        }
        if status.state != ServerState::Up {
            down += 1;
        }
    }
    for (name, _) in config.mcp.servers.iter().filter(|(_, s)| !s.enabled) {
        writeln!(out, "{name}: disabled (enabled = false)")?;
    }
    if down > 0 {
        bail!("{down} MCP server(s) not up: see above");
    }
    Ok(())
}

/// Starts the clients of `config`'s MCP servers (stdio ones in `cwd`, a directory no guest can
/// write), waiting for each first connection; a tool named like a built-in tool is refused, as in the agent.
pub(crate) async fn start(config: &AgentConfig, cwd: &Path) -> Arc<McpClients> {
    let mut reserved: Vec<String> = tools::ToolSet::new(None)
        .builtin(config.tools.memory)
        .tools()
        .unwrap_or_default()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    reserved.extend(
        [
            tools::SCHEDULE_CREATE_TOOL_NAME,
            tools::SCHEDULE_LIST_TOOL_NAME,
            tools::SCHEDULE_CANCEL_TOOL_NAME,
            tools::SCHEDULE_PAUSE_TOOL_NAME,
            tools::WEB_FETCH_TOOL_NAME,
            tools::WEB_SEARCH_TOOL_NAME,
        ]
        .map(str::to_owned),
    );
    let clients = Arc::new(McpClients::start(
        &config.mcp,
        Arc::new(DirectLauncher::new(cwd)),
        &reserved,
    ));
    let longest = config
        .mcp
        .servers
        .values()
        .map(|s| s.timeout_secs)
        .max()
        .unwrap_or(1);
    clients.ready(Duration::from_secs(longest + 5)).await;
    clients
}

/// `not offered: <tool>: <reason>`, escaped for the terminal (the tool's name is the server's,
/// refused often for its characters).
pub(crate) fn refused_line(refused: &mcp::client::RefusedTool) -> String {
    let line = format!("not offered: {}: {}", refused.tool, refused.reason);
    field(&line, false).into_owned()
}

/// The MCP tools `clients` offer now, as tools.
pub(crate) fn tool_rows(clients: &McpClients) -> Vec<Arc<dyn tools::Tool>> {
    let mut rows = clients.tools();
    rows.sort_by(|a, b| a.name().cmp(b.name()));
    rows
}
