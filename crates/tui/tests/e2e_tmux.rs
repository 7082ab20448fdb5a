//! End to end: the real `oxydra-tui` binary inside tmux, against a real gateway with the scripted
//! model. Type a message, watch the streamed reply and the memory_save line, `/new`, ask again,
//! and see the note recalled from the other session through memory_search. Then `/quit` and check
//! the terminal was given back (alternate screen left, exit status 0).
//!
//! Needs `tmux`: the test is `#[ignore = "needs tmux"]` and fails without it when run
//! (`scripts/test.sh` runs it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr,
    reason = "tests fail loudly and say when they skip"
)]

use crate::common;

use serde_json::{Value, json};
use test_support::{RecordedRequest, ScriptedLlm, ScriptedReply, ScriptedToolCall};

const NOTE: &str = "Alice loves the old yellow trams in Lisbon";

/// The tool results sent since the turn's user message.
fn results_since_user(req: &RecordedRequest) -> usize {
    req.messages()
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "tool")
        .count()
}

/// First session: save a note. Any later question: search memory and answer from the first hit.
fn respond(req: &RecordedRequest) -> ScriptedReply {
    let Some(text) = req.last_user_text() else {
        return ScriptedReply::text("ok");
    };
    let remember = text.starts_with("Remember");
    match (remember, results_since_user(req)) {
        (true, 0) => ScriptedReply::tool_calls(vec![ScriptedToolCall::new(
            "memory_save",
            json!({ "content": NOTE }),
        )]),
        (true, _) => {
            ScriptedReply::text("Noted: I **saved** that you love the trams. Anything else?")
        }
        (false, 0) => ScriptedReply::tool_calls(vec![ScriptedToolCall::new(
            "memory_search",
            json!({ "query": "trams Lisbon" }),
        )]),
        (false, _) => {
            let page: Value = serde_json::from_str(&req.last_tool_result().unwrap_or_default())
                .unwrap_or_default();
            match page["results"].get(0).and_then(|h| h["text"].as_str()) {
                Some(hit) => ScriptedReply::text(&format!("From your notes: *{hit}*.")),
                None => ScriptedReply::text("I found nothing about that."),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux"]
async fn chat_save_new_session_and_recall_in_tmux() {
    test_support::need(test_support::Need::Tmux);
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::with_responder(respond).await;
    let (gw, token_file) = common::gateway(dir.path(), "alice", &llm).await;

    let tmux = common::client_in_tmux("oxydra-tui-test", &gw, &token_file);

    tmux.wait_for("the connection", |s| s.contains("● connected"))
        .await;
    tmux.type_line("Remember that I love the trams in Lisbon");
    let screen = tmux
        .wait_for("the reply and the saved note", |s| {
            s.contains("Noted: I saved that you love the trams.") && s.contains("ready")
        })
        .await;
    assert!(
        screen.contains("› Remember that I love the trams in Lisbon"),
        "{screen}"
    );
    assert!(screen.contains("✓ saved note note-"), "{screen}");

    tmux.type_line("/new");
    let screen = tmux
        .wait_for("the new session", |s| s.contains("New session."))
        .await;
    assert!(
        !screen.contains("Remember that"),
        "a new session starts empty:\n{screen}"
    );

    tmux.type_line("What do I love?");
    let screen = tmux
        .wait_for("the recalled note", |s| {
            s.contains(&format!("From your notes: {NOTE}.")) && s.contains("ready")
        })
        .await;
    assert!(
        screen.contains("✓ searched memory for \"trams Lisbon\""),
        "{screen}"
    );

    // Tool details open and close with Ctrl+T.
    tmux.key("C-t");
    tmux.wait_for("tool details", |s| s.contains("memory_search arguments:"))
        .await;
    tmux.key("C-t");
    tmux.wait_for("details hidden", |s| {
        !s.contains("memory_search arguments:")
    })
    .await;

    tmux.type_line("/quit");
    let after = tmux
        .wait_for("the exit", |s| s.contains("oxydra-tui exited with"))
        .await;
    assert!(after.contains("oxydra-tui exited with 0"), "{after}");
    assert!(
        !after.contains("● connected"),
        "the alternate screen was left on exit:\n{after}"
    );
    gw.shutdown().await;
}
