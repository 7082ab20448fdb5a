//! The web client's two timing targets of issue 37, measured in a real headless Chromium against
//! a real gateway and printed (a bench: nothing here asserts a time, see `docs/benchmarks.md`):
//! the first paint after signing in with a one-time link (the `first-contentful-paint` entry; the
//! page paints nothing before it knows the user is signed in), and the longest main-thread block
//! while a 5,000-word reply streams (`longtask` entries, which the browser records for tasks over
//! 50 ms, and the largest gap between 10 ms timer ticks, which sees shorter blocks too).
//! Run: `cargo test -p gateway --test all -- --include-ignored --nocapture web_timing`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use gateway::GatewayConfig;
use serde_json::json;
use test_support::{Need, ScriptedLlm, ScriptedReply};

use crate::browser::Browser;
use crate::common::{sign_in_by_link, start, token_of};
use crate::web_browser::send;

const RUNS: usize = 5;

/// Installed in every new document before its scripts: records long tasks and the largest gap
/// between timer ticks since `window.__gapReset()`.
const PROBE: &str = "window.__long = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); })
  .observe({ type: 'longtask', buffered: true });
window.__gap = 0; let last = performance.now();
setInterval(() => { const now = performance.now(); window.__gap = Math.max(window.__gap, now - last - 10); last = now; }, 10);
window.__gapReset = () => { window.__gap = 0; window.__long = []; last = performance.now(); };";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium; a bench that prints the web client's timings"]
async fn web_timing_first_paint_and_longest_block_while_streaming() {
    test_support::need(Need::Chromium);
    let words: String = (1..=5000).map(|i| format!("word{i} ")).collect();
    for run in 1..=RUNS {
        let dir = tempfile::tempdir().unwrap();
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::text(&format!("{words}END-OF-REPLY")));
        let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
        let token = token_of(dir.path(), "alice");
        let mut browser = Browser::launch().await;
        browser
            .call(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": PROBE}),
            )
            .await;
        sign_in_by_link(&mut browser, &gw, &token).await;
        browser
            .wait_for(
                "the first paint entry",
                "performance.getEntriesByName('first-contentful-paint').length",
            )
            .await;
        let paint = browser
            .eval(
                "(() => { const p = performance.getEntriesByName('first-contentful-paint')[0];
                  const n = performance.getEntriesByType('navigation')[0];
                  return { fcp: p ? p.startTime : null, response: n.responseEnd }; })()",
            )
            .await;
        browser.eval("window.__gapReset()").await;
        browser.call("Performance.enable", json!({})).await;
        send(&mut browser, "tell me a long story").await;
        browser
            .wait_for(
                "the whole reply",
                "[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('END-OF-REPLY'))",
            )
            .await;
        let block = browser
            .eval("({ long: window.__long, gap: window.__gap })")
            .await;
        let metrics = browser.call("Performance.getMetrics", json!({})).await;
        let metric = |name: &str| {
            metrics["metrics"]
                .as_array()
                .and_then(|m| m.iter().find(|v| v["name"] == name))
                .map(|v| v["value"].as_f64().unwrap_or(0.0))
                .unwrap_or(0.0)
        };
        let longest = block["long"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_f64())
            .fold(0.0_f64, f64::max);
        println!(
            "web_timing run {run}: first contentful paint {:.1} ms after navigation (document \
             received at {:.1} ms); streaming 5,000 words: longtasks {} (longest {longest:.1} ms), \
             largest timer gap {:.1} ms; page totals since the send: tasks {:.0} ms, script {:.0} ms, layout {:.0} ms",
            paint["fcp"].as_f64().unwrap_or(f64::NAN),
            paint["response"].as_f64().unwrap_or(f64::NAN),
            block["long"].as_array().unwrap().len(),
            block["gap"].as_f64().unwrap_or(f64::NAN),
            metric("TaskDuration") * 1000.0,
            metric("ScriptDuration") * 1000.0,
            metric("LayoutDuration") * 1000.0,
        );
        gw.shutdown().await;
    }
}
