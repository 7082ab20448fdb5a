//! End to end through tmux: `/export` writes the conversation the real `oxydra-tui` is on,
//! fetched from a real gateway and store, as Markdown and as JSON Lines; an existing file is
//! never overwritten.
//!
//! Needs `tmux`: `#[ignore = "needs tmux"]`, failing without it when run (`scripts/test.sh` runs it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::os::unix::fs::PermissionsExt;

use crate::common;

use test_support::{ScriptedLlm, ScriptedReply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux"]
async fn export_writes_the_conversation_as_markdown_and_json_lines_in_tmux() {
    test_support::need(test_support::Need::Tmux);
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start().await;
    llm.push(ScriptedReply::text("Trams run until midnight."));
    let (gw, token_file) = common::gateway(dir.path(), "alice", &llm).await;
    let tmux = common::client_in_tmux("oxydra-tui-export", &gw, &token_file);
    tmux.wait_for("the connection", |s| s.contains("● connected"))
        .await;
    tmux.type_line("When do the trams stop?");
    tmux.wait_for("the reply", |s| {
        s.contains("Trams run until midnight.") && s.contains("ready")
    })
    .await;

    let md = dir.path().join("trams.md");
    tmux.type_line(&format!("/export {}", md.display()));
    tmux.wait_for("the Markdown export", |s| {
        s.contains("Exported 2 messages to")
    })
    .await;
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.starts_with("# When do the trams stop?\n"), "{text}");
    assert!(text.contains("## User · "), "{text}");
    assert!(text.contains("When do the trams stop?"), "{text}");
    assert!(
        text.contains("## Assistant · ") && text.contains("Trams run until midnight."),
        "{text}"
    );
    let mode = std::fs::metadata(&md).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a conversation is readable by its owner only");

    let jsonl = dir.path().join("trams.jsonl");
    tmux.type_line(&format!("/export jsonl {}", jsonl.display()));
    tmux.wait_for("the JSON Lines export", |s| {
        s.matches("Exported 2 messages to").count() == 2
    })
    .await;
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let said: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["role"].as_str().unwrap(), l["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        said,
        [
            ("user", "When do the trams stop?"),
            ("assistant", "Trams run until midnight.")
        ]
    );

    // The same path again: the file is left as it was.
    tmux.type_line(&format!("/export {}", md.display()));
    tmux.wait_for("the refusal", |s| s.contains("a file is already there"))
        .await;
    assert_eq!(std::fs::read_to_string(&md).unwrap(), text);
}
