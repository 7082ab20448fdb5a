//! The JSON Schema of protocol v1, generated from the Rust frame types.
//!
//! Each frame variant has two example values: one with every optional field set and one with
//! none. Serializing them (through the very serde derives the gateway uses) gives each frame's
//! properties, their JSON types and which are required; the exhaustive `match`es below make a new
//! variant a compile error until it has examples. A test keeps `docs/protocol.schema.json` equal
//! to [`protocol_schema`].

use serde::Serialize;
use serde_json::{Map, Value, json};
use types::{
    ApprovalScope, ClientFrame, ErrorCode, HistoryEvent, McpServerState, McpServerView, Message,
    NoteRequest, PROTOCOL_VERSION, ProvenanceView, Role, ServerFrame, SessionId, SessionSummary,
    TimeReadView, ToolCall, TurnEvent, TurnId, UserId,
};

/// Every [`ErrorCode`], for the schema's `enum`.
const ERROR_CODES: [ErrorCode; 20] = [
    ErrorCode::Unauthorized,
    ErrorCode::AuthTimeout,
    ErrorCode::VersionMismatch,
    ErrorCode::HelloExpected,
    ErrorCode::MalformedFrame,
    ErrorCode::UnknownFrame,
    ErrorCode::FrameTooLarge,
    ErrorCode::BinaryFrame,
    ErrorCode::InvalidRequest,
    ErrorCode::SessionNotFound,
    ErrorCode::WrongSession,
    ErrorCode::TurnInProgress,
    ErrorCode::NoActiveTurn,
    ErrorCode::ApprovalNotFound,
    ErrorCode::EventsExpired,
    ErrorCode::Internal,
    ErrorCode::NoteNotFound,
    ErrorCode::NoteChanged,
    ErrorCode::MemoryDisabled,
    ErrorCode::NotAllowed,
];

const ROLES: [Role; 4] = [Role::System, Role::User, Role::Assistant, Role::Tool];

const SCOPES: [ApprovalScope; 2] = [ApprovalScope::Once, ApprovalScope::Session];

/// Fails to compile when an [`ErrorCode`] is added without listing it in `ERROR_CODES`.
fn _all_codes_listed(code: ErrorCode) {
    match code {
        ErrorCode::Unauthorized
        | ErrorCode::AuthTimeout
        | ErrorCode::VersionMismatch
        | ErrorCode::HelloExpected
        | ErrorCode::MalformedFrame
        | ErrorCode::UnknownFrame
        | ErrorCode::FrameTooLarge
        | ErrorCode::BinaryFrame
        | ErrorCode::InvalidRequest
        | ErrorCode::SessionNotFound
        | ErrorCode::WrongSession
        | ErrorCode::TurnInProgress
        | ErrorCode::NoActiveTurn
        | ErrorCode::ApprovalNotFound
        | ErrorCode::EventsExpired
        | ErrorCode::Internal
        | ErrorCode::NoteNotFound
        | ErrorCode::NoteChanged
        | ErrorCode::MemoryDisabled
        | ErrorCode::NotAllowed => {}
    }
}

fn ids() -> Option<(UserId, SessionId, TurnId)> {
    Some((
        UserId::parse("alice").ok()?,
        SessionId::parse("s-0b1c").ok()?,
        TurnId::parse("t-7f3a").ok()?,
    ))
}

fn summary(full: bool) -> Option<SessionSummary> {
    let (_, session, turn) = ids()?;
    Some(SessionSummary {
        session_id: session,
        title: full.then(|| "Trip planning".to_owned()),
        created_at: "2025-01-01T09:00:00.000Z".into(),
        last_active_at: "2025-01-01T09:05:00.000Z".into(),
        messages: 4,
        active_turn: full.then_some(turn),
        last_seq: 12,
    })
}

/// One example of every client frame: `(with every optional field, with none)`.
pub fn example_client_frames() -> Vec<(ClientFrame, ClientFrame)> {
    let Some((user, session, _)) = ids() else {
        return Vec::new();
    };
    let hello = |full: bool| ClientFrame::Hello {
        protocol_version: PROTOCOL_VERSION,
        token: "3f9c…64 hex characters…".into(),
        user_id: user.clone(),
        session_id: full.then(|| session.clone()),
        last_seq: full.then_some(12),
    };
    let s = || session.clone();
    let mut frames = vec![
        (hello(true), hello(false)),
        both(ClientFrame::SendTurn {
            session_id: s(),
            text: "What did I say about Lisbon?".into(),
            client_turn_id: "c-42".into(),
        }),
        both(ClientFrame::CancelTurn { session_id: s() }),
        (
            ClientFrame::NewSession {
                title: Some("Trip planning".into()),
            },
            ClientFrame::NewSession { title: None },
        ),
        both(ClientFrame::ListSessions),
        (
            ClientFrame::SwitchSession {
                session_id: s(),
                last_seq: Some(12),
            },
            ClientFrame::SwitchSession {
                session_id: s(),
                last_seq: None,
            },
        ),
        (
            ClientFrame::GetHistory {
                session_id: s(),
                before: Some(40),
                limit: 20,
            },
            ClientFrame::GetHistory {
                session_id: s(),
                before: None,
                limit: 20,
            },
        ),
        (
            ClientFrame::Approve {
                call_id: "call_1".into(),
                approved: true,
                scope: Some(ApprovalScope::Session),
            },
            ClientFrame::Approve {
                call_id: "call_1".into(),
                approved: true,
                scope: None,
            },
        ),
        both(ClientFrame::Resync {
            session_id: s(),
            after_seq: 12,
        }),
        both(ClientFrame::Ping),
    ];
    frames.extend(crate::schema_notes::client_examples());
    frames.extend(crate::schema_schedules::client_examples());
    frames.extend(crate::schema_models::client_examples());
    frames.extend(crate::schema_capture::client_examples());
    for (frame, _) in &frames {
        client_covered(frame);
    }
    frames
}

fn client_covered(frame: &ClientFrame) {
    match frame {
        ClientFrame::Hello { .. }
        | ClientFrame::SendTurn { .. }
        | ClientFrame::CancelTurn { .. }
        | ClientFrame::NewSession { .. }
        | ClientFrame::ListSessions
        | ClientFrame::SwitchSession { .. }
        | ClientFrame::GetHistory { .. }
        | ClientFrame::Approve { .. }
        | ClientFrame::Resync { .. }
        | ClientFrame::Ping
        | ClientFrame::Note(NoteRequest::ListNotes { .. })
        | ClientFrame::Note(NoteRequest::SearchNotes { .. })
        | ClientFrame::Note(NoteRequest::GetNote { .. })
        | ClientFrame::Note(NoteRequest::EditNote { .. })
        | ClientFrame::Note(NoteRequest::DeleteNote { .. })
        | ClientFrame::Note(NoteRequest::NoteHistory { .. })
        | ClientFrame::Note(NoteRequest::ListDeletedNotes)
        | ClientFrame::Note(NoteRequest::RestoreNote { .. })
        | ClientFrame::Note(NoteRequest::ConfirmNote { .. })
        | ClientFrame::ListSchedules
        | ClientFrame::ChangeSchedule { .. }
        | ClientFrame::ListModels { .. }
        | ClientFrame::SetModel { .. }
        | ClientFrame::GetUsage { .. }
        | ClientFrame::ListPendingMemories
        | ClientFrame::AcceptMemory { .. }
        | ClientFrame::RejectMemory { .. }
        | ClientFrame::SearchConversations { .. } => {}
    }
}

pub(crate) fn both<T: Clone>(frame: T) -> (T, T) {
    (frame.clone(), frame)
}

/// One example of every server frame: `(with every optional field, with none)`.
pub fn example_server_frames() -> Vec<(ServerFrame, ServerFrame)> {
    let (Some((user, session, turn)), Some(full), Some(bare)) =
        (ids(), summary(true), summary(false))
    else {
        return Vec::new();
    };
    let s = || session.clone();
    let hello = |session: SessionSummary, model: Option<&str>| ServerFrame::HelloOk {
        user_id: user.clone(),
        session,
        protocol_version: PROTOCOL_VERSION,
        model: model.map(str::to_owned),
    };
    let error = |reference: Option<&str>| ServerFrame::Error {
        code: ErrorCode::TurnInProgress,
        message: "this session is already running a turn: wait for it to end or cancel_turn".into(),
        reference: reference.map(str::to_owned),
    };
    let mut frames = vec![(
        hello(full.clone(), Some("gpt-4o-mini")),
        hello(bare.clone(), None),
    )];
    frames.extend(crate::schema_turns::turn_examples(&session, &turn));
    frames.extend([
        (error(Some("c-43")), error(None)),
        (
            ServerFrame::SessionCreated {
                session: full.clone(),
            },
            ServerFrame::SessionCreated {
                session: bare.clone(),
            },
        ),
        (
            ServerFrame::SessionSwitched {
                session: full.clone(),
            },
            ServerFrame::SessionSwitched {
                session: bare.clone(),
            },
        ),
        (
            ServerFrame::SessionList {
                sessions: vec![full.clone()],
            },
            ServerFrame::SessionList {
                sessions: vec![bare.clone()],
            },
        ),
        history_examples(&session),
        both(ServerFrame::Pong),
        both(ServerFrame::Lagged {
            session_id: s(),
            last_seq: 15,
        }),
        mcp_status_examples(),
    ]);
    frames.extend(crate::schema_notes::server_examples());
    frames.extend(crate::schema_schedules::server_examples());
    frames.extend(crate::schema_models::server_examples());
    frames.extend(crate::schema_capture::server_examples());
    for (frame, _) in &frames {
        server_covered(frame);
    }
    frames
}

/// `mcp_status`: a server down and one up; one server starting.
fn mcp_status_examples() -> (ServerFrame, ServerFrame) {
    let server = |name: &str, state, reason: Option<&str>, tools| McpServerView {
        name: name.into(),
        state,
        reason: reason.map(str::to_owned),
        tools,
    };
    (
        ServerFrame::McpStatus {
            servers: vec![
                server("files", McpServerState::Down, Some("it stopped"), 4),
                server("github", McpServerState::Up, None, 12),
            ],
        },
        ServerFrame::McpStatus {
            servers: vec![server("files", McpServerState::Starting, None, 0)],
        },
    )
}

/// `history`: a page with a tool call and a next page, and a last page.
fn history_examples(session: &SessionId) -> (ServerFrame, ServerFrame) {
    let s = || session.clone();
    let mut call = Message::assistant_tool_calls(
        Some("Let me check.".into()),
        vec![ToolCall {
            id: "call_1".into(),
            name: "memory_search".into(),
            arguments: r#"{"query":"Lisbon"}"#.into(),
        }],
    );
    call.tool_call_id = Some("call_0".into());
    let event = |message| HistoryEvent {
        number: 39,
        message,
        created_at: "2025-01-01T09:04:00.000Z".into(),
    };
    (
        ServerFrame::History {
            session_id: s(),
            events: vec![event(call)],
            next_before: Some(39),
        },
        ServerFrame::History {
            session_id: s(),
            events: vec![event(Message::user("Hi"))],
            next_before: None,
        },
    )
}

fn server_covered(frame: &ServerFrame) {
    match frame {
        ServerFrame::Turn { event, .. } => match event {
            TurnEvent::AssistantDelta { .. }
            | TurnEvent::ToolStarted { .. }
            | TurnEvent::ToolFinished { .. }
            | TurnEvent::ToolProgress { .. }
            | TurnEvent::ApprovalRequested { .. }
            | TurnEvent::ModelRetry { .. }
            | TurnEvent::TurnCompleted { .. }
            | TurnEvent::TurnCancelled { .. }
            | TurnEvent::TurnFailed { .. } => {}
        },
        ServerFrame::HelloOk { .. }
        | ServerFrame::TurnStarted { .. }
        | ServerFrame::Error { .. }
        | ServerFrame::SessionCreated { .. }
        | ServerFrame::SessionSwitched { .. }
        | ServerFrame::SessionList { .. }
        | ServerFrame::History { .. }
        | ServerFrame::Pong
        | ServerFrame::Lagged { .. }
        | ServerFrame::McpStatus { .. }
        | ServerFrame::NoteList { .. }
        | ServerFrame::NoteResults { .. }
        | ServerFrame::Note { .. }
        | ServerFrame::NoteEdited { .. }
        | ServerFrame::NoteDeleted { .. }
        | ServerFrame::NoteVersions { .. }
        | ServerFrame::DeletedNotes { .. }
        | ServerFrame::NoteRestored { .. }
        | ServerFrame::NoteConfirmed { .. }
        | ServerFrame::Schedules { .. }
        | ServerFrame::Models { .. }
        | ServerFrame::ModelSet { .. }
        | ServerFrame::Usage { .. }
        | ServerFrame::Notification { .. }
        | ServerFrame::MemoryCaptured { .. }
        | ServerFrame::PendingMemories { .. }
        | ServerFrame::MemoryAccepted { .. }
        | ServerFrame::MemoryRejected { .. }
        | ServerFrame::ConversationResults { .. } => {}
    }
}

/// The protocol's JSON Schema (draft 2020-12).
pub fn protocol_schema() -> Value {
    let client: Vec<Value> = example_client_frames()
        .iter()
        .map(|(full, bare)| frame_schema(full, bare, false))
        .collect();
    let server: Vec<Value> = example_server_frames()
        .iter()
        .map(|(full, bare)| frame_schema(full, bare, true))
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://oxydra.dev/protocol/v1.schema.json",
        "title": format!("Oxydra gateway protocol v{PROTOCOL_VERSION}"),
        "description": "JSON text frames over a WebSocket. Generated from the Rust types by \
            gateway::protocol_schema(); see docs/protocol.md.",
        "oneOf": [{"$ref": "#/$defs/ClientFrame"}, {"$ref": "#/$defs/ServerFrame"}],
        "$defs": {
            "ClientFrame": {"oneOf": client},
            "ServerFrame": {"oneOf": server},
        },
    })
}

fn to_value(frame: &impl Serialize) -> Value {
    serde_json::to_value(frame).unwrap_or(Value::Null)
}

/// A frame's schema. Server frames are closed (`additionalProperties: false`); client frames
/// are not, since the gateway ignores fields it does not know.
fn frame_schema(full: &impl Serialize, bare: &impl Serialize, closed: bool) -> Value {
    let mut schema = infer(&to_value(full), &to_value(bare), closed);
    if let Some(kind) = to_value(full).get("type").cloned()
        && let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut)
    {
        props.insert("type".into(), json!({ "const": kind }));
        schema["title"] = kind;
    }
    schema
}

/// The schema of `full`; keys absent from `bare` are optional.
fn infer(full: &Value, bare: &Value, closed: bool) -> Value {
    match full {
        Value::Object(fields) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (key, value) in fields {
                let bare_value = bare.get(key);
                if bare_value.is_some() {
                    required.push(Value::String(key.clone()));
                }
                let nested = bare_nested(key);
                let bare_of_value = nested.as_ref().or(bare_value).unwrap_or(value);
                properties.insert(
                    key.clone(),
                    known(key).unwrap_or_else(|| infer(value, bare_of_value, true)),
                );
            }
            let mut schema = json!({
                "type": "object",
                "properties": properties,
                "required": required,
            });
            if closed {
                schema["additionalProperties"] = Value::Bool(false);
            }
            schema
        }
        Value::Array(items) => {
            let first = items.first().unwrap_or(&Value::Null);
            let bare_first = bare.as_array().and_then(|a| a.first()).unwrap_or(first);
            json!({ "type": "array", "items": infer(first, bare_first, closed) })
        }
        Value::String(_) => json!({ "type": "string" }),
        Value::Bool(_) => json!({ "type": "boolean" }),
        // Prices and costs are fractions; counts, ids and times are whole.
        Value::Number(n) if n.is_f64() => json!({ "type": "number", "minimum": 0 }),
        Value::Number(_) => json!({ "type": "integer", "minimum": 0 }),
        Value::Null => json!({}),
    }
}

/// The bare examples of nested objects with optional fields of their own. A frame's bare example
/// leaves an optional object out altogether, so without these every field of the object would
/// read as required (a strict client would then refuse a search that read "before the trip":
/// its `time` has no `from`).
fn bare_nested(key: &str) -> Option<Value> {
    match key {
        "time" => Some(to_value(&TimeReadView {
            phrase: "before the trip".into(),
            from: None,
            until: None,
            timezone: "UTC".into(),
            read: String::new(),
        })),
        "provenance" => Some(to_value(&ProvenanceView {
            origin: "user".into(),
            session_id: None,
            turn_id: None,
            confirmed: true,
        })),
        "message" => Some(to_value(&Message {
            role: Role::Assistant,
            content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
        })),
        _ => None,
    }
}

/// Fields whose values are closed vocabularies.
fn known(key: &str) -> Option<Value> {
    let names = |values: Vec<Value>| json!({ "type": "string", "enum": values });
    match key {
        "code" => Some(names(ERROR_CODES.iter().map(to_value).collect())),
        "role" => Some(names(ROLES.iter().map(to_value).collect())),
        "scope" => Some(names(SCOPES.iter().map(to_value).collect())),
        _ => None,
    }
}
