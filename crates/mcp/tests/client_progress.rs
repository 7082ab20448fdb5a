//! What the MCP client tells beyond a call's result, against the Python SDK demo server: the
//! server's `notifications/progress` during a call reach the call's [`ProgressSink`] (over stdio
//! and streamable HTTP), and [`McpClients::changes`] moves when a server goes down and when it
//! is back, with the status saying so.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::client::McpClients;
use serde_json::json;
use test_support::Need;
use types::{
    McpServerState, ProgressSink, SessionId, ToolExecutionContext, ToolProgress, TurnId, UserId,
    WorkspacePaths,
};

use crate::client::{HttpServer, Workspace, connect, stdio_server};

fn ctx(ws: &Workspace, sink: ProgressSink) -> ToolExecutionContext {
    let mut ctx = ToolExecutionContext::new(
        UserId::parse("alice").unwrap(),
        SessionId::parse("s1").unwrap(),
        TurnId::parse("t1").unwrap(),
        WorkspacePaths::new(ws.dir.path()),
    );
    ctx.progress = sink;
    ctx
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn progress_of_a_call_reaches_its_sink_over_both_transports() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    let http = HttpServer::start(&ws.shared()).await;
    let (_clients, registry) = connect(
        &ws,
        &[("local", stdio_server()), ("remote", http.config())],
        &[],
    )
    .await;
    for server in ["local", "remote"] {
        let seen: Arc<Mutex<Vec<ToolProgress>>> = Arc::default();
        let sink = {
            let seen = Arc::clone(&seen);
            ProgressSink::new(move |p| seen.lock().unwrap().push(p))
        };
        let args = json!({"seconds": 0.5}).to_string();
        let out = registry
            .execute(&format!("{server}__hang"), &args, &ctx(&ws, sink))
            .await;
        assert!(out.ok, "{}", out.output);
        assert_eq!(out.output, "woke up");
        let seen = seen.lock().unwrap().clone();
        assert!(seen.len() >= 3, "{server}: {seen:?}");
        assert!(
            seen.windows(2).all(|w| w[0].progress < w[1].progress),
            "{seen:?}"
        );
        assert!(seen.iter().all(|p| p.total == Some(5.0)), "{seen:?}");
        assert_eq!(seen[0].message.as_deref(), Some("slept 0.1s"));
    }
    // A call nobody listens to runs as before.
    let out = registry
        .execute(
            "local__hang",
            &json!({"seconds": 0.2}).to_string(),
            &ctx(&ws, ProgressSink::default()),
        )
        .await;
    assert_eq!(out.output, "woke up");
}

/// Waits for the next change, then returns the server's state.
async fn next_state(
    clients: &McpClients,
    rx: &mut tokio::sync::watch::Receiver<u64>,
) -> McpServerState {
    tokio::time::timeout(Duration::from_secs(30), rx.changed())
        .await
        .expect("a change in time")
        .unwrap();
    clients.status()[0].view().state
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn changes_move_when_a_server_goes_down_and_comes_back() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    let (clients, registry) = connect(&ws, &[("demo", stdio_server())], &[]).await;
    let mut rx = clients.changes();
    rx.mark_unchanged();
    assert_eq!(clients.status()[0].view().state, McpServerState::Up);
    let out = registry
        .execute("demo__crash", "{}", &ctx(&ws, ProgressSink::default()))
        .await;
    assert!(!out.ok);
    assert_eq!(next_state(&clients, &mut rx).await, McpServerState::Down);
    let down = clients.status()[0].view();
    assert!(down.reason.is_some(), "{down:?}");
    assert_eq!(down.tools, 8);
    let mut state = McpServerState::Down;
    while state != McpServerState::Up {
        state = next_state(&clients, &mut rx).await;
    }
    assert_eq!(clients.status()[0].view().reason, None);
}
