//! Undoing a save, fed frames as the gateway would: the note's history is read first, and the
//! note is deleted only while it still says what the save wrote; a note changed since is left
//! alone (the change stays undoable), one already deleted is said to be gone (the change done).

use types::{ClientFrame, NoteChange, NoteRequest, NoteVersionView, ServerFrame};

use super::tests::online;
use super::*;

const NOTE: &str = "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f";

fn version(version: u32, text: &str) -> NoteVersionView {
    NoteVersionView {
        version,
        text: text.into(),
        edit_token: format!("v-{version}"),
        category: None,
        tags: Vec::new(),
        saved_at: format!("2025-01-0{version}T09:00:00.000Z"),
        replaced_at: None,
        provenance: None,
    }
}

fn history(texts: &[&str], deleted_at: Option<&str>) -> ServerFrame {
    ServerFrame::NoteVersions {
        note_id: NOTE.into(),
        versions: (1..).zip(texts).map(|(v, t)| version(v, t)).collect(),
        deleted_at: deleted_at.map(str::to_owned),
        purge_after: deleted_at.map(|_| "2025-02-01T09:00:00.000Z".to_owned()),
    }
}

/// An app in which the agent saved the note (change 1), its text with spaces around it.
fn saved() -> App {
    let mut app = online();
    app.note_changes(vec![NoteChange::Saved {
        note_id: NOTE.into(),
        text: "  Lives in Porto\n".into(),
        path: None,
    }]);
    app
}

fn asks_history() -> Vec<ClientFrame> {
    vec![ClientFrame::Note(NoteRequest::NoteHistory {
        note_id: NOTE.into(),
    })]
}

fn delete() -> Vec<ClientFrame> {
    vec![ClientFrame::Note(NoteRequest::DeleteNote {
        note_id: NOTE.into(),
    })]
}

fn last_text(app: &App) -> Option<String> {
    match app.entries.last() {
        Some(Entry::Notice { text, .. }) => Some(text.clone()),
        _ => None,
    }
}

#[test]
fn undoing_an_unchanged_save_reads_the_history_then_deletes() {
    let mut app = saved();
    assert_eq!(app.undo(Some(1)), asks_history());
    assert_eq!(app.on_frame(history(&["Lives in Porto"], None)), delete());
    app.on_frame(ServerFrame::NoteDeleted {
        note_id: NOTE.into(),
    });
    assert!(!app.memory.changes[0].undo.is_pending());
}

#[test]
fn undoing_a_save_updated_since_deletes_nothing_until_the_update_is_undone() {
    let mut app = saved();
    app.note_changes(vec![NoteChange::Updated {
        note_id: NOTE.into(),
        text: "Lives in Braga".into(),
        path: None,
    }]);
    assert_eq!(app.undo(Some(1)), asks_history());
    assert_eq!(
        app.on_frame(history(&["Lives in Porto", "Lives in Braga"], None)),
        []
    );
    assert_eq!(
        last_text(&app).as_deref(),
        Some(
            "Change 1 was not undone: the note changed since. /memory history shows its versions."
        )
    );
    assert!(app.memory.changes[0].undo.is_pending());

    // The update taken back (a third version with the saved text): now the save can be too.
    assert_eq!(app.undo(Some(2)), asks_history());
    let updated = history(&["Lives in Porto", "Lives in Braga"], None);
    assert_eq!(
        app.on_frame(updated),
        [ClientFrame::Note(NoteRequest::RestoreNote {
            note_id: NOTE.into(),
            version: Some(1),
        })]
    );
    app.on_frame(ServerFrame::NoteRestored {
        note: types::NoteView {
            note_id: NOTE.into(),
            text: "Lives in Porto".into(),
            category: None,
            tags: Vec::new(),
            edit_token: "v-3".into(),
            created_at: "2025-01-01T09:00:00.000Z".into(),
            updated_at: "2025-01-03T09:00:00.000Z".into(),
            provenance: None,
            confirmed_text: None,
        },
    });
    assert!(!app.memory.changes[1].undo.is_pending());
    assert_eq!(app.undo(None), asks_history());
    let reverted = history(
        &["Lives in Porto", "Lives in Braga", "Lives in Porto"],
        None,
    );
    assert_eq!(app.on_frame(reverted), delete());
}

#[test]
fn undoing_a_save_already_deleted_says_it_is_gone() {
    let mut app = saved();
    assert_eq!(app.undo(Some(1)), asks_history());
    let gone = history(&["Lives in Porto"], Some("2025-01-02T09:00:00.000Z"));
    assert_eq!(app.on_frame(gone), []);
    assert_eq!(
        last_text(&app).as_deref(),
        Some("Change 1: the note is already deleted; nothing to undo.")
    );
    assert!(app.memory.undoing.is_none());
    // Nothing is left to take back: Ctrl+Z goes on to the change before it.
    assert!(!app.memory.changes[0].undo.is_pending());
}

/// An edit answered with a text that ends in a newline (`note_edited` of an edit this client did
/// not send) is undone against the trimmed text, as the history's versions are compared.
#[test]
fn an_edit_with_spaces_around_its_text_can_be_undone() {
    let mut app = online();
    app.on_frame(ServerFrame::NoteEdited {
        note: types::NoteView {
            note_id: NOTE.into(),
            text: "Lives in Braga\n".into(),
            category: None,
            tags: Vec::new(),
            edit_token: "v-2".into(),
            created_at: "2025-01-01T09:00:00.000Z".into(),
            updated_at: "2025-01-02T09:00:00.000Z".into(),
            provenance: None,
            confirmed_text: None,
        },
    });
    assert_eq!(app.undo(None), asks_history());
    let edited = history(&["Lives in Porto", "Lives in Braga\n"], None);
    assert_eq!(
        app.on_frame(edited),
        [ClientFrame::Note(NoteRequest::RestoreNote {
            note_id: NOTE.into(),
            version: Some(1),
        })]
    );
}
