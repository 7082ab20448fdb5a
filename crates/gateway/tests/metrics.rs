//! `GET /metrics` on a real gateway: the user's gateway token as a bearer token is required, a
//! token selects that user's numbers (never another user's), anything else is 401; the note
//! lifecycle's frames are counted in the real memory metrics like every other memory call.

#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{provider, token_of, user_agent};
use gateway::{Gateway, GatewayConfig};
use test_support::ScriptedLlm;

/// One raw HTTP/1.1 request; the status code and body.
pub(crate) async fn get(addr: std::net::SocketAddr, authorization: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let auth = authorization.map_or_else(String::new, |a| format!("Authorization: {a}\r\n"));
    let request =
        format!("GET /metrics HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap();
    (status, body)
}

#[tokio::test]
async fn metrics_need_a_users_token_and_show_only_that_users_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let mut gw = Gateway::new(GatewayConfig::default());
    for user in ["alice", "bob"] {
        let agent = user_agent(dir.path(), user, provider(&server))
            .await
            .with_metrics(move || format!("memory_tool_requests_total{{user=\"{user}\"}} 1\n"));
        gw.add_user(agent).unwrap();
    }
    let gw = gw.start().await.unwrap();
    let addr = gw.local_addr();
    let alice = token_of(dir.path(), "alice");
    let bob = token_of(dir.path(), "bob");

    let table = [
        (None, 401, None),
        (Some("Bearer wrong".to_owned()), 401, None),
        (Some(alice.clone()), 401, None),
        (Some(format!("Basic {alice}")), 401, None),
        (Some(format!("Bearer {alice}")), 200, Some("alice")),
        (Some(format!("Bearer {bob}")), 200, Some("bob")),
    ];
    for (auth, status, user) in table {
        let (got, body) = get(addr, auth.as_deref()).await;
        assert_eq!(got, status, "{auth:?}: {body}");
        match user {
            Some(user) => assert!(
                body.contains(&format!("user=\"{user}\"")) && body.lines().count() == 1,
                "{body}"
            ),
            None => assert!(!body.contains("memory_tool"), "{body}"),
        }
    }
    gw.shutdown().await;
}

/// The note lifecycle's frames (history, confirm, deleted notes, restore) are counted in the user's
/// real memory metrics, as every other memory call is: one request each, by tool and outcome.
#[tokio::test]
async fn lifecycle_operations_are_counted_in_the_users_metrics() {
    use std::sync::Arc;

    use crate::common::Client;
    use crate::notes::{ask, governed_gateway_with};
    use types::{ClientFrame, NoteRequest, UserId};

    let dir = tempfile::tempdir().unwrap();
    let store = crate::common::open_store(dir.path(), "alice").await;
    let alice = UserId::parse("alice").unwrap();
    let note_id = store
        .save(
            &alice,
            None,
            "Parcel lockers close at nine",
            Default::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap()
        .note_id
        .to_string();
    drop(store);
    let server = ScriptedLlm::start().await;
    let metrics = Arc::new(tools::MemoryMetrics::new().unwrap());
    let (gw, _) = governed_gateway_with(
        dir.path(),
        &server,
        types::GovernanceConfig::default(),
        Some(Arc::clone(&metrics)),
    )
    .await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let id = || note_id.clone();
    for frame in [
        ClientFrame::Note(NoteRequest::NoteHistory { note_id: id() }),
        ClientFrame::Note(NoteRequest::ConfirmNote { note_id: id() }),
        ClientFrame::Note(NoteRequest::DeleteNote { note_id: id() }),
        ClientFrame::Note(NoteRequest::ListDeletedNotes),
        ClientFrame::Note(NoteRequest::RestoreNote {
            note_id: id(),
            version: None,
        }),
        // Refused (no such note): counted, with its outcome.
        ClientFrame::Note(NoteRequest::RestoreNote {
            note_id: "note-7d1f7a36-5f7e-4a55-9d0b-0f2a1c3e4b5d".to_owned(),
            version: None,
        }),
    ] {
        ask(&mut a, frame).await;
    }
    let token = crate::common::token_of(dir.path(), "alice");
    let (status, body) = get(gw.local_addr(), Some(&format!("Bearer {token}"))).await;
    assert_eq!(status, 200, "{body}");
    let count = |tool: &str, status: &str| -> u64 {
        body.lines()
            .filter(|l| l.starts_with("memory_tool_requests_total{"))
            .filter(|l| l.contains(&format!("tool_name=\"{tool}\"")))
            .filter(|l| l.contains(&format!("status=\"{status}\"")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    for tool in ["memory_history", "memory_confirm", "memory_deleted"] {
        assert_eq!(count(tool, "ok"), 1, "{tool}: {body}");
    }
    assert_eq!(count("memory_restore", "ok"), 1, "{body}");
    assert_eq!(
        body.lines()
            .filter(|l| l.starts_with("memory_tool_requests_total{")
                && l.contains("tool_name=\"memory_restore\"")
                && !l.contains("status=\"ok\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>(),
        1,
        "the refused restore is counted with its outcome: {body}"
    );
    assert!(
        body.contains("memory_tool_latency_seconds_count{tool_name=\"memory_restore\"}"),
        "{body}"
    );
    drop(a);
    gw.shutdown().await;
}
