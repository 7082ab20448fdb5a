//! End to end through tmux: every memory tool's change gets its `· Memory N:` line and its undo,
//! not only `memory_save`'s. The real `oxydra-tui` against a real gateway whose agent has the
//! categorized and the files dialects: `store_memory` and `memory create` each list a change;
//! Ctrl+Z and `/undo 1` delete what they saved (checked in the user's database file). Then the
//! agent edits a file (`str_replace`) and deletes another: `/undo` restores the deleted file and
//! Ctrl+Z puts the edited one back to its text before the edit.
//!
//! Needs `tmux`: `#[ignore = "needs tmux"]`, failing without it when run (`scripts/test.sh` runs it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use memory::PathExpect;
use serde_json::json;
use test_support::{RecordedRequest, ScriptedLlm, ScriptedReply, ScriptedToolCall};
use types::{MemoryDialect, MemoryDialects, UserId};

const FACT: &str = "Alice moved to Porto";
const HOME: &str = "Alice lives near the river";
const TRAM: &str = "Alice takes the 28 tram";
const TARTS: &str = "Alice likes custard tarts";

/// One round of tool calls, then an answer.
fn calls(
    calls: Vec<ScriptedToolCall>,
) -> impl Fn(&RecordedRequest) -> ScriptedReply + Send + Sync + 'static {
    move |req| {
        if req.messages().last().is_some_and(|m| m["role"] == "tool") {
            return ScriptedReply::text("Done.");
        }
        ScriptedReply::tool_calls(calls.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux"]
async fn every_memory_tool_gets_a_change_line_and_its_undo_in_tmux() {
    test_support::need(test_support::Need::Tmux);
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::with_responder(calls(vec![
        ScriptedToolCall::new(
            "store_memory",
            json!({ "category": "fact", "content": FACT }),
        ),
        ScriptedToolCall::new(
            "memory",
            json!({ "command": "create", "path": "/memories/home.md", "file_text": HOME }),
        ),
    ]))
    .await;
    let dialects = MemoryDialects::of(&[MemoryDialect::Categorized, MemoryDialect::Files]).unwrap();
    let (gw, token_file) = common::gateway_for(dir.path(), "alice", &llm, dialects).await;
    let tmux = common::tall_client_in_tmux("oxydra-tui-dialects", &gw, &token_file);
    tmux.wait_for("the connection", |s| s.contains("● connected"))
        .await;

    tmux.type_line("Remember where I live");
    let screen = tmux
        .wait_for("the change lines", |s| {
            s.contains("Memory 2: saved") && s.contains("ready")
        })
        .await;
    assert!(
        screen.contains(&format!(
            "Memory 1: saved \"{FACT}\" · /undo 1 takes it back"
        )),
        "{screen}"
    );
    assert!(
        screen.contains("Memory 2: saved /memories/home.md · /undo 2 takes it back"),
        "{screen}"
    );
    assert_eq!(
        common::stored_notes(dir.path(), "alice").await,
        [HOME, FACT]
    );

    tmux.key("C-z");
    tmux.wait_for("the file's save undone", |s| {
        s.contains("Undone: saved /memories/home.md")
    })
    .await;
    assert_eq!(common::stored_notes(dir.path(), "alice").await, [FACT]);
    tmux.type_line("/undo 1");
    tmux.wait_for("the categorized save undone", |s| {
        s.contains(&format!("Undone: saved \"{FACT}\""))
    })
    .await;
    assert!(common::stored_notes(dir.path(), "alice").await.is_empty());

    // The agent edits one file and deletes another.
    let alice = UserId::parse("alice").unwrap();
    let store = common::open_store(dir.path(), "alice").await;
    for (path, text) in [("/memories/tram.md", TRAM), ("/memories/tarts.md", TARTS)] {
        store
            .files()
            .put_file(&alice, path, text, PathExpect::Absent, None, None)
            .await
            .unwrap();
    }
    drop(store);
    llm.set_responder(calls(vec![
        ScriptedToolCall::new(
            "memory",
            json!({ "command": "str_replace", "path": "/memories/tram.md",
                    "old_str": "28", "new_str": "12" }),
        ),
        ScriptedToolCall::new(
            "memory",
            json!({ "command": "delete", "path": "/memories/tarts.md" }),
        ),
    ]));
    tmux.type_line("I take the 12 tram now, and forget the tarts");
    let screen = tmux
        .wait_for("the agent's changes", |s| {
            s.contains("Memory 4: deleted") && s.contains("ready")
        })
        .await;
    assert!(
        screen.contains("Memory 3: updated /memories/tram.md · /undo 3 takes it back"),
        "{screen}"
    );
    assert!(
        screen.contains("Memory 4: deleted /memories/tarts.md · /undo 4 takes it back"),
        "{screen}"
    );
    assert_eq!(
        common::stored_notes(dir.path(), "alice").await,
        ["Alice takes the 12 tram"]
    );
    tmux.type_line("/undo 4");
    tmux.wait_for("the delete undone", |s| {
        s.contains("Undone: deleted /memories/tarts.md")
    })
    .await;
    assert_eq!(
        common::stored_notes(dir.path(), "alice").await,
        [TARTS, "Alice takes the 12 tram"]
    );
    tmux.key("C-z");
    tmux.wait_for("the edit undone", |s| {
        s.contains("Undone: updated /memories/tram.md")
    })
    .await;
    assert_eq!(
        common::stored_notes(dir.path(), "alice").await,
        [TARTS, TRAM]
    );
    // The restored file is back at its path.
    let store = common::open_store(dir.path(), "alice").await;
    let file = store
        .files()
        .read_file(&alice, "/memories/tarts.md")
        .await
        .unwrap();
    assert_eq!(file.map(|f| f.content).as_deref(), Some(TARTS));
}
