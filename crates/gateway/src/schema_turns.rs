//! Example turn frames for the protocol schema (see `schema`): `turn_started` and one `turn`
//! frame per [`TurnEvent`] kind.

use types::{NoteChange, ServerFrame, SessionId, TurnEvent, TurnId, Usage};

use crate::schema::both;

/// The frames of a turn: `turn_started` and one [`ServerFrame::Turn`] per [`TurnEvent`] kind.
pub(crate) fn turn_examples(session: &SessionId, turn: &TurnId) -> Vec<(ServerFrame, ServerFrame)> {
    let (s, t) = (|| session.clone(), || turn.clone());
    let usage = Usage {
        prompt_tokens: 812,
        completion_tokens: 23,
    };
    let turn = |seq, event| {
        both(ServerFrame::Turn {
            seq,
            session_id: s(),
            turn_id: t(),
            event,
        })
    };
    let progress = |total: Option<f64>, message: Option<&str>| ServerFrame::Turn {
        seq: 16,
        session_id: s(),
        turn_id: t(),
        event: TurnEvent::ToolProgress {
            call_id: "call_2".into(),
            name: "files__index".into(),
            progress: 3.0,
            total,
            message: message.map(str::to_owned),
        },
    };
    vec![
        (
            progress(Some(10.0), Some("indexing notes/")),
            progress(None, None),
        ),
        both(ServerFrame::TurnStarted {
            seq: 13,
            session_id: s(),
            turn_id: t(),
            client_turn_id: "c-42".into(),
        }),
        turn(
            14,
            TurnEvent::AssistantDelta {
                text: "You said".into(),
            },
        ),
        turn(
            15,
            TurnEvent::ToolStarted {
                call_id: "call_1".into(),
                name: "memory_search".into(),
                arguments: r#"{"query":"Lisbon"}"#.into(),
            },
        ),
        {
            let finished = |changes| ServerFrame::Turn {
                seq: 16,
                session_id: s(),
                turn_id: t(),
                event: TurnEvent::ToolFinished {
                    call_id: "call_1".into(),
                    name: "memory_save".into(),
                    ok: true,
                    summary: "note-3f2b…: Saved.".into(),
                    duration_ms: 4,
                    changes,
                },
            };
            let saved = NoteChange::Saved {
                note_id: "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f".into(),
                text: "Loves the trams in Lisbon".into(),
                path: Some("/memories/lisbon.md".into()),
            };
            (finished(vec![saved]), finished(Vec::new()))
        },
        turn(
            17,
            TurnEvent::ApprovalRequested {
                call_id: "call_2".into(),
                name: "memory_delete".into(),
                arguments: r#"{"note_id":"note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f"}"#.into(),
                reason: Some(
                    "It would forget the memory «Loves the trams in Lisbon», asked after the \
                     conversation read a web page — text that can carry instructions the user \
                     never gave."
                        .into(),
                ),
            },
        ),
        turn(
            18,
            TurnEvent::ModelRetry {
                attempt: 2,
                max_attempts: 4,
                wait_ms: 1200,
                reason: "timed out".into(),
            },
        ),
        turn(
            18,
            TurnEvent::TurnCompleted {
                message: "You said you loved the trams in Lisbon.".into(),
                usage,
            },
        ),
        turn(18, TurnEvent::TurnCancelled { usage }),
        turn(
            18,
            TurnEvent::TurnFailed {
                reason: "the model call failed: check the provider settings".into(),
            },
        ),
    ]
}
