//! Privileged tool calls wait for the user: `approval_requested` reaches the client, and its
//! `approve` answer decides whether the call runs — over a real WebSocket, with the scripted model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use crate::common;

use common::{Client, start};
use gateway::GatewayConfig;
use serde_json::json;
use test_support::{ScriptedLlm, ScriptedReply};
use types::{ApprovalScope, ClientFrame, ServerFrame, TurnEvent};

/// Sends a turn whose model call asks for `shell_exec`, answers the approval with `approved`, and
/// returns the turn's frames and the tool result the model was given.
async fn privileged_turn(approved: bool) -> (Vec<ServerFrame>, String) {
    let root = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::tool_call(
        "shell_exec",
        json!({ "command": "echo hi" }),
    ));
    server.push(ScriptedReply::text("done"));
    let gw = start(root.path(), &["alice"], &server, GatewayConfig::default()).await;
    let (mut client, session) = Client::hello(&gw, root.path(), "alice", None, None).await;
    client
        .send(&ClientFrame::SendTurn {
            session_id: session.session_id.clone(),
            text: "run echo hi".into(),
            client_turn_id: "c1".into(),
        })
        .await;
    let mut frames = client
        .recv_until(|f| {
            matches!(
                f,
                ServerFrame::Turn {
                    event: TurnEvent::ApprovalRequested { .. },
                    ..
                }
            )
        })
        .await;
    let Some(ServerFrame::Turn {
        event:
            TurnEvent::ApprovalRequested {
                call_id,
                name,
                arguments,
                ..
            },
        ..
    }) = frames.last()
    else {
        panic!("no approval request: {frames:?}");
    };
    assert_eq!(name, "shell_exec");
    assert!(arguments.contains("echo hi"), "{arguments}");
    client
        .send(&ClientFrame::Approve {
            call_id: call_id.clone(),
            approved,
            scope: None,
        })
        .await;
    frames.extend(client.recv_turn().await);
    let tool_result = server
        .requests()
        .last()
        .and_then(|r| r.last_tool_result())
        .expect("the model got the tool result");
    gw.shutdown().await;
    (frames, tool_result)
}

fn tool_finished(frames: &[ServerFrame]) -> (bool, String) {
    frames
        .iter()
        .find_map(|f| match f {
            ServerFrame::Turn {
                event: TurnEvent::ToolFinished { ok, summary, .. },
                ..
            } => Some((*ok, summary.clone())),
            _ => None,
        })
        .expect("tool_finished")
}

#[tokio::test]
async fn an_approved_call_runs() {
    let (frames, result) = privileged_turn(true).await;
    // No shell-vm runs in this test, so the approved call reaches the tool, which says so.
    assert!(result.contains("shell is not running"), "{result}");
    assert!(!tool_finished(&frames).0);
    assert!(
        matches!(frames.last(), Some(ServerFrame::Turn { event: TurnEvent::TurnCompleted { message, .. }, .. }) if message == "done")
    );
}

#[tokio::test]
async fn a_declined_call_does_not_run_and_the_model_is_told() {
    let (frames, result) = privileged_turn(false).await;
    assert!(result.to_lowercase().contains("declined"), "{result}");
    assert!(
        !result.contains("shell is not running"),
        "the tool must not run: {result}"
    );
    assert!(!tool_finished(&frames).0);
    assert!(matches!(
        frames.last(),
        Some(ServerFrame::Turn {
            event: TurnEvent::TurnCompleted { .. },
            ..
        })
    ));
}

#[tokio::test]
async fn allow_for_the_session_skips_the_next_request_of_that_session_only() {
    let root = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    for _ in 0..3 {
        server.push(ScriptedReply::tool_call(
            "shell_exec",
            json!({ "command": "echo hi" }),
        ));
        server.push(ScriptedReply::text("done"));
    }
    let gw = start(root.path(), &["alice"], &server, GatewayConfig::default()).await;
    let (mut client, session) = Client::hello(&gw, root.path(), "alice", None, None).await;
    let turn = |id: &str| ClientFrame::SendTurn {
        session_id: session.session_id.clone(),
        text: "run echo hi".into(),
        client_turn_id: id.into(),
    };
    client.send(&turn("c1")).await;
    let frames = client
        .recv_until(|f| {
            matches!(
                f,
                ServerFrame::Turn {
                    event: TurnEvent::ApprovalRequested { .. },
                    ..
                }
            )
        })
        .await;
    let Some(ServerFrame::Turn {
        event: TurnEvent::ApprovalRequested { call_id, .. },
        ..
    }) = frames.last()
    else {
        panic!("no approval request: {frames:?}");
    };
    client
        .send(&ClientFrame::Approve {
            call_id: call_id.clone(),
            approved: true,
            scope: Some(ApprovalScope::Session),
        })
        .await;
    client.recv_turn().await;

    // The second call in the session runs without a request.
    client.send(&turn("c2")).await;
    let frames = client.recv_turn().await;
    assert!(
        !frames.iter().any(|f| matches!(
            f,
            ServerFrame::Turn {
                event: TurnEvent::ApprovalRequested { .. },
                ..
            }
        )),
        "{frames:?}"
    );
    let result = server
        .requests()
        .last()
        .and_then(|r| r.last_tool_result())
        .expect("the model got the tool result");
    assert!(result.contains("shell is not running"), "it ran: {result}");

    // Another session asks again.
    client.send(&ClientFrame::NewSession { title: None }).await;
    let created = client
        .recv_until(|f| matches!(f, ServerFrame::SessionCreated { .. }))
        .await;
    let Some(ServerFrame::SessionCreated { session: other }) = created.last() else {
        panic!("{created:?}");
    };
    client
        .send(&ClientFrame::SendTurn {
            session_id: other.session_id.clone(),
            text: "run echo hi".into(),
            client_turn_id: "c3".into(),
        })
        .await;
    let frames = client
        .recv_until(|f| {
            matches!(
                f,
                ServerFrame::Turn {
                    event: TurnEvent::ApprovalRequested { .. },
                    ..
                }
            )
        })
        .await;
    assert!(matches!(
        frames.last(),
        Some(ServerFrame::Turn {
            event: TurnEvent::ApprovalRequested { .. },
            ..
        })
    ));
    gw.shutdown().await;
}
