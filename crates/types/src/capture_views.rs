//! What capture did or proposes, as the runtime reports it and the gateway protocol shows it: a
//! change it made ([`CapturedChange`]), a proposal waiting for the user ([`PendingMemory`]), and
//! the report of one capture call ([`CaptureReport`]); and a message of a past conversation found
//! by a search ([`ConversationHitView`]). Times are RFC 3339 UTC.

use serde::{Deserialize, Serialize};

/// One change capture made to the user's notes (mode `auto`, or a proposal the user accepted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedChange {
    /// `added`, `updated` or `deleted`.
    pub action: String,
    pub note_id: String,
    /// The note's text after the change (for a delete: the text it had).
    pub text: String,
    /// `false` when the exchange it came from had read untrusted content: recall leaves the
    /// note out until the user confirms it.
    pub confirmed: bool,
}

/// A proposal of capture (mode `suggest`) waiting for the user to accept or reject it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingMemory {
    /// What `accept_memory` and `reject_memory` name.
    pub id: i64,
    /// `add`, `update` or `delete`.
    pub action: String,
    /// The note an update or delete is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note_id: Option<String>,
    /// The text an add or update would write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The note's text as capture was shown it (update, delete): what the change would replace
    /// or forget, so the user can judge it. Accepting is refused when the note says something
    /// else by then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note_text: Option<String>,
    /// The conversation it was captured from.
    pub session_id: String,
    pub created_at: String,
    /// The untrusted input that conversation had read before capture proposed it (`file`,
    /// `shell`, `web`, `note`, `client`, `mcp`): the proposal may restate text the user did not
    /// write, so it is shown with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<String>,
}

/// What one capture call did: the changes it made (mode `auto`) or the proposals it left
/// pending (mode `suggest`), for the exchange of `session_id` that ended with `turn_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureReport {
    pub session_id: String,
    pub turn_id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<CapturedChange>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingMemory>,
}

/// A message of a past conversation found by `search_conversations`, best first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationHitView {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The message's number in its session (`get_history` with `before` = `seq + 1` shows it).
    pub seq: u64,
    /// `user` or `assistant`.
    pub speaker: String,
    pub text: String,
    pub date: String,
    /// The user and assistant messages around it, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<NearbyTurnView>,
}

/// A message next to a conversation hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NearbyTurnView {
    pub speaker: String,
    pub text: String,
}
