//! The web client shows how far a running tool call got, as the TUI does: in a real headless
//! Chromium against a real gateway (the scripted model calls the Python SDK demo MCP server's
//! `hang`, which reports its progress every tenth of a second over stdio), the status line says
//! `running demo__hang (N/20: slept …s)…` while it runs and is cleared when the call ends.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::sync::Arc;

use gateway::Gateway;
use serde_json::{Value, json};
use test_support::{Need, ScriptedLlm, ScriptedReply};
use types::SafetyTier;

use crate::common::{provider, signed_in, test_config, user_agent_with};
use crate::mcp_status::demo_clients;
use crate::web_browser::{assert_no_trouble, send};

const PROGRESS: &str = "document.getElementById('progress').textContent";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and python mcp"]
async fn the_status_line_shows_a_running_calls_progress_and_clears_it_when_it_ends() {
    test_support::need(Need::Chromium);
    test_support::need(Need::McpPython);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let llm = ScriptedLlm::start().await;
    llm.push(ScriptedReply::tool_call(
        "demo__hang",
        json!({"seconds": 2}),
    ));
    llm.push(ScriptedReply::text("Awake again."));
    // No approval card in the way: this test is about progress.
    let clients = demo_clients(root, Some(SafetyTier::ReadOnly)).await;
    let dynamic = Arc::clone(&clients) as Arc<dyn tools::DynamicTools>;
    let agent = user_agent_with(root, "alice", provider(&llm), Some(dynamic))
        .await
        .with_mcp_clients(Arc::clone(&clients));
    let mut gw = Gateway::new(test_config());
    gw.add_user(agent).unwrap();
    let gw = gw.start().await.unwrap();
    let mut browser = signed_in(&gw, root, "alice").await;
    assert_eq!(browser.eval(PROGRESS).await, "");

    send(&mut browser, "sleep for two seconds").await;
    let shown = browser
        .wait_for(
            "the call's progress in the status line",
            &format!("(() => {{ const t = {PROGRESS}; return /\\(\\d+\\/20: slept/.test(t) ? t : null; }})()"),
        )
        .await;
    let shown = shown.as_str().unwrap().to_owned();
    assert!(
        shown.starts_with("running demo__hang (") && shown.ends_with("s)…"),
        "{shown}"
    );
    // The tool line of the call is there while it runs.
    assert_eq!(
        browser
            .eval("document.querySelector('details.tool.running .tool-name').textContent")
            .await,
        Value::from("demo__hang")
    );

    browser
        .wait_for(
            "the reply",
            "[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('Awake again.'))",
        )
        .await;
    assert_eq!(
        browser.eval(PROGRESS).await,
        "",
        "cleared when the call ended"
    );
    assert_eq!(
        browser
            .eval("document.querySelector('details.tool .tool-status').textContent")
            .await,
        "done"
    );
    assert_no_trouble(&mut browser, &gw).await;
    gw.shutdown().await;
}
