//! `runner tools [--json]`: the catalogue of built-in tools, exactly as the model is offered them
//! (with `--agent-config`, the web tools too when its `[tools.web]` turns them on, and its MCP
//! servers' tools: the servers are started in a scratch directory to list them, and their state
//! is printed after the tools). When `--agent-config` is a user's own copy of agent.toml (in
//! their `.oxydra/`, which their agent can write), its servers are not started: the command
//! refuses as `runner mcp-servers` does ([`crate::agent_copy::refuse_servers`]).

use std::io::Write;

use std::path::Path;

use anyhow::{Context, Result};
use types::{MemoryDialect, MemoryDialects, SafetyTier};

/// `memory` (`notes`, `categorized`, `files`, or several joined by commas) wins over `[tools] memory` of `agent_config`.
pub async fn run(
    global: &crate::Global,
    json: bool,
    memory: Option<&str>,
    agent_config: Option<&Path>,
) -> Result<()> {
    let agent = agent_config
        .map(|path| runner::load_agent_config(Some(path)))
        .transpose()?;
    if let (Some(agent), Some(path)) = (&agent, agent_config) {
        let known_root = global.runner_config().ok().map(|c| c.workspace_root);
        if crate::agent_copy::is_a_users_copy(path, known_root.as_deref()) {
            crate::agent_copy::refuse_servers(agent, path)?;
        }
    }
    let dialect = match memory {
        Some(names) => {
            let names: Vec<&str> = names.split(',').map(str::trim).collect();
            serde_json::from_value::<MemoryDialects>(serde_json::json!(names))
                .context("unknown memory dialect")?
        }
        None if let Some(agent) = &agent => agent.tools.memory,
        None => MemoryDialect::Notes.into(),
    };
    let mut set = tools::ToolSet::new(None).builtin(dialect);
    let mut extra = Vec::new();
    let mut servers = Vec::new();
    // Kept while the servers run (their working directory).
    let scratch = tempfile::tempdir()?;
    if let Some(agent) = &agent {
        set = set.web(&agent.tools.web);
        if !agent.mcp.servers.is_empty() {
            let clients = crate::mcp_servers_cmd::start(agent, scratch.path()).await;
            extra = crate::mcp_servers_cmd::tool_rows(&clients);
            servers = clients.status();
        }
    }
    let tools = set.with_extra(extra).tools()?;
    let mut out = std::io::stdout().lock();
    if json {
        let rows: Vec<serde_json::Value> = tools
            .iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name(),
                    "description": t.description(),
                    "parameters": t.parameters(),
                    "safety_tier": t.safety_tier(),
                    "timeout_secs": t.timeout().as_secs(),
                })
            })
            .collect();
        let servers: Vec<serde_json::Value> = servers
            .iter()
            .map(|s| serde_json::json!({"server": s.name, "status": s.to_string()}))
            .collect();
        let text = if servers.is_empty() {
            serde_json::to_string_pretty(&rows)?
        } else {
            let both = serde_json::json!({"tools": rows, "mcp_servers": servers});
            serde_json::to_string_pretty(&both)?
        };
        // The characters JSON leaves raw that a terminal acts on (a server's text may hold them).
        writeln!(out, "{}", types::terminal::escape_json(&text))?;
        return Ok(());
    }
    // The name column as wide as the longest name (`search_memories` is 15).
    let width = tools.iter().map(|t| t.name().len()).max().unwrap_or(0);
    for t in &tools {
        let tier = match t.safety_tier() {
            SafetyTier::ReadOnly => "read-only",
            SafetyTier::SideEffecting => "side-effecting",
            SafetyTier::Privileged => "privileged",
        };
        let params = t.parameters();
        let names: Vec<&str> = params["properties"]
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        writeln!(
            out,
            "{:<width$} {:<15} {:>3}s  ({})",
            t.name(),
            tier,
            t.timeout().as_secs(),
            crate::out::field(&names.join(", "), false)
        )?;
    }
    for status in &servers {
        let line = format!("mcp server {status}");
        writeln!(out, "{}", crate::out::field(&line, false))?;
        for refused in &status.refused {
            writeln!(out, "  {}", crate::mcp_servers_cmd::refused_line(refused))?;
        }
    }
    Ok(())
}
