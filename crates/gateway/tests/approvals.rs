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
use types::{ClientFrame, ServerFrame};

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
        .recv_until(|f| matches!(f, ServerFrame::ApprovalRequested { .. }))
        .await;
    let Some(ServerFrame::ApprovalRequested {
        call_id,
        name,
        arguments,
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
            ServerFrame::ToolFinished { ok, summary, .. } => Some((*ok, summary.clone())),
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
        matches!(frames.last(), Some(ServerFrame::TurnCompleted { message, .. }) if message == "done")
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
        Some(ServerFrame::TurnCompleted { .. })
    ));
}
