//! The user's own MCP servers in their clients' status: against the Python SDK demo server over
//! stdio, a client gets `mcp_status` (the server up) after `hello_ok`, then again when the server
//! crashes (down, with the reason) and when it is back up; a second client connecting while it is
//! down is told so at once.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{Client, WAIT, provider, test_config, user_agent};
use gateway::Gateway;
use mcp::client::{DirectLauncher, McpClients};
use test_support::{Need, ScriptedLlm};
use tools::DynamicTools;
use types::{
    McpServerState, McpServerView, SafetyTier, ServerFrame, SessionId, ToolExecutionContext,
    TurnId, UserId, WorkspacePaths,
};

/// The servers of the next `mcp_status` frame (other frames are skipped).
async fn next_status(client: &mut Client) -> Vec<McpServerView> {
    let frames = tokio::time::timeout(
        WAIT,
        client.recv_until(|f| matches!(f, ServerFrame::McpStatus { .. })),
    )
    .await
    .expect("an mcp_status frame in time");
    match frames.last() {
        Some(ServerFrame::McpStatus { servers }) => servers.clone(),
        other => panic!("expected mcp_status, got {other:?}"),
    }
}

/// Alice's client of the demo server over stdio (its tools of `tier`, default privileged), up.
pub(crate) async fn demo_clients(root: &Path, tier: Option<SafetyTier>) -> Arc<McpClients> {
    let shared = WorkspacePaths::new(root.join("alice")).shared();
    std::fs::create_dir_all(&shared).unwrap();
    let mut config = test_support::demo_mcp_config();
    for server in config.servers.values_mut() {
        server.tier = tier;
    }
    let clients = Arc::new(McpClients::start(
        &config,
        Arc::new(DirectLauncher::new(&shared)),
        &[],
    ));
    assert!(clients.ready(Duration::from_secs(60)).await);
    clients
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn a_server_going_down_and_coming_back_reaches_every_client() {
    test_support::need(Need::McpPython);
    let root = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start().await;
    let clients = demo_clients(root.path(), None).await;
    let agent = user_agent(root.path(), "alice", provider(&llm))
        .await
        .with_mcp_clients(Arc::clone(&clients));
    let mut gw = Gateway::new(test_config());
    gw.add_user(agent).unwrap();
    let gw = gw.start().await.unwrap();

    let (mut first, _) = Client::hello(&gw, root.path(), "alice", None, None).await;
    let up = next_status(&mut first).await;
    assert_eq!(
        up,
        vec![McpServerView {
            name: "demo".into(),
            state: McpServerState::Up,
            reason: None,
            tools: 8,
        }]
    );

    let ctx = ToolExecutionContext::new(
        UserId::parse("alice").unwrap(),
        SessionId::parse("s1").unwrap(),
        TurnId::parse("t1").unwrap(),
        WorkspacePaths::new(root.path().join("alice")),
    );
    let crash = clients.get("demo__crash").unwrap();
    assert!(crash.execute(&serde_json::json!({}), &ctx).await.is_err());
    let down = next_status(&mut first).await;
    assert_eq!(down.len(), 1);
    assert_eq!(down[0].state, McpServerState::Down, "{down:?}");
    let reason = down[0].reason.clone().unwrap_or_default();
    assert!(!reason.is_empty());
    // Never the server's stderr (it may hold a stack trace).
    assert!(!reason.contains("crashing on purpose"), "{reason}");

    // A client connecting while it is down hears it at once (unless it is back already).
    let (mut second, _) = Client::hello(&gw, root.path(), "alice", None, None).await;
    let now = next_status(&mut second).await;
    assert_eq!(now[0].name, "demo");

    let back = next_status(&mut first).await;
    assert_eq!(back[0].state, McpServerState::Up, "{back:?}");
    assert_eq!(back[0].reason, None);
    if now[0].state == McpServerState::Down {
        assert_eq!(next_status(&mut second).await[0].state, McpServerState::Up);
    }
    gw.shutdown().await;
}
