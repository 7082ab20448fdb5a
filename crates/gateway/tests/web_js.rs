//! Unit tests of the web client's pure modules in the real Chromium the other browser tests
//! drive (no npm, no test framework): `web_js/pure_modules.js` imports `markdown.js`,
//! `highlight.js` and `dom.js` from a running gateway's `/assets/` and checks Markdown rendering
//! (raw HTML, `javascript:` and same-host links and images kept inert, blocks, tables, fences),
//! `safeHref`, highlighting, streaming equal to rendering at once, and the DOM helpers;
//! `web_js/memory_undo.js` drives `memory.js`'s undo of a save against a stub client, and its
//! card of a changed note.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests fail loudly")]

use gateway::GatewayConfig;
use test_support::{Need, ScriptedLlm};

use crate::browser::Browser;
use crate::common::start;

const CASES: &str = include_str!("web_js/pure_modules.js");
const MEMORY_UNDO: &str = include_str!("web_js/memory_undo.js");

/// Runs `cases` in the signed-out page of a fresh gateway (the modules imported from its own
/// origin) and returns their `{ran, failures}`, asserting there were no failures. The caller
/// asks for Chromium first (`need`).
async fn run_in_page(cases: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let mut browser = Browser::launch().await;
    browser.navigate(&gw.web_url()).await;
    browser
        .wait_for("the page", "document.readyState === 'complete'")
        .await;
    let result = browser.eval(cases).await;
    gw.shutdown().await;
    let failures = result["failures"].as_array().unwrap();
    assert!(failures.is_empty(), "{:#?}", failures);
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn the_web_clients_pure_modules_pass_their_unit_tests_in_chromium() {
    test_support::need(Need::Chromium);
    let result = run_in_page(CASES).await;
    assert!(result["ran"].as_u64().unwrap() >= 50, "{result}");
}

/// Undoing a save reads the note's history first: deleted only while unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn undoing_a_save_in_the_web_client_deletes_only_an_unchanged_note() {
    test_support::need(Need::Chromium);
    let result = run_in_page(MEMORY_UNDO).await;
    assert_eq!(result["ran"].as_u64(), Some(5), "{result}");
}
