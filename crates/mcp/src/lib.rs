//! The MCP server adapter: serves one user's [`tools::ToolRegistry`] over the Model Context
//! Protocol with the official Rust SDK (`rmcp`).
//!
//! A [`McpServer`] is bound to one user when it is built (by `oxydra-vm` for the gateway's
//! `/mcp`, where the bearer token chose the user, or by `runner mcp --user U` for stdio): every
//! `tools/call` runs through the registry's one pipeline with a fresh
//! [`types::ToolExecutionContext`] for that user — never an identity from arguments or headers.
//! Transports: [`http_service`] (streamable HTTP, a tower service the gateway mounts behind its
//! token check) and [`serve_stdio`].
//!
//! The [`client`] is the other direction: the user's own MCP servers offered to the agent as
//! tools ([`client::McpClients`], a `tools::DynamicTools`), stdio servers started through a
//! [`client::Launcher`] the composition chooses.
//!
//! It does not authenticate HTTP callers (the gateway does), compose registries (the runner
//! does), or open stores.
//!
//! Modules:
//! - `client` — the MCP client of the user's servers
//! - `server` — [`McpServer`]: tools/list and tools/call over the registry
//! - `transport` — [`http_service`], [`serve_stdio`]
//! - `sessions` — [`McpLimits`]: the cap and idle time of HTTP sessions
//! - `error` — [`McpError`]

pub mod client;
mod error;
mod server;
mod sessions;
mod transport;

pub use error::McpError;
pub use server::{McpServer, SURFACE};
pub use sessions::McpLimits;
pub use transport::{
    MAX_REQUEST_BODY_BYTES, McpHttpService, http_service, http_service_with, serve_stdio,
};
