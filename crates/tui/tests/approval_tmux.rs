//! Approvals in the real `oxydra-tui` inside tmux, against a real gateway (`runtime.approval =
//! "ask"`): typing "why" and Enter while `shell_exec` waits answers nothing (the prompt stays and
//! says how to choose); `a` + Enter allows it for the session, and the next `shell_exec` of the
//! session runs without asking.
//!
//! The prompt's arm delay is set to zero (`--approval-arm-ms 0`) so the typed keys count at once;
//! the delay itself is tested in the model's unit tests.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use serde_json::json;
use test_support::{RecordedRequest, ScriptedLlm, ScriptedReply, ScriptedToolCall, Tmux};

/// Every user message: call `shell_exec`; after its result, answer "done N" (N: user messages).
fn respond(req: &RecordedRequest) -> ScriptedReply {
    let messages = req.messages();
    let users = messages.iter().filter(|m| m["role"] == "user").count();
    let answered = messages.last().is_some_and(|m| m["role"] == "tool");
    if answered {
        ScriptedReply::text(&format!("done {users}"))
    } else {
        ScriptedReply::tool_calls(vec![ScriptedToolCall::new(
            "shell_exec",
            json!({ "command": "echo hi" }),
        )])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux"]
async fn typing_why_does_not_approve_and_allow_for_session_skips_the_next_prompt() {
    test_support::need(test_support::Need::Tmux);
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::with_responder(respond).await;
    let (gw, token_file) = common::gateway(dir.path(), "alice", &llm).await;
    let command = format!(
        "{} --url {} --user alice --token-file {} --approval-arm-ms 0; sleep 60",
        env!("CARGO_BIN_EXE_oxydra-tui"),
        gw.url(),
        token_file.display()
    );
    let tmux = Tmux::start("oxydra-tui-approval", 100, 30, &command);
    let screen = tmux
        .wait_for("the connection", |s| s.contains("● connected"))
        .await;
    // The status bar names the model the gateway reported in hello_ok (no --model flag given).
    assert!(
        screen.contains(test_support::SCRIPTED_MODEL),
        "the model is shown:\n{screen}"
    );

    tmux.type_line("list my files");
    tmux.wait_for("the approval prompt", |s| {
        s.contains("? Allow shell_exec") && s.contains("2. Allow shell_exec for this session")
    })
    .await;
    // The classic accident: a word typed into the prompt, then Enter.
    tmux.type_line("why");
    let screen = tmux
        .wait_for("the hint", |s| s.contains("Choose first: 1, 2 or 3"))
        .await;
    assert!(
        screen.contains("? Allow shell_exec"),
        "still waiting for an answer:\n{screen}"
    );
    assert!(!screen.contains("allowed"), "{screen}");
    assert!(!screen.contains("done 1"), "{screen}");

    tmux.key("a");
    tmux.wait_for("the choice", |s| {
        s.contains("› 2. Allow shell_exec for this session")
    })
    .await;
    tmux.key("Enter");
    let screen = tmux
        .wait_for("the first reply", |s| {
            s.contains("done 1") && s.contains("ready")
        })
        .await;
    assert!(screen.contains("allowed for this session"), "{screen}");

    // The same tool in the same session: no prompt; the turn runs to its end.
    tmux.type_line("and again");
    let screen = tmux
        .wait_for("the second reply", |s| {
            s.contains("done 2") && s.contains("ready")
        })
        .await;
    assert!(!screen.contains("? Allow"), "{screen}");
    assert_eq!(
        screen.matches("allowed for this session").count(),
        1,
        "asked once only:\n{screen}"
    );
    let results = llm
        .requests()
        .iter()
        .filter(|r| r.messages().last().is_some_and(|m| m["role"] == "tool"))
        .count();
    assert_eq!(results, 2, "shell_exec ran in both turns");
    gw.shutdown().await;
}
