//! End to end through tmux: the real `oxydra-tui` against a real gateway and store. The agent
//! saves two notes in a turn; the TUI lists one line per change; `/undo` deletes the first note
//! (checked in the user's database file); `/memory` shows what is left; `/memory edit` replaces
//! it and Ctrl+Z puts the old text back.
//!
//! Needs `tmux`: `#[ignore = "needs tmux"]`, failing without it when run (`scripts/test.sh` runs it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::Path;
use std::sync::Arc;

use crate::common;

use memory::{HashEmbedder, MemoryStore};
use serde_json::json;
use test_support::{RecordedRequest, ScriptedLlm, ScriptedReply, ScriptedToolCall, Tmux};
use types::{UserId, WorkspacePaths};

const FIRST: &str = "Alice moved to Porto";
const SECOND: &str = "Alice takes the 28 tram";

/// Saves both notes in one round, then answers.
fn respond(req: &RecordedRequest) -> ScriptedReply {
    let answered = req.messages().iter().rev().any(|m| m["role"] == "tool");
    if answered {
        return ScriptedReply::text("Saved both.");
    }
    ScriptedReply::tool_calls(vec![
        ScriptedToolCall::new("memory_save", json!({ "content": FIRST })),
        ScriptedToolCall::new("memory_save", json!({ "content": SECOND })),
    ])
}

/// The user's notes as stored, read through a second connection to the database file.
async fn stored(root: &Path) -> Vec<String> {
    let ws = WorkspacePaths::new(root.join("alice"));
    let store = MemoryStore::open_local(&ws.default_memory_db(), Arc::new(HashEmbedder::new(256)))
        .await
        .unwrap();
    let mut notes: Vec<String> = store
        .list_notes(&UserId::parse("alice").unwrap())
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.content)
        .collect();
    notes.sort();
    notes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux"]
async fn memory_changes_undo_browse_and_edit_in_tmux() {
    test_support::need(test_support::Need::Tmux);
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::with_responder(respond).await;
    let (gw, token_file) = common::gateway(dir.path(), "alice", &llm).await;
    let command = format!(
        "{} --url {} --user alice --token-file {}; sleep 60",
        env!("CARGO_BIN_EXE_oxydra-tui"),
        gw.url(),
        token_file.display()
    );
    let tmux = Tmux::start("oxydra-tui-memory", 100, 40, &command);
    tmux.wait_for("the connection", |s| s.contains("● connected"))
        .await;

    tmux.type_line("Remember where I live and which tram I take");
    let screen = tmux
        .wait_for("the change lines", |s| {
            s.contains("Memory 2: saved") && s.contains("ready")
        })
        .await;
    assert!(
        screen.contains(&format!(
            "Memory 1: saved \"{FIRST}\" · /undo 1 takes it back"
        )),
        "{screen}"
    );
    assert_eq!(stored(dir.path()).await, [FIRST, SECOND]);

    tmux.type_line("/undo 1");
    tmux.wait_for("the undo", |s| {
        s.contains(&format!("Undone: saved \"{FIRST}\""))
    })
    .await;
    assert_eq!(stored(dir.path()).await, [SECOND]);

    tmux.type_line("/memory");
    let screen = tmux
        .wait_for("the list", |s| s.contains("Your notes (1), newest first:"))
        .await;
    assert!(screen.contains(&format!("1. {SECOND}")), "{screen}");

    tmux.type_line("/memory edit 1 Alice takes the 15 tram");
    tmux.wait_for("the edit line", |s| {
        s.contains("Memory 3: edited \"Alice takes the 15 tram\"")
    })
    .await;
    assert_eq!(stored(dir.path()).await, ["Alice takes the 15 tram"]);

    tmux.key("C-z");
    tmux.wait_for("the edit undone", |s| {
        s.contains("Undone: edited \"Alice takes the 15 tram\"")
    })
    .await;
    assert_eq!(stored(dir.path()).await, [SECOND]);

    tmux.type_line("/quit");
    gw.shutdown().await;
}
