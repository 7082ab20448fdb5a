//! Capture over the gateway: what capture proposes after a turn is pushed to the user's clients
//! (`memory_captured`), listed (`list_pending_memories`), accepted into a note through the memory
//! pipeline (`accept_memory`) or dropped (`reject_memory`) — through real WebSocket connections
//! and a real libSQL file. Another user's clients hear nothing of it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use crate::common;

use common::{Client, code, provider, test_config};
use gateway::{Gateway, GatewayToken, UserAgent};
use serde_json::json;
use test_support::{ScriptedLlm, ScriptedReply, ScriptedToolCall};
use types::{
    CaptureConfig, CaptureMode, ClientFrame, ErrorCode, ServerFrame, UserId, WorkspacePaths,
};

pub(crate) async fn capturing_agent(
    root: &std::path::Path,
    user: &str,
    server: &ScriptedLlm,
    mode: CaptureMode,
) -> UserAgent {
    let ws = WorkspacePaths::new(root.join(user));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).unwrap();
    }
    let token = GatewayToken::load_or_create(&ws.internal()).unwrap();
    let store = common::open_store(root, user).await;
    let capture = CaptureConfig {
        mode,
        idle_secs: 0,
        ..CaptureConfig::default()
    };
    let runtime = common::runtime(&store, provider(server)).with_capture(capture, None);
    UserAgent::new(UserId::parse(user).unwrap(), token, ws, runtime)
}

#[tokio::test]
async fn proposals_reach_the_users_clients_and_are_accepted_or_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let server = ScriptedLlm::start().await;
    let mut gw = Gateway::new(test_config());
    gw.add_user(capturing_agent(root, "alice", &server, CaptureMode::Suggest).await)
        .unwrap();
    gw.add_user(common::user_agent(root, "bob", provider(&server)).await)
        .unwrap();
    let gw = gw.start().await.unwrap();
    let (mut alice, session) = Client::hello(&gw, root, "alice", None, None).await;
    let (mut bob, _) = Client::hello(&gw, root, "bob", None, None).await;

    let record = ScriptedToolCall::new(
        "record_memories",
        json!({"memories": [
            {"action": "add", "content": "The user plays the cello"},
            {"action": "add", "content": "The user's son Leo is six"},
        ]}),
    );
    server.push_all([
        ScriptedReply::text("Lovely."),
        ScriptedReply::tool_calls(vec![record.with_id("rm")]),
    ]);
    alice
        .send_turn(
            &session.session_id,
            "I play the cello; my son Leo is six",
            "c1",
        )
        .await;
    alice.recv_turn().await;
    let frames = alice
        .recv_until(|f| matches!(f, ServerFrame::MemoryCaptured { .. }))
        .await;
    let Some(ServerFrame::MemoryCaptured { report }) = frames.last() else {
        panic!("{frames:?}");
    };
    assert_eq!(report.session_id, session.session_id.as_str());
    assert_eq!(report.pending.len(), 2, "{report:?}");

    alice.send(&ClientFrame::ListPendingMemories).await;
    let ServerFrame::PendingMemories { memories } = alice.recv().await else {
        panic!("pending_memories expected");
    };
    assert_eq!(memories, report.pending);
    let (first, second) = (memories[0].id, memories[1].id);

    alice.send(&ClientFrame::AcceptMemory { id: first }).await;
    match alice.recv().await {
        ServerFrame::MemoryAccepted {
            id,
            change: Some(change),
        } => {
            assert_eq!(id, first);
            assert_eq!(
                (change.action.as_str(), change.text.as_str()),
                ("added", "The user plays the cello")
            );
        }
        other => panic!("{other:?}"),
    }
    alice.send(&ClientFrame::RejectMemory { id: second }).await;
    assert_eq!(
        alice.recv().await,
        ServerFrame::MemoryRejected { id: second }
    );
    // Gone: a second answer is refused and changes nothing.
    alice.send(&ClientFrame::AcceptMemory { id: second }).await;
    assert_eq!(code(&alice.recv().await), ErrorCode::InvalidRequest);
    assert_eq!(
        crate::notes::listed(&mut alice).await,
        ["The user plays the cello"]
    );

    // Bob heard nothing of it, and has no proposals of alice's.
    bob.send(&ClientFrame::Ping).await;
    assert_eq!(bob.recv().await, ServerFrame::Pong);
    bob.send(&ClientFrame::ListPendingMemories).await;
    assert_eq!(
        bob.recv().await,
        ServerFrame::PendingMemories {
            memories: Vec::new()
        }
    );
    bob.send(&ClientFrame::AcceptMemory { id: first }).await;
    assert_eq!(code(&bob.recv().await), ErrorCode::InvalidRequest);
}
