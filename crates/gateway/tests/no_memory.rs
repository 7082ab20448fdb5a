//! A user whose agent runs without a memory store (`[memory] enabled = false`): the gateway still
//! creates, titles, lists and pages sessions — it reads them through the runtime, which keeps them
//! in process memory — and another user never sees them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use crate::common;

use common::{Client, code, provider, test_config, user_agent_without_memory};
use gateway::Gateway;
use test_support::{ScriptedLlm, ScriptedReply};
use types::{ClientFrame, ErrorCode, ServerFrame, TurnEvent};

#[tokio::test]
async fn sessions_and_history_work_without_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let mut gw = Gateway::new(test_config());
    for user in ["alice", "bob"] {
        gw.add_user(user_agent_without_memory(
            dir.path(),
            user,
            provider(&server),
        ))
        .unwrap();
    }
    let gw = gw.start().await.unwrap();

    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    a.send(&ClientFrame::NewSession {
        title: Some("Trip".into()),
    })
    .await;
    let s = match a.recv().await {
        ServerFrame::SessionCreated { session } => session.session_id,
        other => panic!("{other:?}"),
    };
    for i in 0..3 {
        server.push(ScriptedReply::text(&format!("answer {i}")));
        a.send_turn(&s, &format!("question {i}"), &format!("c-{i}"))
            .await;
        let frames = a.recv_turn().await;
        assert!(
            matches!(
                frames.last(),
                Some(ServerFrame::Turn {
                    event: TurnEvent::TurnCompleted { .. },
                    ..
                })
            ),
            "{frames:?}"
        );
    }
    let tools = server.last_request().unwrap().tool_names();
    assert!(tools.iter().all(|t| !t.starts_with("memory_")), "{tools:?}");

    a.send(&ClientFrame::GetHistory {
        session_id: s.clone(),
        before: Some(5),
        limit: 2,
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
    let numbers: Vec<u64> = events.iter().map(|e| e.number).collect();
    assert_eq!((numbers, next_before), (vec![3, 4], Some(3)));
    assert_eq!(events[1].message.content.as_deref(), Some("answer 1"));

    a.send(&ClientFrame::ListSessions).await;
    let ServerFrame::SessionList { sessions } = a.recv().await else {
        panic!("list expected")
    };
    let trip = sessions.iter().find(|x| x.session_id == s).unwrap();
    assert_eq!((trip.title.as_deref(), trip.messages), (Some("Trip"), 6));

    let (mut b, _) = Client::hello(&gw, dir.path(), "bob", None, None).await;
    b.send(&ClientFrame::GetHistory {
        session_id: s.clone(),
        before: None,
        limit: 10,
    })
    .await;
    assert_eq!(code(&b.recv().await), ErrorCode::SessionNotFound);
    gw.shutdown().await;
}
