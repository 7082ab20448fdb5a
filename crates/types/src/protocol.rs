//! The gateway protocol, version 1: JSON text frames `{"type": ..., ...}` exchanged over a
//! WebSocket. [`ClientFrame`]s go from a client to the gateway, [`ServerFrame`]s back.
//!
//! The first client frame must be [`ClientFrame::Hello`]. Every event of a turn carries the
//! session's sequence number `seq`, increasing by one per event across the session's turns, so a
//! client that reconnects (or falls behind) names the last `seq` it saw and receives exactly the
//! events after it. `docs/protocol.md` documents each frame with an example.

use serde::{Deserialize, Serialize};

use crate::{
    CaptureReport, CapturedChange, ConversationHitView, DeletedNoteView, Message, ModelView,
    NoteRequest, NoteVersionView, NoteView, NotificationView, PendingMemory, ScheduleAction,
    ScheduleView, SessionId, TimeReadView, TurnEvent, TurnId, UsageView, UserId,
};

/// The protocol version this build speaks; `hello` must carry it.
pub const PROTOCOL_VERSION: u32 = 1;

/// The largest frame the gateway accepts (its default `max_frame_bytes`): a client checks a
/// message against it before sending, so a too-long message is refused in the client with the
/// text kept, never sent and cut off with the connection.
pub const MAX_FRAME_BYTES: usize = 256 * 1024;

/// A frame sent by a client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    /// Authenticates the connection; must come first. Without `session_id` a new session is
    /// started; with it, that session is resumed, and the events of its active turn after
    /// `last_seq` (all of them, without `last_seq`) are replayed.
    Hello {
        protocol_version: u32,
        token: String,
        user_id: UserId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_seq: Option<u64>,
    },
    /// Starts a turn in the connection's current session. `client_turn_id` is echoed back.
    SendTurn {
        session_id: SessionId,
        text: String,
        client_turn_id: String,
    },
    /// Cancels the session's active turn.
    CancelTurn { session_id: SessionId },
    /// Starts a new session and makes it the connection's current one.
    NewSession {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// Lists the user's sessions, most recently active first.
    ListSessions,
    /// Makes another session of the user current (replaying its active turn as `hello` does).
    SwitchSession {
        session_id: SessionId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_seq: Option<u64>,
    },
    /// Pages stored history: up to `limit` messages before message number `before` (or the newest).
    GetHistory {
        session_id: SessionId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<u64>,
        limit: u32,
    },
    /// Answers an `approval_requested` event. With `approved` and `scope: "session"`, later calls
    /// of the same tool in the same session run without asking (absent: this call only).
    Approve {
        call_id: String,
        approved: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<ApprovalScope>,
    },
    /// After `lagged`: resubscribes to the session and replays its events after `after_seq`.
    Resync {
        session_id: SessionId,
        after_seq: u64,
    },
    /// Keep-alive; answered with `pong`.
    Ping,
    /// The user's schedules; answered with `schedules`.
    ListSchedules,
    /// Cancels, pauses or resumes one of the user's schedules; answered with `schedules`.
    ChangeSchedule {
        schedule_id: String,
        action: ScheduleAction,
    },
    /// The models the session can use; answered with `models`.
    ListModels { session_id: SessionId },
    /// Switches the session to the model `name` (remembered with the session); answered with
    /// `model_set`.
    SetModel { session_id: SessionId, name: String },
    /// What the session has spent; answered with `usage`.
    GetUsage { session_id: SessionId },
    /// Capture's proposals waiting for the user (`[memory.capture] mode = "suggest"`);
    /// answered with `pending_memories`.
    ListPendingMemories,
    /// Applies pending proposal `id` (through the memory pipeline, as the `capture` surface);
    /// answered with `memory_accepted`.
    AcceptMemory { id: i64 },
    /// Drops pending proposal `id`, writing nothing; answered with `memory_rejected`.
    RejectMemory { id: i64 },
    /// Searches every past conversation of the user (1 to 50 hits); answered with
    /// `conversation_results`. `limit` is read whole (`u64`) so that any limit past 50 gets the
    /// same answer naming it; as a `u32`, one past 4294967295 failed to read and was answered
    /// with serde's word that no frame matched.
    SearchConversations { query: String, limit: u64 },
    /// A request about the user's notes (`list_notes`, `edit_note`, `restore_note`, …): declared
    /// once, as [`NoteRequest`]. Untagged here because the request brings its own `type`; it stays
    /// the last variant, tried after every frame whose `type` is its own.
    #[serde(untagged)]
    Note(NoteRequest),
}

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// This call only (the default).
    Once,
    /// This call and every later call of the same tool in the same session.
    Session,
}

/// A frame sent by the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    /// The connection is authenticated and attached to `session`.
    HelloOk {
        user_id: UserId,
        session: SessionSummary,
        protocol_version: u32,
        /// The model the agent talks to, for display.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    TurnStarted {
        seq: u64,
        session_id: SessionId,
        turn_id: TurnId,
        client_turn_id: String,
    },
    /// A request could not be served. `ref` names the client frame it answers (its
    /// `client_turn_id`, `call_id` or `type`).
    Error {
        code: ErrorCode,
        message: String,
        #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
    },
    /// Answers `new_session`; the connection is now on this session.
    SessionCreated {
        session: SessionSummary,
    },
    /// Answers `switch_session`; the connection is now on this session.
    SessionSwitched {
        session: SessionSummary,
    },
    SessionList {
        sessions: Vec<SessionSummary>,
    },
    /// Answers `get_history`: stored messages, oldest first. `next_before` pages further back.
    History {
        session_id: SessionId,
        events: Vec<HistoryEvent>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_before: Option<u64>,
    },
    Pong,
    /// Answers `list_models`: every model, and the one the session runs on (`current`).
    Models {
        session_id: SessionId,
        models: Vec<ModelView>,
        current: String,
    },
    /// Answers `set_model`: the session now runs on `model`.
    ModelSet {
        session_id: SessionId,
        model: ModelView,
    },
    /// Answers `get_usage`: the session's tokens and cost so far, and its model (whose price
    /// gives a turn's cost from the `usage` its end reports).
    Usage {
        session_id: SessionId,
        model: ModelView,
        session: UsageView,
    },
    /// The user's active and paused schedules (times in `timezone`).
    Schedules {
        schedules: Vec<ScheduleView>,
        timezone: String,
    },
    /// A scheduled run's result, pushed to every connected client of the user; stored while
    /// none is connected and sent (`unread: true`) on the next connect.
    Notification {
        #[serde(flatten)]
        notification: NotificationView,
    },
    /// What one capture call did (changes made in mode `auto`, proposals kept in `suggest`),
    /// pushed to every connected client of the user; each change can be undone like the
    /// agent's own.
    MemoryCaptured {
        #[serde(flatten)]
        report: CaptureReport,
    },
    /// Answers `list_pending_memories`: oldest first.
    PendingMemories {
        memories: Vec<PendingMemory>,
    },
    /// Answers `accept_memory`: the change made (absent when the note already said it).
    MemoryAccepted {
        id: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        change: Option<CapturedChange>,
    },
    /// Answers `reject_memory`.
    MemoryRejected {
        id: i64,
    },
    /// Answers `search_conversations`: messages of the user's past conversations, best first;
    /// `time` says how the query's words about time were read (absent when they name none).
    ConversationResults {
        query: String,
        hits: Vec<ConversationHitView>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<TimeReadView>,
    },
    /// The user's own MCP servers and whether each is up: sent after `hello_ok` when the agent
    /// has any, and to every client of the user when one goes down or comes back.
    McpStatus {
        servers: Vec<crate::McpServerView>,
    },
    /// This client fell behind on `session_id` and was unsubscribed from it. `last_seq` is the
    /// last event queued for it; send `resync` with the last `seq` actually received.
    Lagged {
        session_id: SessionId,
        last_seq: u64,
    },
    /// Answers `list_notes`: `total` notes match; `next_cursor` pages further.
    NoteList {
        notes: Vec<NoteView>,
        total: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
    },
    /// Answers `search_notes`; `time` says how the query's words about time were read (absent
    /// when they name none).
    NoteResults {
        query: String,
        notes: Vec<NoteView>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<TimeReadView>,
    },
    /// Answers `get_note`.
    Note {
        note: NoteView,
    },
    /// Answers `edit_note`: the note as now stored, with its new `version`.
    NoteEdited {
        note: NoteView,
    },
    /// Answers `delete_note`.
    NoteDeleted {
        note_id: String,
    },
    /// Answers `note_history`: versions oldest first, the last is the current (or, deleted, the
    /// last) text. `deleted_at` and `purge_after` are present when the note is deleted.
    NoteVersions {
        note_id: String,
        versions: Vec<NoteVersionView>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deleted_at: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        purge_after: Option<String>,
    },
    /// Answers `list_deleted_notes`: most recently deleted first.
    DeletedNotes {
        notes: Vec<DeletedNoteView>,
    },
    /// Answers `restore_note`: the note as now stored.
    NoteRestored {
        note: NoteView,
    },
    /// Answers `confirm_note`.
    NoteConfirmed {
        note: NoteView,
    },
    /// One event of a running turn, numbered in the session. It carries the runtime's
    /// [`TurnEvent`] as it is: on the wire the event's own `type` and fields sit beside `seq`,
    /// `session_id` and `turn_id` (`{"type": "assistant_delta", "seq": 14, "session_id": "s-1",
    /// "turn_id": "t-1", "text": "Hi"}`). Untagged here because the event brings the tag; it
    /// stays the last variant, tried after every frame whose `type` is its own.
    #[serde(untagged)]
    Turn {
        seq: u64,
        session_id: SessionId,
        turn_id: TurnId,
        #[serde(flatten)]
        event: TurnEvent,
    },
}

impl ServerFrame {
    /// The sequence number of a turn event; `None` for replies and notices.
    pub fn seq(&self) -> Option<u64> {
        match self {
            ServerFrame::TurnStarted { seq, .. } | ServerFrame::Turn { seq, .. } => Some(*seq),
            _ => None,
        }
    }

    /// The session of a turn event; `None` for replies and notices.
    pub fn event_session(&self) -> Option<&SessionId> {
        match self {
            ServerFrame::TurnStarted { session_id, .. } | ServerFrame::Turn { session_id, .. } => {
                Some(session_id)
            }
            _ => None,
        }
    }

    /// The runtime's event this frame carries, if it is one.
    pub fn turn_event(&self) -> Option<&TurnEvent> {
        match self {
            ServerFrame::Turn { event, .. } => Some(event),
            _ => None,
        }
    }

    /// Whether this event ends a turn.
    pub fn ends_turn(&self) -> bool {
        self.turn_event().is_some_and(TurnEvent::ends_turn)
    }

    /// An `error` frame.
    pub fn error(code: ErrorCode, message: impl Into<String>, reference: Option<String>) -> Self {
        ServerFrame::Error {
            code,
            message: message.into(),
            reference,
        }
    }
}

/// What went wrong, for clients to decide on. The message says what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Unknown user or wrong token; the connection is closed.
    Unauthorized,
    /// No `hello` in time; the connection is closed.
    AuthTimeout,
    /// `hello` named another protocol version; the connection is closed.
    VersionMismatch,
    /// The first frame was not `hello`, or `hello` came twice.
    HelloExpected,
    /// Not JSON, or a known frame with missing or wrong fields.
    MalformedFrame,
    /// A `type` this version does not know.
    UnknownFrame,
    /// Over the frame size limit; the connection is closed.
    FrameTooLarge,
    /// Binary frames are not part of the protocol.
    BinaryFrame,
    /// Field values that cannot be served (empty text, bad limit, ...).
    InvalidRequest,
    /// No such session for this user.
    SessionNotFound,
    /// The frame names a session other than the connection's current one.
    WrongSession,
    /// The session already runs a turn: wait for it or cancel it.
    TurnInProgress,
    /// `cancel_turn` while no turn runs.
    NoActiveTurn,
    /// `approve` for a call that is not waiting.
    ApprovalNotFound,
    /// Events before the requested `seq` are no longer buffered: reload with `get_history`.
    EventsExpired,
    /// The gateway could not serve the request (storage failure); try again.
    Internal,
    /// No such note in this user's memory.
    NoteNotFound,
    /// `edit_note` named a version that is not the note's current one (it changed since it
    /// was read): read it again.
    NoteChanged,
    /// This agent runs without memory, so it has no notes.
    MemoryDisabled,
    /// The memory policy refused the change (a permission or rate limit of the `gateway`
    /// surface); the message says which.
    NotAllowed,
}

/// A session as listed to clients. Times are RFC 3339 UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub created_at: String,
    pub last_active_at: String,
    /// Stored messages.
    pub messages: u64,
    /// The running turn, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_turn: Option<TurnId>,
    /// The `seq` of the session's latest event since the gateway started (0: none yet).
    pub last_seq: u64,
}

/// One stored message of a session, numbered from 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEvent {
    pub number: u64,
    pub message: Message,
    pub created_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_frames_are_tagged() {
        let frame: ClientFrame = serde_json::from_str(r#"{"type":"ping"}"#).unwrap();
        assert_eq!(frame, ClientFrame::Ping);
        let frame: ClientFrame =
            serde_json::from_str(r#"{"type":"get_history","session_id":"s1","limit":20}"#).unwrap();
        assert_eq!(
            frame,
            ClientFrame::GetHistory {
                session_id: SessionId::parse("s1").unwrap(),
                before: None,
                limit: 20
            }
        );
        assert!(serde_json::from_str::<ClientFrame>(r#"{"type":"nope"}"#).is_err());
    }

    #[test]
    fn approve_scope_is_optional() {
        let old: ClientFrame =
            serde_json::from_str(r#"{"type":"approve","call_id":"c","approved":true}"#).unwrap();
        assert_eq!(
            old,
            ClientFrame::Approve {
                call_id: "c".into(),
                approved: true,
                scope: None
            }
        );
        let session = ClientFrame::Approve {
            call_id: "c".into(),
            approved: true,
            scope: Some(ApprovalScope::Session),
        };
        assert_eq!(
            serde_json::to_value(&session).unwrap(),
            serde_json::json!({"type": "approve", "call_id": "c", "approved": true, "scope": "session"})
        );
    }

    #[test]
    fn error_ref_is_renamed() {
        let frame = ServerFrame::error(ErrorCode::TurnInProgress, "busy", Some("c1".into()));
        assert_eq!(
            serde_json::to_value(&frame).unwrap(),
            serde_json::json!({"type": "error", "code": "turn_in_progress", "message": "busy", "ref": "c1"})
        );
        assert_eq!(frame.seq(), None);
    }
}
