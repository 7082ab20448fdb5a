//! The demo MCP server of the `mcp` crate's tests (`crates/mcp/tests/servers/demo.py`, written
//! with the official Python SDK) as a user's configuration, for the tests that run it through
//! another crate (the gateway's status frames, the TUI's status bar, the runner's agents).

use types::{McpConfig, McpServerConfig};

/// The demo server's script.
pub const DEMO_MCP_SERVER: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../mcp/tests/servers/demo.py");

/// The demo server over stdio, run by [`mcp_python`](crate::mcp_python), with the defaults of
/// every other setting. A test calls `need(Need::McpPython)` first: without that Python this
/// panics.
#[allow(
    clippy::expect_used,
    reason = "a test fixture: the test has called need(Need::McpPython)"
)]
pub fn demo_mcp_server() -> McpServerConfig {
    let python = crate::mcp_python().expect("a Python with the MCP SDK (need(Need::McpPython))");
    McpServerConfig {
        command: Some(python.display().to_string()),
        args: vec![DEMO_MCP_SERVER.to_owned(), "stdio".to_owned()],
        ..McpServerConfig::default()
    }
}

/// A user's MCP configuration with one server, `demo` ([`demo_mcp_server`]).
pub fn demo_mcp_config() -> McpConfig {
    McpConfig {
        servers: [("demo".to_owned(), demo_mcp_server())].into(),
    }
}
