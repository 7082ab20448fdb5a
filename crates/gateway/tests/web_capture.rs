//! The web client's side of capture and of past conversations, in a real headless Chromium
//! against a real gateway (real runtime and libSQL store, capture in mode `suggest`, the scripted
//! model): after a turn the scripted capture call proposes two memories through
//! `record_memories`; the page says so, **Review** lists both as text (injected markup in one
//! stays text), the user accepts one and rejects the other, and the store holds exactly the
//! accepted one, listed in the Changes with its undo. Then, from a new session, the memory
//! panel's search in past conversations finds the first exchange (saying how it read "today")
//! and **Open** shows that session with the message marked. In mode `auto`, what capture saved is said above the chat,
//! listed in the Changes, and its **Undo** deletes the note again.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use gateway::{Gateway, RunningGateway};
use serde_json::{Value, json};
use test_support::{Need, ScriptedLlm, ScriptedReply, ScriptedToolCall};
use types::{CaptureMode, ClientFrame, ServerFrame};

use crate::browser::Browser;
use crate::common::{Client, signed_in, test_config};
use crate::web_browser::{assert_no_trouble, send};

const CELLO: &str = "The user plays the cello";
const CAT: &str = "The user's cat is <b>Miso</b> <img src=x onerror=\"alert('cat')\">";

/// Alice's gateway with capture in `mode`, and a browser signed in to it.
async fn capturing(
    root: &std::path::Path,
    server: &ScriptedLlm,
    mode: CaptureMode,
) -> (RunningGateway, Browser) {
    let mut gw = Gateway::new(test_config());
    gw.add_user(crate::capture::capturing_agent(root, "alice", server, mode).await)
        .unwrap();
    let gw = gw.start().await.unwrap();
    let browser = signed_in(&gw, root, "alice").await;
    (gw, browser)
}

/// The scripted replies of one turn ("Lovely.") and its capture call proposing `memories`.
fn turn_and_capture(server: &ScriptedLlm, memories: &[&str]) {
    let memories: Vec<Value> = memories
        .iter()
        .map(|m| json!({"action": "add", "content": m}))
        .collect();
    let record = ScriptedToolCall::new("record_memories", json!({ "memories": memories }));
    server.push_all([
        ScriptedReply::text("Lovely."),
        ScriptedReply::tool_calls(vec![record.with_id("rm")]),
    ]);
}

/// The `data-pending` id of the proposal whose text is `text`.
async fn pending_id(browser: &mut Browser, text: &str) -> Value {
    browser
        .eval(&format!(
            "[...document.querySelectorAll('li.pending')].find(li => li.querySelector('.note-text').textContent === {t}).dataset.pending",
            t = Value::from(text)
        ))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn the_web_client_reviews_captured_proposals_and_opens_a_past_conversation() {
    test_support::need(Need::Chromium);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let server = ScriptedLlm::start().await;
    let (gw, mut browser) = capturing(root, &server, CaptureMode::Suggest).await;
    turn_and_capture(&server, &[CELLO, CAT]);
    send(&mut browser, "I play the cello on Sundays; my cat is Miso").await;

    // The capture's notice, then its proposals, each shown as text.
    browser
        .wait_for(
            "the capture notice",
            "[...document.querySelectorAll('#notifications li.capture')].some(n => n.textContent.includes('2 memories proposed'))",
        )
        .await;
    browser.click("#notifications li.capture button.link").await;
    browser
        .wait_for(
            "both proposals",
            "document.querySelectorAll('#notes li.pending').length === 2",
        )
        .await;
    let shown = browser
        .eval(
            "(() => ({
                texts: [...document.querySelectorAll('#notes li.pending .note-text')].map(n => n.textContent),
                markup: document.querySelectorAll('#memory b, #memory img, #memory script').length,
                button: document.getElementById('pending-memories').textContent,
            }))()",
        )
        .await;
    assert_eq!(shown["texts"], json!([CELLO, CAT]), "{shown}");
    assert_eq!(shown["markup"], 0, "{shown}");
    assert_eq!(shown["button"], "Pending (2)", "{shown}");

    // Accept one, reject the other.
    let cello = pending_id(&mut browser, CELLO).await;
    let cat = pending_id(&mut browser, CAT).await;
    browser
        .click(&format!(
            "li.pending[data-pending='{}'] button.primary",
            cello.as_str().unwrap()
        ))
        .await;
    browser
        .wait_for(
            "the accepted change",
            "[...document.querySelectorAll('#changes li.change')].some(c => c.textContent.includes('captured: saved “The user plays the cello”'))",
        )
        .await;
    browser
        .click(&format!(
            "li.pending[data-pending='{}'] .note-actions button:not(.primary)",
            cat.as_str().unwrap()
        ))
        .await;
    browser
        .wait_for(
            "the proposals answered",
            "document.querySelectorAll('#notes li.pending').length === 0 \
             && document.querySelector('#memory .notice').textContent.includes('Rejected')",
        )
        .await;

    // The store holds exactly the accepted proposal, and nothing is left pending.
    let (mut check, _) = Client::hello(&gw, root, "alice", None, None).await;
    assert_eq!(crate::notes::listed(&mut check).await, [CELLO]);
    check.send(&ClientFrame::ListPendingMemories).await;
    assert_eq!(
        check.recv().await,
        ServerFrame::PendingMemories {
            memories: Vec::new()
        }
    );

    // A search of the notes says how it read "today" too.
    browser.fill("#note-search", "cello today").await;
    browser.click("#memory form button[type=submit]").await;
    browser
        .wait_for(
            "the note found, the time read",
            "document.querySelector('#memory .notice').textContent.includes('(read \"today\" as on ') \
             && [...document.querySelectorAll('#notes li.note .note-text')].some(n => n.textContent === 'The user plays the cello')",
        )
        .await;

    // From a new session, the first conversation is found and opened at the message.
    browser.click("#new-session").await;
    browser
        .wait_for(
            "the new session",
            "document.getElementById('title').textContent === 'New conversation' && !document.querySelector('.msg')",
        )
        .await;
    browser
        .eval("document.getElementById('search-scope').value = 'conversations'")
        .await;
    browser.fill("#note-search", "cello Sundays today").await;
    browser.click("#memory form button[type=submit]").await;
    browser
        .wait_for(
            "the conversation hit",
            "[...document.querySelectorAll('#notes li.hit .note-text')].some(n => n.textContent.includes('cello on Sundays'))",
        )
        .await;
    // The search says how it read "today".
    let status = browser
        .eval("document.querySelector('#memory .notice').textContent")
        .await;
    assert!(
        status
            .as_str()
            .is_some_and(|s| s.contains("(read \"today\" as on ")),
        "{status}"
    );
    browser.click("#notes li.hit .note-actions button").await;
    browser
        .wait_for(
            "the message shown in its session",
            "(document.querySelector('#transcript .msg.found') || {}).textContent === 'I play the cello on Sundays; my cat is Miso'",
        )
        .await;

    assert_no_trouble(&mut browser, &gw).await;
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn what_capture_saved_is_said_and_can_be_undone_in_the_web_client() {
    test_support::need(Need::Chromium);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let server = ScriptedLlm::start().await;
    let (gw, mut browser) = capturing(root, &server, CaptureMode::Auto).await;
    turn_and_capture(&server, &[CELLO]);
    send(&mut browser, "I play the cello on Sundays").await;
    browser
        .wait_for(
            "the capture notice",
            "[...document.querySelectorAll('#notifications li.capture')].some(n => n.textContent.includes('captured: saved “The user plays the cello”'))",
        )
        .await;
    let (mut check, _) = Client::hello(&gw, root, "alice", None, None).await;
    assert_eq!(crate::notes::listed(&mut check).await, [CELLO]);
    // Nothing to review in mode auto: the notice offers no Review.
    let review = browser
        .eval("document.querySelectorAll('#notifications li.capture button').length")
        .await;
    assert_eq!(review, 1, "only the dismiss button");

    browser.click("#changes li.change button").await;
    browser
        .wait_for(
            "the undo",
            "document.querySelector('#changes .change-state').textContent.includes('undone')",
        )
        .await;
    assert!(crate::notes::listed(&mut check).await.is_empty());
    assert_no_trouble(&mut browser, &gw).await;
    gw.shutdown().await;
}
