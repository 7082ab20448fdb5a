//! Notices come before what they explain: a 16 MB frame gets `frame_too_large` before the close,
//! and `events_expired` comes before the replayed events.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Client, WAIT, code, start, test_config, token_of};
use futures::{SinkExt, StreamExt};
use gateway::GatewayConfig;
use test_support::{ScriptedLlm, ScriptedReply};
use tokio_tungstenite::tungstenite::Message;
use types::{ClientFrame, ErrorCode, PROTOCOL_VERSION, ServerFrame, UserId};

/// Sends `before` frames, then one text frame of `bytes` bytes while reading: the frames the
/// server sent until it closed.
async fn send_huge(url: &str, before: &[String], bytes: usize) -> Vec<ServerFrame> {
    let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let (mut tx, mut rx) = ws.split();
    for frame in before {
        tx.send(Message::Text(frame.clone().into())).await.unwrap();
    }
    let huge = format!(r#"{{"type":"ping","pad":"{}"}}"#, "x".repeat(bytes));
    // The server may stop reading (and close) before all of it is sent.
    let sender = tokio::spawn(async move {
        let _ = tx.send(Message::Text(huge.into())).await;
        tx
    });
    let mut frames = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, rx.next())
            .await
            .expect("in time")
        {
            Some(Ok(Message::Text(text))) => frames.push(serde_json::from_str(&text).unwrap()),
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
            Some(Ok(_)) => {}
        }
    }
    drop(sender.await);
    frames
}

#[tokio::test]
async fn a_16_mb_frame_gets_frame_too_large_before_the_close() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let hello = serde_json::to_string(&ClientFrame::Hello {
        protocol_version: PROTOCOL_VERSION,
        token: token_of(dir.path(), "alice"),
        user_id: UserId::parse("alice").unwrap(),
        session_id: None,
        last_seq: None,
    })
    .unwrap();
    let mb16 = 16 * 1024 * 1024;

    // Authenticated: hello_ok, then the error, then the close.
    let frames = send_huge(&gw.url(), &[hello], mb16).await;
    assert!(
        matches!(frames[0], ServerFrame::HelloOk { .. }),
        "{frames:?}"
    );
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(code(&frames[1]), ErrorCode::FrameTooLarge);

    // As the first frame: the error, then the close.
    let frames = send_huge(&gw.url(), &[], mb16).await;
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(code(&frames[0]), ErrorCode::FrameTooLarge);

    // The gateway still serves.
    let (_client, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    gw.shutdown().await;
}

#[tokio::test]
async fn events_expired_comes_before_the_replayed_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.set_responder(|_| ScriptedReply::text("an answer"));
    let config = GatewayConfig {
        session_log: 3,
        ..test_config()
    };
    let gw = start(dir.path(), &["alice"], &server, config).await;
    let (mut a, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let s = session.session_id.clone();
    let mut last = 0;
    for (i, text) in ["one", "two"].into_iter().enumerate() {
        a.send_turn(&s, text, &format!("c-{i}")).await;
        last = common::seqs(&a.recv_turn().await)
            .into_iter()
            .max()
            .unwrap();
    }
    assert!(last > 4, "enough events to leave the log of 3: {last}");

    // Reconnecting from seq 1: the notice first, then the 3 events still logged.
    let (mut b, _) = Client::hello(&gw, dir.path(), "alice", Some(&s), Some(1)).await;
    assert_eq!(code(&b.recv().await), ErrorCode::EventsExpired);
    let mut replayed = Vec::new();
    for _ in 0..3 {
        replayed.push(b.recv().await.seq().unwrap());
    }
    assert_eq!(replayed, vec![last - 2, last - 1, last]);

    // Resync from seq 1 on the same connection: the same order.
    b.send(&ClientFrame::Resync {
        session_id: s.clone(),
        after_seq: 1,
    })
    .await;
    match b.recv().await {
        ServerFrame::Error {
            code, reference, ..
        } => assert_eq!(
            (code, reference.as_deref()),
            (ErrorCode::EventsExpired, Some("resync"))
        ),
        other => panic!("expected events_expired, got {other:?}"),
    }
    assert_eq!(b.recv().await.seq(), Some(last - 2));
    gw.shutdown().await;
}
