//! [`RuntimeError`]: why a turn could not run to its end.
//!
//! Tool failures are not errors here: they go back to the model as tool results. A turn fails only
//! when the model cannot be reached (after the provider's retries), the conversation cannot be
//! stored, or the request itself is unusable.

use memory::MemoryError;
use provider::ProviderError;
use types::{NoteId, SessionId};

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The user message was empty or blank.
    #[error("the message is empty: type something to send")]
    EmptyMessage,

    /// The model call failed (after the provider's own retries on 429, 5xx, connection errors
    /// and timeouts); `attempts` counts the requests made.
    #[error("the model call failed after {}: {source}", attempts_text(*.attempts))]
    Provider {
        attempts: u32,
        #[source]
        source: ProviderError,
    },

    /// The conversation could not be read or stored. `context` names the operation.
    #[error("memory failed while {context}: {source}")]
    Memory {
        context: &'static str,
        #[source]
        source: MemoryError,
    },

    /// The session belongs to another user (ephemeral history checks this too).
    #[error("session {0} belongs to another user")]
    SessionOwnedByOtherUser(SessionId),

    /// The agent runs without memory, so it has no notes to show or change.
    #[error("memory is disabled for this agent: it keeps no notes")]
    MemoryDisabled,

    /// No such note in the user's memory.
    #[error("note {0} was not found in your memory")]
    NoteNotFound(NoteId),

    /// An edit named a version that is not the note's current one; nothing changed.
    #[error("note {0} changed since you read it: read it again, then edit")]
    NoteVersionMismatch(NoteId),

    /// A note request that cannot be served as sent; the text says what to change.
    #[error("{0}")]
    InvalidNoteRequest(String),

    /// The memory pipeline refused a note change (`kind`: the tool error kind, such as
    /// `permission_denied`, `rate_limited`, `pii_detected`); `message` is its own, safe to show.
    #[error("{message}")]
    NoteRefused { kind: &'static str, message: String },

    /// A schedule request was refused or cannot be served (schedules off, not found, refused by
    /// governance); the text is the tool's own, safe to show.
    #[error("{0}")]
    ScheduleRefused(String),

    /// No model goes by this name (`[models.<name>]` in `agent.toml`, or `default`).
    #[error("there is no model named {0:?}: /model lists the ones you can use")]
    UnknownModel(String),
}

impl RuntimeError {
    /// Whether sending the same message again later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            RuntimeError::Provider { source, .. } => source.is_retryable(),
            RuntimeError::Memory { source, .. } => source.is_retryable(),
            RuntimeError::EmptyMessage
            | RuntimeError::SessionOwnedByOtherUser(_)
            | RuntimeError::MemoryDisabled
            | RuntimeError::NoteNotFound(_)
            | RuntimeError::NoteVersionMismatch(_)
            | RuntimeError::InvalidNoteRequest(_)
            | RuntimeError::ScheduleRefused(_)
            | RuntimeError::UnknownModel(_) => false,
            RuntimeError::NoteRefused { kind, .. } => *kind == "rate_limited",
        }
    }

    pub(crate) fn memory(context: &'static str) -> impl FnOnce(MemoryError) -> RuntimeError {
        move |source| match source {
            MemoryError::SessionOwnedByOtherUser(session) => {
                RuntimeError::SessionOwnedByOtherUser(session)
            }
            source => RuntimeError::Memory { context, source },
        }
    }
}

/// A refusal of the memory pipeline (permission, rate limit, PII and secrets), in the pipeline's
/// own words.
impl From<tools::ToolError> for RuntimeError {
    fn from(error: tools::ToolError) -> Self {
        RuntimeError::NoteRefused {
            kind: error.kind(),
            message: match error {
                tools::ToolError::Governed { message, .. } => message,
                other => other.to_string(),
            },
        }
    }
}

/// A governed note operation's failure as its audit row and metrics name it.
impl tools::governance::Failure for RuntimeError {
    fn kind(&self) -> &'static str {
        match self {
            RuntimeError::NoteNotFound(_) => "not_found",
            RuntimeError::NoteRefused { kind, .. } => kind,
            _ => "execution",
        }
    }
}

fn attempts_text(attempts: u32) -> String {
    match attempts {
        1 => "1 attempt".to_owned(),
        n => format!("{n} attempts"),
    }
}
