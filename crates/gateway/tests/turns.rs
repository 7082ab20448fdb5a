//! Turns, sessions, resume and history over real WebSocket connections and real databases.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::time::Duration;

use common::{Client, code, seqs, start, test_config, text_of};
use test_support::ScriptedLlm;
use test_support::ScriptedReply;
use types::{ClientFrame, ErrorCode, Role, ServerFrame, TurnEvent};

#[tokio::test]
async fn a_turn_streams_numbered_events_to_every_client_of_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::text("Hello there, friend."));
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let (mut a, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let s = session.session_id.clone();
    let (mut b, joined) = Client::hello(&gw, dir.path(), "alice", Some(&s), None).await;
    assert_eq!(joined.session_id, s);

    a.send_turn(&s, "hi", "c-1").await;
    let seen_a = a.recv_turn().await;
    let seen_b = b.recv_turn().await;
    assert_eq!(seen_a, seen_b, "both clients see the same events");
    match &seen_a[0] {
        ServerFrame::TurnStarted {
            seq,
            client_turn_id,
            session_id,
            ..
        } => {
            assert_eq!((*seq, client_turn_id.as_str()), (1, "c-1"));
            assert_eq!(session_id, &s);
        }
        other => panic!("{other:?}"),
    }
    let n = seqs(&seen_a);
    assert_eq!(n, (1..=n.len() as u64).collect::<Vec<_>>());
    assert_eq!(text_of(&seen_a), "Hello there, friend.");
    match seen_a.last().unwrap() {
        ServerFrame::Turn {
            event: TurnEvent::TurnCompleted { message, .. },
            ..
        } => assert_eq!(message, "Hello there, friend."),
        other => panic!("{other:?}"),
    }
    // The model saw the turn's message.
    assert_eq!(
        server.last_request().unwrap().last_user_text().as_deref(),
        Some("hi")
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn one_turn_at_a_time_per_session_and_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.set_responder(|req| match req.last_user_text().as_deref() {
        Some("first") => {
            ScriptedReply::text("a very slow answer indeed").slow(Duration::from_millis(400))
        }
        _ => ScriptedReply::text("second"),
    });
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let (mut a, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let s = session.session_id.clone();
    a.send_turn(&s, "first", "c-1").await;
    assert!(matches!(a.recv().await, ServerFrame::TurnStarted { .. }));
    a.send_turn(&s, "again", "c-2").await;
    let busy = a
        .recv_until(|f| matches!(f, ServerFrame::Error { .. }))
        .await;
    match busy.last().unwrap() {
        ServerFrame::Error {
            code, reference, ..
        } => {
            assert_eq!(*code, ErrorCode::TurnInProgress);
            assert_eq!(reference.as_deref(), Some("c-2"));
        }
        other => panic!("{other:?}"),
    }
    a.send(&ClientFrame::CancelTurn {
        session_id: s.clone(),
    })
    .await;
    let end = a.recv_turn().await;
    assert!(
        matches!(
            end.last().unwrap(),
            ServerFrame::Turn {
                event: TurnEvent::TurnCancelled { .. },
                ..
            }
        ),
        "{end:?}"
    );
    // The session is free again at once.
    a.send_turn(&s, "now", "c-3").await;
    let next = a.recv_turn().await;
    assert_eq!(text_of(&next), "second");
    gw.shutdown().await;
}

#[tokio::test]
async fn reconnecting_mid_stream_loses_and_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let reply = "one two three four five six seven eight nine ten";
    server.push(ScriptedReply::text(reply).slow(Duration::from_millis(300)));
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let (mut a, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let s = session.session_id.clone();
    a.send_turn(&s, "count", "c-1").await;
    // Read up to the first delta, then drop the connection.
    let before = a
        .recv_until(|f| {
            matches!(
                f,
                ServerFrame::Turn {
                    event: TurnEvent::AssistantDelta { .. },
                    ..
                }
            )
        })
        .await;
    let last_seen = *seqs(&before).last().unwrap();
    drop(a);

    let (mut back, resumed) =
        Client::hello(&gw, dir.path(), "alice", Some(&s), Some(last_seen)).await;
    assert!(resumed.active_turn.is_some(), "the turn is still running");
    let after = back.recv_turn().await;
    let mut all = before.clone();
    all.extend(after);
    let n = seqs(&all);
    assert_eq!(n, (1..=n.len() as u64).collect::<Vec<_>>(), "{all:?}");
    assert_eq!(text_of(&all), reply);

    // A client joining without last_seq gets the whole running turn.
    server.push(ScriptedReply::text("late joiner").slow(Duration::from_millis(200)));
    back.send_turn(&s, "again", "c-2").await;
    let first = back.recv().await;
    let (mut late, _) = Client::hello(&gw, dir.path(), "alice", Some(&s), None).await;
    let late_frames = late.recv_turn().await;
    assert_eq!(late_frames.first(), Some(&first));
    assert_eq!(text_of(&late_frames), "late joiner");
    gw.shutdown().await;
}

#[tokio::test]
async fn sessions_history_paging_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice", "bob"], &server, test_config()).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    a.send(&ClientFrame::NewSession {
        title: Some("Trip".into()),
    })
    .await;
    let s = match a.recv().await {
        ServerFrame::SessionCreated { session } => {
            assert_eq!(session.title.as_deref(), Some("Trip"));
            session.session_id
        }
        other => panic!("{other:?}"),
    };
    for i in 0..5 {
        server.push(ScriptedReply::text(&format!("answer {i}")));
        a.send_turn(&s, &format!("question {i}"), &format!("c-{i}"))
            .await;
        a.recv_turn().await;
    }

    // Page backwards two messages at a time: 10 messages, oldest first within each page.
    let mut numbers = Vec::new();
    let mut before = None;
    loop {
        a.send(&ClientFrame::GetHistory {
            session_id: s.clone(),
            before,
            limit: 4,
        })
        .await;
        let ServerFrame::History {
            events,
            next_before,
            ..
        } = a.recv().await
        else {
            panic!("history expected")
        };
        let page: Vec<u64> = events.iter().map(|e| e.number).collect();
        numbers.splice(0..0, page);
        match next_before {
            Some(n) => before = Some(n),
            None => break,
        }
    }
    assert_eq!(numbers, (1..=10).collect::<Vec<_>>());

    // Bob never sees or resumes alice's session.
    let (mut b, _) = Client::hello(&gw, dir.path(), "bob", None, None).await;
    b.send(&ClientFrame::GetHistory {
        session_id: s.clone(),
        before: None,
        limit: 10,
    })
    .await;
    assert_eq!(code(&b.recv().await), ErrorCode::SessionNotFound);
    b.send(&ClientFrame::ListSessions).await;
    let ServerFrame::SessionList { sessions } = b.recv().await else {
        panic!("list expected")
    };
    assert!(sessions.iter().all(|x| x.session_id != s));
    gw.shutdown().await;

    // Restart over the same database files: the session, its title and history are there.
    let gw = start(dir.path(), &["alice", "bob"], &server, test_config()).await;
    let (mut a, resumed) = Client::hello(&gw, dir.path(), "alice", Some(&s), Some(40)).await;
    assert_eq!(resumed.title.as_deref(), Some("Trip"));
    assert_eq!(resumed.messages, 10);
    assert_eq!(resumed.active_turn, None);
    a.send(&ClientFrame::GetHistory {
        session_id: s.clone(),
        before: None,
        limit: 2,
    })
    .await;
    let ServerFrame::History { events, .. } = a.recv().await else {
        panic!("history expected")
    };
    assert_eq!(events[1].message.role, Role::Assistant);
    assert_eq!(events[1].message.content.as_deref(), Some("answer 4"));
    a.send(&ClientFrame::ListSessions).await;
    let ServerFrame::SessionList { sessions } = a.recv().await else {
        panic!("list expected")
    };
    assert!(sessions.iter().any(|x| x.session_id == s));
    let mut bob_try = Client::connect(&gw).await;
    bob_try
        .send(&ClientFrame::Hello {
            protocol_version: types::PROTOCOL_VERSION,
            token: common::token_of(dir.path(), "bob"),
            user_id: types::UserId::parse("bob").unwrap(),
            session_id: Some(s.clone()),
            last_seq: None,
        })
        .await;
    assert_eq!(code(&bob_try.recv().await), ErrorCode::SessionNotFound);
    bob_try.expect_closed().await;
    gw.shutdown().await;
}

#[tokio::test]
async fn a_stalled_client_never_blocks_the_turn_or_other_clients() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    // Big deltas so the stalled client's socket buffers fill up.
    let big = "x".repeat(3 * 1024 * 1024);
    server.push(ScriptedReply::text(&big));
    // Later calls (including any summary of the big reply) answer the same.
    server.set_responder(|_| ScriptedReply::text("still fine"));
    let config = gateway::GatewayConfig {
        client_queue: 4,
        ..test_config()
    };
    let gw = start(dir.path(), &["alice"], &server, config).await;
    let (mut a, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let s = session.session_id.clone();
    let (_stalled, _) = Client::hello(&gw, dir.path(), "alice", Some(&s), None).await;
    a.send_turn(&s, "big", "c-1").await;
    let frames = a.recv_turn().await;
    assert_eq!(text_of(&frames).len(), big.len());
    a.send_turn(&s, "small", "c-2").await;
    let second = a.recv_turn().await;
    assert_eq!(text_of(&second), "still fine", "{second:?}");
    gw.shutdown().await;
}

#[tokio::test]
async fn an_empty_new_session_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    a.send(&ClientFrame::NewSession {
        title: Some("Reading list".into()),
    })
    .await;
    let created = match a.recv().await {
        ServerFrame::SessionCreated { session } => session.session_id,
        other => panic!("{other:?}"),
    };
    drop(a);
    gw.shutdown().await;

    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", Some(&created), None).await;
    a.send(&ClientFrame::ListSessions).await;
    let sessions = match a.recv().await {
        ServerFrame::SessionList { sessions } => sessions,
        other => panic!("{other:?}"),
    };
    let stored = sessions
        .iter()
        .find(|s| s.session_id == created)
        .expect("the empty session is still listed after the restart");
    assert_eq!(
        (stored.title.as_deref(), stored.messages),
        (Some("Reading list"), 0)
    );
    gw.shutdown().await;
}
