//! The WebSocket gateway: how clients reach a user's agent.
//!
//! A [`Gateway`] serves a fixed set of users ([`UserAgent`]: token, workspace and the user's own
//! [`runtime::AgentRuntime`], composed by `oxydra-vm`) on `127.0.0.1` (or the configured address,
//! with TLS if given). A client's first frame is
//! `hello` with the user's [`GatewayToken`]; then it sends turns, cancels them, creates, lists and
//! switches sessions, pages history, answers approvals, and lists, searches, edits and deletes
//! the user's saved notes (protocol v1, [`types::ClientFrame`] /
//! [`types::ServerFrame`], documented in `docs/protocol.md`). Each turn gets a fresh
//! [`types::ToolExecutionContext`]; nothing about identity is shared or mutable. Turn events are
//! numbered per session and logged (bounded), so clients that reconnect or fall behind resume
//! by `seq` without losing or repeating events; a slow client never slows a turn or other clients.
//!
//! It does not run the agent loop (runtime), compose an agent or open a store (`oxydra-vm` does),
//! read the store (sessions and history come through the runtime), or launch processes (runner).
//!
//! Modules:
//! - `server` — [`Gateway`], [`RunningGateway`]: users, listener, shutdown
//! - `handshake` — the `hello`: version, user, token, timeout
//! - `conn` — one connection: the answer to each client frame
//! - `frames` — reading frames: size limit, JSON, known types
//! - `frame_fault` — what is wrong with a frame of a known type whose fields do not fit it
//! - `notes` — the user's notes: list, search, get, edit, delete
//! - `captured` — capture's reports pushed to the user's clients; pending proposals accepted or rejected
//! - `notify` — notifications of scheduled runs to every client of the user, unread ones on connect
//! - `scheduled` — the host of a user's scheduler: runs as turns on hubs, notifications out
//! - `schedules` — the user's schedules from a client: list, cancel, pause, resume
//! - `session` — a session's live state: seq, event log, active turn, subscribers
//! - `shared` — [`Shared`](shared::Shared): what every connection and handler of a running gateway sees
//! - `title` — a session's title from its first message
//! - `turn` — running a turn with its own context; the runtime's events carried, numbered, in frames
//! - `outbound` — a client's bounded queue, lag notices, the writer task
//! - `user` — [`UserAgent`]: one user's token, runtime, approvals and sessions
//! - `mcp_status` — the user's own MCP servers' state pushed to their clients (`mcp_status`)
//! - `mcp_route` — `/mcp`: the user's tools over MCP behind the gateway token
//! - `token` — [`GatewayToken`]: the per-user secret file, constant-time check
//! - `schema` — the JSON Schema of the protocol ([`protocol_schema`]); `schema_notes`, `schema_schedules`, `schema_models`, `schema_turns`, `schema_capture` its note, schedule, model/usage, turn and capture examples
//! - `metrics` — `GET /metrics`: a user's Prometheus metrics, bearer token required
//! - `limits` — connection caps, the handshake deadline, the open-file limit ([`ConnectionStats`])
//! - `trim` — returning memory to the system after a flood of connections
//! - `tls` — [`TlsIdentity`] (a certificate and key checked to belong together) and the listener
//!   that serves plain or TLS connections
//! - `hosts` — the host names it answers to (loopback, its address, `allow_hosts`): any other
//!   `Host` is refused before a route sees it (DNS rebinding)
//! - `web_routes` — the web client: its page on `GET /`, sign-in (one-time link, pasted token),
//!   sign-out, the `Origin` check on upgrades; `web_auth` its codes, sessions and failure limit;
//!   `web_assets` its compiled-in files and every response's security headers
//! - `config` — [`GatewayConfig`]
//! - `error` — [`GatewayError`]

mod captured;
mod config;
mod conn;
mod error;
mod frame_fault;
mod frames;
mod handshake;
mod hosts;
mod limits;
mod mcp_route;
mod mcp_status;
mod metrics;
mod notes;
mod notify;
mod outbound;
mod scheduled;
mod schedules;
mod schema;
mod schema_capture;
mod schema_models;
mod schema_notes;
mod schema_schedules;
mod schema_turns;
mod server;
mod session;
mod shared;
mod title;
mod tls;
mod token;
mod trim;
mod turn;
mod user;
mod web_assets;
mod web_auth;
mod web_routes;

pub use config::GatewayConfig;
pub use conn::MAX_HISTORY_PAGE;
pub use error::GatewayError;
pub use frames::CLIENT_FRAME_TYPES;
pub use limits::{ConnectionStats, RESERVED_FDS};
pub use schema::{example_client_frames, example_server_frames, protocol_schema};
pub use server::{Gateway, RunningGateway};
pub use tls::{TlsError, TlsIdentity, exposure_warning};
pub use token::GatewayToken;
pub use user::UserAgent;
pub use web_assets::{ASSETS, CONTENT_SECURITY_POLICY, web_client_bytes};
