//! Test fixtures shared by every crate's tests.
//!
//! The centrepiece is [`ScriptedLlm`]: a real HTTP server on `127.0.0.1:0` that speaks both LLM wire
//! formats (OpenAI Chat Completions and Anthropic Messages, JSON and SSE streaming), answers from a
//! queue of [`ScriptedReply`]s or a responder closure, and records every request for assertions.
//! [`ScriptedLlm::openai_config`] and [`ScriptedLlm::anthropic_config`] build `ProviderConfig`s
//! pointing at it.
//!
//! It depends on `types` and HTTP libraries only — never on `provider` or any product crate — so
//! every crate can use it. It is a dev-dependency only.
//!
//! Modules:
//! - `llm` — the scripted server (`script`, `server`, `wire`, `recorded`, `config`)
//! - `tmux` — [`Tmux`]: drive a terminal program inside tmux (TUI end-to-end tests)
//! - `mcp_demo` — [`demo_mcp_config`]: the `mcp` crate's demo MCP server (Python SDK) as a
//!   user's configuration
//! - `need` — [`need`]: what a test needs from the machine (Docker, Landlock, tmux, sqld), never
//!   skipped silently
//! - `sqld` — [`Sqld`]: a real libSQL server on a free loopback port, with JWTs on demand
//! - `tls` — [`self_signed_cert`]: a server certificate and key for `127.0.0.1` (`openssl`)

mod llm;
mod mcp_demo;
mod need;
mod sqld;
mod tls;
mod tmux;

pub use llm::{
    RecordedRequest, Responder, SCRIPTED_MODEL, ScriptedLlm, ScriptedMessage, ScriptedReply,
    ScriptedToolCall, WireFormat,
};
pub use mcp_demo::{DEMO_MCP_SERVER, demo_mcp_config, demo_mcp_server};
pub use need::{Need, mcp_python, need, sqld_binary};
pub use sqld::Sqld;
pub use tls::self_signed_cert;
pub use tmux::Tmux;
