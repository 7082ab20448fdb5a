//! What clients see of the user's own MCP servers and of a tool call still running:
//! [`McpServerView`] (the `mcp_status` frame: a client's status shows a server that is down) and
//! [`ToolProgress`] / [`ProgressSink`] (a long call reports how far it got; the runtime sends it
//! as a `tool_progress` turn event).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Where one of the user's MCP servers is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// Its first connection is being made.
    Starting,
    /// Connected: its tools can be called.
    Up,
    /// Not connected (it is restarted with backoff): its tools answer that it is down.
    Down,
}

/// One configured MCP server (`[mcp.servers.<name>]`), as a client shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerView {
    pub name: String,
    pub state: McpServerState,
    /// Why it is down, in the words the model is told (never the server's own stderr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How many tools it offers (as last listed).
    pub tools: u32,
}

/// How far a running tool call got: `progress` of `total` (when the tool knows it), with a short
/// message of its own. `progress` grows with each report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolProgress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a tool reports its progress during a call: the runtime gives each call one that turns
/// reports into `tool_progress` events; elsewhere it drops them ([`ProgressSink::default`]).
#[derive(Clone, Default)]
pub struct ProgressSink(Option<Arc<dyn Fn(ToolProgress) + Send + Sync>>);

impl ProgressSink {
    /// A sink that hands every report to `report` (which must not block).
    pub fn new(report: impl Fn(ToolProgress) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(report)))
    }

    /// Reports `progress` (dropped when nobody listens).
    pub fn report(&self, progress: ToolProgress) {
        if let Some(report) = &self.0 {
            report(progress);
        }
    }

    /// Whether reports go anywhere.
    pub fn is_listened(&self) -> bool {
        self.0.is_some()
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ProgressSink")
            .field(&self.is_listened())
            .finish()
    }
}
