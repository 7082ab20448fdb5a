//! [`McpError`]: why an MCP transport stopped.

/// Why serving MCP failed.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("the MCP client did not complete the initialize handshake")]
    Handshake(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the MCP session ended with an error")]
    Session(#[source] Box<dyn std::error::Error + Send + Sync>),
}
