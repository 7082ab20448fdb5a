//! `oxydra-tui`, the terminal chat client: talks to a user's agent over the gateway protocol
//! (`types::ClientFrame` / `types::ServerFrame`, `docs/protocol.md`), streams replies with
//! Markdown, shows tool activity compactly, and resumes by `seq` after a dropped connection.
//!
//! It depends on `types` only among Oxydra's crates: it never opens a database or runs tools.
//!
//! Modules:
//! - `args` — the command line, resolved against the workspace files ([`Args`], [`Target`])
//! - `model` — the UI state and its reducer over frames, keys and connection events ([`App`])
//! - `editor` — the multi-line input with history ([`Editor`])
//! - `command` — slash commands ([`Command`])
//! - `markdown` — Markdown to styled lines
//! - `view` — rendering with ratatui ([`draw`])
//! - `net` — the WebSocket client with reconnect and backoff
//! - `terminal` — raw mode in, ALWAYS restored out (guard and panic hook)
//! - `app` — the event loop ([`run`])
//! - `error` — [`TuiError`]

pub mod app;
pub mod args;
pub mod command;
pub mod editor;
pub mod error;
pub mod markdown;
pub mod model;
pub mod net;
pub mod terminal;
pub mod view;

pub use app::run;
pub use args::{Args, Target};
pub use command::Command;
pub use editor::Editor;
pub use error::TuiError;
pub use model::{
    App, ConnEvent, ConnState, Entry, ExportFile, MemoryChange, Resume, TurnState, Undo,
};
pub use view::draw;
