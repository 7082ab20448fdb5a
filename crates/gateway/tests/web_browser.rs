//! The web client in a real headless Chromium against a real gateway (real runtime and libSQL
//! store, the scripted model): sign in with a one-time link, a streamed Markdown reply carrying
//! script/HTML injection that must not run (no dialog, no request to another origin, no CSP
//! violation or script error), a memory change of the turn and an edit in the memory panel undone,
//! an approval answered deliberately, a 390×844 screenshot kept under `target/`, sign-out and
//! sign-in with a pasted token; the page resuming after the agent restarts mid-reply; and
//! schedules' notifications (one missed while away, one made in a turn) shown as text, with
//! injected markup in their title and text not run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::time::Duration;

use gateway::{GatewayConfig, RunningGateway};
use serde_json::json;
use test_support::{Need, ScriptedLlm, ScriptedReply};

use crate::browser::Browser;
use crate::common::{Client, ONLINE, sign_in_by_link, signed_in, start, token_of};

const INJECTION: &str = "# Trip notes\n\nHere is **bold**, `code` and a table:\n\n| city | days |\n|---|---:|\n| Lisbon | 3 |\n\n\
<script>alert('script')</script> <img src=x onerror=\"alert('img')\">\n\n\
[click me](javascript:alert('link')) ![pic](http://evil.example/p.png) [fine](https://example.org/)\n\n\
```rust\nfn main() { println!(\"hi\"); }\n```\n\nEND-OF-REPLY";

pub(crate) async fn send(browser: &mut Browser, text: &str) {
    browser.fill("#input", text).await;
    browser.key("Enter").await;
}

/// Lets the page settle (300 ms), then asserts it had no [`trouble`].
pub(crate) async fn assert_no_trouble(browser: &mut Browser, gw: &RunningGateway) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    browser.eval("1").await;
    assert_eq!(trouble(browser, gw), Vec::<String>::new());
}

/// Dialogs, requests to anything but the gateway, script errors and CSP reports seen so far.
fn trouble(browser: &Browser, gw: &RunningGateway) -> Vec<String> {
    let own = format!("http://{}/", gw.local_addr());
    let own_ws = format!("ws://{}/", gw.local_addr());
    let mut found = Vec::new();
    for e in browser.events_of("Page.javascriptDialogOpening") {
        found.push(format!("dialog: {e}"));
    }
    for e in browser.events_of("Network.requestWillBeSent") {
        let url = e["params"]["request"]["url"].as_str().unwrap_or("");
        if !(url.starts_with(&own) || url.starts_with(&own_ws) || url.starts_with("about:")) {
            found.push(format!("request: {url}"));
        }
    }
    for e in browser.events_of("Runtime.exceptionThrown") {
        found.push(format!("exception: {e}"));
    }
    for e in browser.events_of("Log.entryAdded") {
        let text = e["params"]["entry"]["text"].as_str().unwrap_or("");
        if text.contains("Content Security Policy") || e["params"]["entry"]["level"] == "error" {
            found.push(format!("log: {text}"));
        }
    }
    for e in browser.events_of("Runtime.consoleAPICalled") {
        if e["params"]["type"] == "error" {
            found.push(format!("console: {e}"));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn the_web_client_chats_approves_undoes_memory_and_runs_no_injected_code() {
    test_support::need(Need::Chromium);
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::text(INJECTION).with_usage(120, 45));
    server.push(ScriptedReply::tool_call(
        "memory_save",
        json!({"content": "Lives in Lisbon <img src=x onerror=\"alert('note')\"> [x](javascript:alert(2))"}),
    ));
    server.push(ScriptedReply::text("Saved it."));
    server.push(ScriptedReply::tool_call(
        "shell_exec",
        json!({"command": "echo hi"}),
    ));
    server.push(ScriptedReply::text("ran it"));
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let token = token_of(dir.path(), "alice");
    let mut browser = Browser::launch().await;
    browser.viewport(390, 844).await;
    sign_in_by_link(&mut browser, &gw, &token).await;
    assert_eq!(
        browser
            .eval("document.getElementById('model').textContent")
            .await,
        "model: scripted-model"
    );

    // A streamed Markdown reply full of injection attempts.
    send(&mut browser, "plan my trip").await;
    browser
        .wait_for(
            "the reply",
            "[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('END-OF-REPLY'))",
        )
        .await;
    let shape = browser
        .eval(
            "(() => { const t = document.getElementById('transcript'); return {
                script: t.querySelectorAll('script, img, iframe').length,
                table: t.querySelectorAll('table td').length,
                h: t.querySelectorAll('h3').length,
                code: t.querySelectorAll('pre code .hl-keyword').length,
                js: [...t.querySelectorAll('a')].filter(a => !/^https?:/.test(a.href)).length,
                safe: [...t.querySelectorAll('a')].map(a => a.href + ' ' + a.rel),
                usage: document.getElementById('usage').textContent,
            }; })()",
        )
        .await;
    assert_eq!(shape["script"], 0, "{shape}");
    assert_eq!(shape["table"], 2, "{shape}");
    assert_eq!(shape["h"], 1, "{shape}");
    assert!(shape["code"].as_u64().unwrap() >= 1, "{shape}");
    assert_eq!(shape["js"], 0, "no javascript: link: {shape}");
    // The image is not loaded: it is a link (to another host, without opener or referrer).
    assert_eq!(
        shape["safe"],
        json!([
            "http://evil.example/p.png noopener noreferrer nofollow",
            "https://example.org/ noopener noreferrer nofollow"
        ])
    );
    assert!(
        shape["usage"].as_str().unwrap().contains("120 in, 45 out"),
        "{shape}"
    );
    // Once the turn completes, the page asks the gateway for the session's whole spend.
    browser
        .wait_for(
            "the session's usage from the gateway",
            "document.getElementById('usage').textContent.includes('scripted-model · session: 120 in, 45 out')",
        )
        .await;

    // The agent saves a note (with injection in it): the turn lists the change, with an undo.
    send(&mut browser, "remember where I live").await;
    browser
        .wait_for(
            "the change line",
            "document.querySelector('ul.changes li.change')",
        )
        .await;

    // The memory panel: the note, edited, then the edit undone.
    browser.click("#toggle-memory").await;
    browser
        .wait_for(
            "the note",
            "[...document.querySelectorAll('li.note')].some(n => n.textContent.includes('Lives in Lisbon'))",
        )
        .await;
    browser.click("li.note .note-actions button").await;
    browser.fill("li.note textarea", "Lives in Porto").await;
    browser.click("li.note form button[type=submit]").await;
    browser
        .wait_for(
            "the edited note",
            "[...document.querySelectorAll('li.note .note-text')].some(n => n.textContent === 'Lives in Porto')",
        )
        .await;
    let (mut check, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    check.send_raw(r#"{"type":"list_notes","limit":10}"#).await;
    let edited = serde_json::to_value(check.recv().await).unwrap();
    assert_eq!(edited["notes"][0]["text"], "Lives in Porto");
    browser.click("#changes li.change button").await;
    browser
        .wait_for(
            "the undo",
            "document.querySelector('#changes .change-state').textContent.includes('undone')",
        )
        .await;
    check.send_raw(r#"{"type":"list_notes","limit":10}"#).await;
    let undone = serde_json::to_value(check.recv().await).unwrap();
    assert!(
        undone["notes"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Lives in Lisbon <img"),
        "{undone}"
    );
    browser.click("#toggle-memory").await;

    // An approval: picking only selects; Confirm sends.
    send(&mut browser, "run echo").await;
    browser
        .wait_for("the approval", "document.querySelector('.approval')")
        .await;
    browser.click(".approval .choice").await;
    assert_eq!(
        browser
            .eval("document.querySelector('.approval').dataset.answered || ''")
            .await,
        "",
        "a pick alone answers nothing"
    );
    browser.click(".approval button.primary").await;
    browser
        .wait_for(
            "the reply after the approval",
            "[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('ran it'))",
        )
        .await;
    let requests = server.requests();
    let tool_result = requests
        .last()
        .unwrap()
        .last_tool_result()
        .unwrap_or_default();
    assert!(!tool_result.contains("declined"), "{tool_result}");

    // The phone-sized screenshot, kept as an artefact of the run.
    let png = browser.screenshot().await;
    assert_eq!(&png[..4], b"\x89PNG");
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/web-client");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("chat-390x844.png"), &png).unwrap();

    // Nothing injected ran or loaded, and the page had no error.
    assert_no_trouble(&mut browser, &gw).await;

    // Sign out ends the session; a pasted token signs in again.
    browser.click("#signout").await;
    browser
        .wait_for(
            "the sign-in page",
            "!document.getElementById('signin').hidden",
        )
        .await;
    browser.fill("#token", &token).await;
    browser.click("#signin-form button[type=submit]").await;
    browser.wait_for("online again", ONLINE).await;
    let stored = browser
        .eval("JSON.stringify(localStorage) + document.cookie + location.href")
        .await;
    assert!(!stored.as_str().unwrap().contains(&token), "{stored}");
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn the_page_resumes_after_the_agent_restarts_mid_reply() {
    test_support::need(Need::Chromium);
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let long: String = (1..=200).map(|i| format!("word{i} ")).collect();
    server.push(ScriptedReply::text(&long).slow(Duration::from_millis(40)));
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let port = gw.local_addr().port();
    let mut browser = signed_in(&gw, dir.path(), "alice").await;
    send(&mut browser, "tell me a long story").await;
    browser
        .wait_for(
            "part of the reply",
            "document.querySelector('.msg.assistant') && document.querySelector('.msg.assistant').textContent.includes('word3')",
        )
        .await;

    // The agent restarts (same workspace, same port) while the reply streams.
    gw.shutdown().await;
    server.push(ScriptedReply::text("after the restart"));
    let config = GatewayConfig {
        port,
        ..GatewayConfig::default()
    };
    let gw = start(dir.path(), &["alice"], &server, config).await;
    browser
        .wait_for(
            "the restart noticed",
            "document.getElementById('transcript').textContent.includes('The agent restarted')",
        )
        .await;
    browser.wait_for("online again", ONLINE).await;
    // The stored conversation is shown once: the question appears exactly once.
    browser
        .wait_for(
            "the conversation reloaded",
            "[...document.querySelectorAll('.msg.user')].filter(m => m.textContent === 'tell me a long story').length === 1",
        )
        .await;
    send(&mut browser, "still there?").await;
    browser
        .wait_for(
            "a reply after the restart",
            "[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('after the restart'))",
        )
        .await;
    let words = browser
        .eval("(document.getElementById('transcript').textContent.match(/word1 /g) || []).length")
        .await;
    assert!(words.as_u64().unwrap() <= 1, "no text shown twice: {words}");
    assert_eq!(trouble(&browser, &gw), Vec::<String>::new());
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn a_schedules_notification_is_shown_as_text_and_runs_nothing() {
    test_support::need(Need::Chromium);
    let dir = tempfile::tempdir().unwrap();
    let alice = types::UserId::parse("alice").unwrap();
    {
        // Due while the agent was down: it runs at start, late, and waits unread.
        let store = crate::common::open_store(dir.path(), "alice").await;
        let ago = chrono::Utc::now() - chrono::Duration::minutes(10);
        let missed = crate::schedules::due_at("missed", ago, None);
        store
            .schedules()
            .create(&alice, missed, 10, None)
            .await
            .unwrap();
    }
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::text("done while you were away"));
    let args = json!({
        "when": "in 2 seconds",
        "title": "Stretch <img src=x onerror=\"alert('title')\">",
        "instruction": "Remind the user to stretch.",
    });
    server.push_all([
        ScriptedReply::tool_call("schedule_create", args),
        ScriptedReply::text("I will remind you."),
        ScriptedReply::text("Time to stretch! <img src=x onerror=\"alert('text')\">"),
    ]);
    let (gw, store) =
        crate::schedules::gateway(dir.path(), &server, types::ProviderKind::Openai).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while store
        .schedules()
        .unread_notifications(&alice, 10)
        .await
        .unwrap()
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the missed run never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut browser = signed_in(&gw, dir.path(), "alice").await;
    browser
        .wait_for(
            "the missed notification",
            "document.querySelectorAll('#notifications li.notification').length === 1",
        )
        .await;
    let missed = browser
        .eval("document.querySelector('#notifications li.notification').textContent")
        .await;
    assert!(
        missed
            .as_str()
            .unwrap()
            .starts_with("⏰ missed (late, while you were away): done while you were away"),
        "{missed}"
    );
    send(&mut browser, "remind me in 2 seconds to stretch").await;
    browser
        .wait_for(
            "the notification",
            "document.querySelectorAll('#notifications li.notification').length === 2",
        )
        .await;
    let shown = browser
        .eval(
            "(() => { const n = document.querySelectorAll('#notifications li.notification')[1]; return {
                title: n.querySelector('.notification-title').textContent,
                text: n.querySelector('.notification-text').textContent,
                marks: (n.querySelector('.notification-marks') || {}).textContent || '',
                elements: document.querySelectorAll('#notifications img, #notifications script').length,
            }; })()",
        )
        .await;
    assert_eq!(
        shown["title"], "Stretch <img src=x onerror=\"alert('title')\">",
        "{shown}"
    );
    assert_eq!(
        shown["text"], "Time to stretch! <img src=x onerror=\"alert('text')\">",
        "{shown}"
    );
    assert_eq!(shown["marks"], "", "on time and seen live: {shown}");
    assert_eq!(shown["elements"], 0, "{shown}");
    assert_no_trouble(&mut browser, &gw).await;
    gw.shutdown().await;
}
