//! What a tool call changed in the user's memory: [`NoteChange`], reported with the call's
//! `tool_finished` event so that a client can show one line per change and take it back, whatever
//! memory tool (and dialect) made it. [`NoteChanges`] is where the tools record them during the
//! call: the runtime gives each call a fresh one in its context and reads it when the call ends.

use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

/// One change a call made to a note. `text` is the note's text after the change (what a client
/// checks before taking an update back); `path` is the file's path for the files dialect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum NoteChange {
    /// A new note: taken back by deleting it.
    Saved {
        note_id: String,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// A note's text replaced: taken back by making the version before it current again.
    Updated {
        note_id: String,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// A note deleted (a tombstone): taken back by restoring it.
    Deleted {
        note_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
}

impl NoteChange {
    /// The note changed.
    pub fn note_id(&self) -> &str {
        match self {
            NoteChange::Saved { note_id, .. }
            | NoteChange::Updated { note_id, .. }
            | NoteChange::Deleted { note_id, .. } => note_id,
        }
    }
}

/// The changes one call has made so far. Clones share the list; a context built for a new call
/// gets a new one ([`NoteChanges::default`]).
#[derive(Debug, Clone, Default)]
pub struct NoteChanges(Arc<Mutex<Vec<NoteChange>>>);

impl NoteChanges {
    /// Records a change the call made (after its transaction committed).
    pub fn record(&self, change: NoteChange) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(change);
    }

    /// The changes recorded, in order, leaving the list empty.
    pub fn take(&self) -> Vec<NoteChange> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_list_and_take_empties_it() {
        let changes = NoteChanges::default();
        changes.clone().record(NoteChange::Deleted {
            note_id: "note-1".into(),
            path: None,
        });
        assert_eq!(changes.take().len(), 1);
        assert!(changes.take().is_empty());
    }

    #[test]
    fn json_shape() {
        let change = NoteChange::Saved {
            note_id: "note-1".into(),
            text: "Lives in Porto".into(),
            path: None,
        };
        let json = serde_json::to_string(&change).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"change":"saved","note_id":"note-1","text":"Lives in Porto"}"#
        );
    }
}
