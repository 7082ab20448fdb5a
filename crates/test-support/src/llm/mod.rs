//! The scripted LLM server: script, server, wire rendering, recorded requests, config helpers.

mod config;
mod recorded;
mod script;
mod server;
mod wire;

pub use config::SCRIPTED_MODEL;
pub use recorded::{RecordedRequest, WireFormat};
pub use script::{ScriptedMessage, ScriptedReply, ScriptedToolCall};
pub use server::{Responder, ScriptedLlm};
