//! The MCP client: the user's own MCP servers (`[mcp.servers.<name>]`) as the agent's tools.
//!
//! [`McpClients`] keeps every enabled server connected — a stdio server started through a
//! [`Launcher`] (who runs it, and how confined, is the launcher's business), an HTTP one over
//! streamable HTTP — lists its tools at start and whenever it says they changed, restarts a
//! server whose connection ends with backoff, and reports each server's [`ServerStatus`]. It is
//! a [`tools::DynamicTools`]: a registry built `with_dynamic_tools` offers the servers' tools as
//! `<server>__<tool>`, checks the arguments against their schemas, bounds and scrubs their
//! output, and marks it untrusted (`UntrustedInput::Mcp`).
//!
//! Modules:
//! - `launch` — [`Launcher`], [`Launched`], [`DirectLauncher`]
//! - `session` — one connection (stdio or HTTP) and its notifications
//! - `supervise` — connect, list, watch, restart with backoff
//! - `slot` — one server's shared state, [`ServerStatus`]
//! - `schema` — offered names, schema checks, tiers, allow-lists
//! - `progress` — a call's `notifications/progress` to its [`types::ProgressSink`]
//! - `offered_text` — a server's descriptions and titles cleaned, bounded and labelled
//! - `tool` — a server tool as a [`tools::Tool`]
//! - `result` — a call's result as text for the model

mod clients;
mod launch;
mod offered_text;
mod progress;
mod result;
mod schema;
mod session;
mod slot;
mod supervise;
mod tool;

pub use clients::McpClients;
pub use launch::{DEFAULT_PATH, DirectLauncher, LaunchError, Launched, Launcher};
pub use offered_text::{MAX_DESCRIPTION, MAX_SCHEMA_TEXT};
pub use result::render as render_result;
pub use schema::{MAX_SCHEMA_BYTES, MAX_TOOL_NAME, check_schema, offered_name, tier_of};
pub use slot::{RefusedTool, ServerState, ServerStatus};
pub use supervise::{FIRST_BACKOFF, MAX_BACKOFF, MAX_SERVER_TOOLS};
