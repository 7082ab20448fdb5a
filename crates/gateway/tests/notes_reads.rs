//! The user's note reads over a real WebSocket leave a trace: `list_notes`, `search_notes` and
//! `get_note` (and `search_conversations`) pass the governance stages as the `gateway` surface
//! (an audit row each, refused as `not_allowed` when the user's `[governance]` refuses reads, and
//! the refusal audited too).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use test_support::ScriptedLlm;
use types::{ClientFrame, ErrorCode, NoteRequest, ServerFrame};

use crate::common::{Client, code};
use crate::notes::{ask, governed_gateway, seed};

fn reads(note_id: &str) -> [ClientFrame; 3] {
    [
        ClientFrame::Note(NoteRequest::ListNotes {
            category: None,
            cursor: None,
            limit: 10,
        }),
        ClientFrame::Note(NoteRequest::SearchNotes {
            query: "Lisbon".into(),
            limit: 10,
        }),
        ClientFrame::Note(NoteRequest::GetNote {
            note_id: note_id.into(),
        }),
    ]
}

#[tokio::test]
async fn note_frames_that_read_are_governed_and_audited() {
    let dir = tempfile::tempdir().unwrap();
    let ids = seed(dir.path(), "alice", &[("Alice likes Lisbon", None)]).await;
    let server = ScriptedLlm::start().await;
    let (gw, store) =
        governed_gateway(dir.path(), &server, types::GovernanceConfig::default()).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    for frame in reads(&ids[0]) {
        let answer = ask(&mut a, frame).await;
        assert!(!matches!(answer, ServerFrame::Error { .. }), "{answer:?}");
    }
    drop(a);
    gw.shutdown().await;
    let rows = store.audit().audit_log(None, 100).await.unwrap();
    let seen: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r.surface.as_str(),
                r.tool.as_str(),
                r.operation.as_str(),
                r.outcome.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("gateway", "memory_list", "read", "ok"),
            ("gateway", "memory_search", "read", "ok"),
            ("gateway", "memory_get", "read", "ok"),
        ]
    );

    // Reads refused by the user's policy are refused on every frame, and each refusal audited.
    let config: types::GovernanceConfig =
        serde_json::from_value(serde_json::json!({"operations": {"read": {"allowed": false}}}))
            .unwrap();
    let (gw, store) = governed_gateway(dir.path(), &server, config).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    for frame in reads(&ids[0]) {
        let answer = ask(&mut a, frame).await;
        assert_eq!(code(&answer), ErrorCode::NotAllowed, "{answer:?}");
    }
    // The search of past conversations is a read too: refused as not_allowed in the pipeline's
    // words (it was `internal`, "could not reach your memory; try again", which no retry fixes).
    let answer = ask(
        &mut a,
        ClientFrame::SearchConversations {
            query: "Lisbon".into(),
            limit: 10,
        },
    )
    .await;
    assert_eq!(code(&answer), ErrorCode::NotAllowed, "{answer:?}");
    let ServerFrame::Error { message, .. } = &answer else {
        panic!("{answer:?}");
    };
    assert!(!message.contains("try again"), "{message}");
    drop(a);
    gw.shutdown().await;
    let denied = store
        .audit()
        .audit_log(None, 100)
        .await
        .unwrap()
        .iter()
        .filter(|r| r.outcome == "denied")
        .count();
    assert_eq!(denied, 4);
}
