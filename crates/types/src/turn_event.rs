//! What a turn reports while it runs: [`TurnEvent`], one closed vocabulary from the runtime that
//! emits it to every client that shows it. The gateway numbers each event and sends it as
//! [`crate::ServerFrame::Turn`]; its JSON is the event's own (`{"type": "assistant_delta", ...}`)
//! with the frame's `seq`, `session_id` and `turn_id` beside it.

use serde::{Deserialize, Serialize};

use crate::{NoteChange, Usage};

/// One thing that happened during a turn, in order. A turn ends with exactly one of
/// `TurnCompleted`, `TurnFailed` or `TurnCancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnEvent {
    /// More of the assistant's reply text.
    AssistantDelta { text: String },
    /// A tool call is about to run.
    ToolStarted {
        call_id: String,
        name: String,
        /// The raw arguments text the model sent.
        arguments: String,
    },
    /// A tool call ended (successfully or not); `summary` is the first line of its result, short.
    ToolFinished {
        call_id: String,
        name: String,
        ok: bool,
        summary: String,
        duration_ms: u64,
        /// What the call changed in the user's memory, one entry per note (absent when nothing).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changes: Vec<NoteChange>,
    },
    /// A running call reports how far it got (an MCP server's `notifications/progress`):
    /// `progress` of `total` when known, and the tool's own short message.
    ToolProgress {
        call_id: String,
        name: String,
        progress: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A privileged call waits for the user's answer (on the gateway, `approve {call_id,
    /// approved}`).
    ApprovalRequested {
        call_id: String,
        name: String,
        arguments: String,
        /// Why this call needs an answer when its tool alone would not (a memory delete after
        /// untrusted input), naming what it would do in words the user can judge.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A model request failed and is tried again: `attempt` of `max_attempts` starts after
    /// `wait_ms`. `reason` is a few words ("timed out", "rate limited", "HTTP 503").
    ModelRetry {
        attempt: u32,
        max_attempts: u32,
        wait_ms: u64,
        reason: String,
    },
    /// The turn ended normally; `message` is the final assistant text.
    TurnCompleted { message: String, usage: Usage },
    /// The turn was cancelled; the history stays consistent (see the runtime's guidebook chapter).
    TurnCancelled { usage: Usage },
    /// The turn could not finish; `reason` says why and what to check.
    TurnFailed { reason: String },
}

impl TurnEvent {
    /// Whether this event ends its turn.
    pub fn ends_turn(&self) -> bool {
        matches!(
            self,
            TurnEvent::TurnCompleted { .. }
                | TurnEvent::TurnCancelled { .. }
                | TurnEvent::TurnFailed { .. }
        )
    }
}
