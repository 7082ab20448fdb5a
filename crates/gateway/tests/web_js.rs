//! Unit tests of the web client's pure modules in the real Chromium the other browser tests
//! drive (no npm, no test framework): `web_js/pure_modules.js` imports `markdown.js`,
//! `highlight.js` and `dom.js` from a running gateway's `/assets/` and checks Markdown rendering
//! (raw HTML, `javascript:` and same-host links and images kept inert, blocks, tables, fences),
//! `safeHref`, highlighting, streaming equal to rendering at once, and the DOM helpers.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests fail loudly")]

use gateway::GatewayConfig;
use test_support::{Need, ScriptedLlm};

use crate::browser::Browser;
use crate::common::start;

const CASES: &str = include_str!("web_js/pure_modules.js");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn the_web_clients_pure_modules_pass_their_unit_tests_in_chromium() {
    test_support::need(Need::Chromium);
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let mut browser = Browser::launch().await;
    // The signed-out page: the modules are imported from the gateway's own origin.
    browser.navigate(&gw.web_url()).await;
    browser
        .wait_for("the page", "document.readyState === 'complete'")
        .await;
    let result = browser.eval(CASES).await;
    let failures = result["failures"].as_array().unwrap();
    assert!(failures.is_empty(), "{:#?}", failures);
    assert!(result["ran"].as_u64().unwrap() >= 50, "{result}");
    gw.shutdown().await;
}
