//! A server's tool as the agent's [`tools::Tool`]: `<server>__<tool>`, its schema, its tier;
//! a call goes to the server's live connection, or answers that the server is down.

use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::ServiceError;
use serde_json::Value;
use tools::{Tool, ToolError};
use types::{SafetyTier, ToolExecutionContext, UntrustedInput};

use super::progress::call;
use super::result::render;
use super::slot::Slot;

/// One tool of one server.
#[derive(Debug)]
pub(crate) struct McpTool {
    pub name: String,
    /// Its name on the server.
    pub remote: String,
    pub description: String,
    pub schema: Value,
    pub tier: SafetyTier,
    pub timeout: Duration,
    pub slot: Weak<Slot>,
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    fn safety_tier(&self) -> SafetyTier {
        self.tier
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let Some(slot) = self.slot.upgrade() else {
            return Err(ToolError::execution("the MCP client has stopped"));
        };
        let server = slot.name.clone();
        let peer = slot.peer().map_err(|reason| {
            ToolError::execution(format!(
                "MCP server `{server}` is down (restarting): {reason}"
            ))
        })?;
        let mut params = CallToolRequestParams::new(self.remote.clone());
        params.arguments = args.as_object().cloned();
        match call(&peer, params, &slot.progress, &ctx.progress).await {
            Ok(result) => {
                let json = serde_json::to_value(&result).map_err(|e| {
                    ToolError::execution_with("the MCP server's answer is not valid", e)
                })?;
                let (text, is_error) = render(&json);
                if is_error {
                    return Err(ToolError::execution(format!(
                        "MCP server `{server}` answered with an error: {text}"
                    )));
                }
                Ok(text)
            }
            Err(ServiceError::McpError(e)) => Err(ToolError::execution(format!(
                "MCP server `{server}` refused the call: {}",
                e.message
            ))),
            Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                slot.broken(e.to_string());
                Err(ToolError::execution(format!(
                    "MCP server `{server}` is down (restarting): the connection was lost"
                )))
            }
            Err(e) => Err(ToolError::execution(format!(
                "MCP server `{server}` did not answer: {e}"
            ))),
        }
    }

    /// Everything a server returns is another program's text.
    fn reads_untrusted(&self) -> Option<UntrustedInput> {
        Some(UntrustedInput::Mcp)
    }
}

/// Shared tools of one server, by offered name.
pub(crate) type Offered = std::collections::BTreeMap<String, Arc<McpTool>>;
