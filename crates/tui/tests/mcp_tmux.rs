//! End to end through tmux: the real `oxydra-tui` on a real gateway whose agent has one MCP
//! server (the Python SDK demo server over stdio). When the server crashes the status bar says
//! `MCP down: demo` and the transcript says why; when it is restarted the transcript says it is
//! back and the status bar no longer names it.
//!
//! Needs `tmux` and the MCP Python SDK (`OXYDRA_MCP_PYTHON`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::sync::Arc;
use std::time::Duration;

use crate::common;

use mcp::client::{DirectLauncher, McpClients};
use test_support::{Need, ScriptedLlm};
use tools::DynamicTools;
use types::{SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux and python mcp"]
async fn a_crashed_mcp_server_shows_in_the_status_bar_until_it_is_back_in_tmux() {
    test_support::need(Need::Tmux);
    test_support::need(Need::McpPython);
    let dir = tempfile::tempdir().unwrap();
    let ws = WorkspacePaths::new(dir.path().join("alice"));
    std::fs::create_dir_all(ws.shared()).unwrap();
    let clients = Arc::new(McpClients::start(
        &test_support::demo_mcp_config(),
        Arc::new(DirectLauncher::new(ws.shared())),
        &[],
    ));
    assert!(clients.ready(Duration::from_secs(60)).await);
    let llm = ScriptedLlm::start().await;
    let (gw, token_file) = common::gateway_with(
        dir.path(),
        "alice",
        &llm,
        types::MemoryDialect::Notes.into(),
        Some(Arc::clone(&clients)),
    )
    .await;
    let tmux = common::client_in_tmux("oxydra-tui-mcp", &gw, &token_file);
    let screen = tmux
        .wait_for("the connection", |s| s.contains("● connected"))
        .await;
    assert!(!screen.contains("MCP down"), "{screen}");

    let ctx = ToolExecutionContext::new(
        UserId::parse("alice").unwrap(),
        SessionId::parse("s1").unwrap(),
        TurnId::parse("t1").unwrap(),
        ws.clone(),
    );
    let crash = clients.get("demo__crash").unwrap();
    assert!(crash.execute(&serde_json::json!({}), &ctx).await.is_err());
    tmux.wait_for("the server down", |s| {
        s.contains("MCP server demo is down") && s.contains("⚠ MCP down: demo")
    })
    .await;
    let screen = tmux
        .wait_for("the server back", |s| {
            s.contains("MCP server demo is back up.")
        })
        .await;
    assert!(!screen.contains("⚠ MCP down"), "{screen}");
    gw.shutdown().await;
}
