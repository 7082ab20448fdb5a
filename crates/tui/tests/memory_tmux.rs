//! End to end through tmux: the real `oxydra-tui` against a real gateway and store. The agent
//! saves two notes in a turn; the TUI lists one line per change; `/undo` deletes the first note
//! (checked in the user's database file); `/memory` shows what is left; `/memory edit` replaces
//! it and Ctrl+Z puts the old text back. In a second turn the agent updates one note and deletes
//! another: `/undo` restores the deleted note and Ctrl+Z takes the update back to the version
//! before it; `/memory deleted` and `/memory restore` bring back a note deleted here.
//!
//! Needs `tmux`: `#[ignore = "needs tmux"]`, failing without it when run (`scripts/test.sh` runs it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use memory::NoteMetadata;
use serde_json::json;
use test_support::{RecordedRequest, ScriptedLlm, ScriptedReply, ScriptedToolCall};
use types::UserId;

const FIRST: &str = "Alice moved to Porto";
const SECOND: &str = "Alice takes the 28 tram";
const UPDATED: &str = "Alice takes the 12 tram";
const TART: &str = "Alice likes custard tarts";

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

/// Updates the tram note and deletes the tart note, then answers.
fn update_and_delete(
    tram: String,
    tart: String,
) -> impl Fn(&RecordedRequest) -> ScriptedReply + Send + Sync + 'static {
    move |req| {
        if req.messages().last().is_some_and(|m| m["role"] == "tool") {
            return ScriptedReply::text("Updated and forgotten.");
        }
        ScriptedReply::tool_calls(vec![
            ScriptedToolCall::new(
                "memory_update",
                json!({
                    "note_id": tram,
                    "content": UPDATED,
                    "version": memory::edit_token(SECOND),
                }),
            ),
            ScriptedToolCall::new("memory_delete", json!({ "note_id": tart })),
        ])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux"]
async fn memory_changes_undo_browse_and_edit_in_tmux() {
    test_support::need(test_support::Need::Tmux);
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::with_responder(respond).await;
    let (gw, token_file) = common::gateway(dir.path(), "alice", &llm).await;
    let tmux = common::tall_client_in_tmux("oxydra-tui-memory", &gw, &token_file);
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
    assert_eq!(
        common::stored_notes(dir.path(), "alice").await,
        [FIRST, SECOND]
    );

    tmux.type_line("/undo 1");
    tmux.wait_for("the undo", |s| {
        s.contains(&format!("Undone: saved \"{FIRST}\""))
    })
    .await;
    assert_eq!(common::stored_notes(dir.path(), "alice").await, [SECOND]);

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
    assert_eq!(
        common::stored_notes(dir.path(), "alice").await,
        ["Alice takes the 15 tram"]
    );

    tmux.key("C-z");
    tmux.wait_for("the edit undone", |s| {
        s.contains("Undone: edited \"Alice takes the 15 tram\"")
    })
    .await;
    assert_eq!(common::stored_notes(dir.path(), "alice").await, [SECOND]);

    // The agent's own update and delete, taken back.
    let alice = UserId::parse("alice").unwrap();
    let store = common::open_store(dir.path(), "alice").await;
    let tart = store
        .save(
            &alice,
            None,
            TART,
            NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap()
        .note_id
        .to_string();
    let tram = store.list_notes(&alice).await.unwrap();
    let tram = tram.iter().find(|n| n.content == SECOND).unwrap();
    llm.set_responder(update_and_delete(tram.note_id.to_string(), tart));
    drop(store);
    tmux.type_line("I take the 12 tram now, and forget the tarts");
    let screen = tmux
        .wait_for("the agent's changes", |s| {
            s.contains("Memory 5: deleted") && s.contains("ready")
        })
        .await;
    assert!(
        screen.contains(&format!(
            "Memory 4: updated \"{UPDATED}\" · /undo 4 takes it back"
        )),
        "{screen}"
    );
    assert_eq!(common::stored_notes(dir.path(), "alice").await, [UPDATED]);
    tmux.type_line("/undo 5");
    tmux.wait_for("the delete undone", |s| s.contains("Undone: deleted"))
        .await;
    assert_eq!(
        common::stored_notes(dir.path(), "alice").await,
        [TART, UPDATED]
    );
    tmux.key("C-z");
    tmux.wait_for("the update undone", |s| {
        s.contains(&format!("Undone: updated \"{UPDATED}\""))
    })
    .await;
    assert_eq!(
        common::stored_notes(dir.path(), "alice").await,
        [TART, SECOND]
    );

    // A delete made here, restored from the list of deleted notes.
    tmux.type_line("/memory");
    tmux.wait_for("the list", |s| s.contains("Your notes (2), newest first:"))
        .await;
    tmux.type_line("/memory delete 1");
    tmux.wait_for("the delete line", |s| {
        s.contains(&format!("Memory 6: deleted \"{TART}\""))
    })
    .await;
    assert_eq!(common::stored_notes(dir.path(), "alice").await, [SECOND]);
    tmux.type_line("/memory deleted");
    tmux.wait_for("the deleted list", |s| {
        s.contains(&format!("1. {TART} · deleted"))
    })
    .await;
    tmux.type_line("/memory restore 1");
    tmux.wait_for("the restore line", |s| {
        s.contains(&format!("Memory 7: restored \"{TART}\""))
    })
    .await;
    assert_eq!(
        common::stored_notes(dir.path(), "alice").await,
        [TART, SECOND]
    );

    tmux.type_line("/quit");
    gw.shutdown().await;
}
