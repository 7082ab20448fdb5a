//! Sessions can be found again: a session is titled from its first message (unless it was given
//! a title), and a client starting without a session reuses an empty one no other client is on
//! instead of piling up a new empty session per launch.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Client, start, test_config};
use test_support::{ScriptedLlm, ScriptedReply};
use types::{ClientFrame, ServerFrame, SessionSummary};

async fn list(client: &mut Client) -> Vec<SessionSummary> {
    client.send(&ClientFrame::ListSessions).await;
    match client
        .recv_until(|f| matches!(f, ServerFrame::SessionList { .. }))
        .await
        .pop()
    {
        Some(ServerFrame::SessionList { sessions }) => sessions,
        other => panic!("{other:?}"),
    }
}

/// A ping answered: every frame before it (the attach after `hello_ok`) is done.
async fn settled(client: &mut Client) {
    client.send(&ClientFrame::Ping).await;
    client.recv_until(|f| *f == ServerFrame::Pong).await;
}

#[tokio::test]
async fn the_first_message_titles_the_session_and_a_given_title_stays() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    for _ in 0..3 {
        server.push(ScriptedReply::text("ok"));
    }
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let (mut a, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let s = session.session_id.clone();
    a.send_turn(&s, "  Plan my trip to Lisbon\nin May, with trams", "c-1")
        .await;
    a.recv_turn().await;
    a.send_turn(&s, "Something else entirely", "c-2").await;
    a.recv_turn().await;

    a.send(&ClientFrame::NewSession {
        title: Some("Taxes".into()),
    })
    .await;
    let created = a
        .recv_until(|f| matches!(f, ServerFrame::SessionCreated { .. }))
        .await
        .pop();
    let Some(ServerFrame::SessionCreated { session: taxes }) = created else {
        panic!("{created:?}");
    };
    a.send_turn(&taxes.session_id, "What can I deduct?", "c-3")
        .await;
    a.recv_turn().await;

    let titles: Vec<(String, Option<String>)> = list(&mut a)
        .await
        .into_iter()
        .map(|s| (s.session_id.to_string(), s.title))
        .collect();
    assert_eq!(
        titles,
        vec![
            (taxes.session_id.to_string(), Some("Taxes".into())),
            (s.to_string(), Some("Plan my trip to Lisbon".into())),
        ]
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_launch_reuses_an_empty_session_no_one_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let (mut a, p) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    settled(&mut a).await;
    // A is on P: another launch gets its own.
    let (mut b, q) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    assert_ne!(q.session_id, p.session_id);
    // B leaves Q for a new titled session: Q is empty and no one is on it.
    b.send(&ClientFrame::NewSession {
        title: Some("Work".into()),
    })
    .await;
    b.recv_until(|f| matches!(f, ServerFrame::SessionCreated { .. }))
        .await;
    let (mut c, again) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    assert_eq!(
        again.session_id, q.session_id,
        "the empty session is reused"
    );
    let empty = list(&mut c)
        .await
        .iter()
        .filter(|s| s.messages == 0 && s.title.is_none())
        .count();
    assert_eq!(empty, 2, "P (A is on it) and Q, nothing more");
    gw.shutdown().await;
}
