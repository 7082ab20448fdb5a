//! The note requests of the gateway protocol (`list_notes`, `search_notes`, `get_note`,
//! `edit_note`, `delete_note`, `note_history`, `list_deleted_notes`, `restore_note`,
//! `confirm_note`), declared once: a client sends one as a [`ClientFrame::Note`](crate::ClientFrame)
//! and the gateway serves it as it is. On the wire each is a frame of its own `type`, as every
//! other client frame is.

use serde::{Deserialize, Serialize};

/// A request about the user's own notes. The user is the connection's; a request never names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NoteRequest {
    /// Lists the user's saved notes, newest first, `limit` (1–200) at a time; `category` keeps
    /// one category, `cursor` (a list's `next_cursor`) pages on. Answered with `note_list`.
    ListNotes {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        category: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
        limit: u32,
    },
    /// Searches the user's saved notes; answered with `note_results` (best first, whole notes).
    SearchNotes { query: String, limit: u32 },
    /// Reads one note whole; answered with `note`.
    GetNote { note_id: String },
    /// Replaces a note's text, only if `edit_token` (`version` on the wire of protocol 1) is its
    /// current text's; answered with `note_edited`.
    EditNote {
        note_id: String,
        content: String,
        #[serde(rename = "version")]
        edit_token: String,
    },
    /// Deletes a note (restorable for the retention window); answered with `note_deleted`.
    DeleteNote { note_id: String },
    /// Every version of a note, live or deleted; answered with `note_versions`.
    NoteHistory { note_id: String },
    /// The deleted notes that can still be restored; answered with `deleted_notes`.
    ListDeletedNotes,
    /// Brings a deleted note back (to its last text, or to `version`), or makes an earlier
    /// `version` of a live note its current text again (a new version: history is never
    /// rewritten). Answered with `note_restored`.
    RestoreNote {
        note_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u32>,
    },
    /// Vouches for an unconfirmed note (saved after untrusted tool output), so recall may use
    /// it; answered with `note_confirmed`.
    ConfirmNote { note_id: String },
}

impl NoteRequest {
    /// The `type`s of the note requests, in declaration order.
    pub const TYPES: [&'static str; 9] = [
        "list_notes",
        "search_notes",
        "get_note",
        "edit_note",
        "delete_note",
        "note_history",
        "list_deleted_notes",
        "restore_note",
        "confirm_note",
    ];

    /// The frame `type` this request comes as (for an error's `ref`).
    pub fn kind(&self) -> &'static str {
        let index = match self {
            NoteRequest::ListNotes { .. } => 0,
            NoteRequest::SearchNotes { .. } => 1,
            NoteRequest::GetNote { .. } => 2,
            NoteRequest::EditNote { .. } => 3,
            NoteRequest::DeleteNote { .. } => 4,
            NoteRequest::NoteHistory { .. } => 5,
            NoteRequest::ListDeletedNotes => 6,
            NoteRequest::RestoreNote { .. } => 7,
            NoteRequest::ConfirmNote { .. } => 8,
        };
        Self::TYPES[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClientFrame;

    #[test]
    fn a_note_request_is_a_frame_of_its_own_type() {
        let edit = ClientFrame::Note(NoteRequest::EditNote {
            note_id: "note-1".into(),
            content: "Lisbon".into(),
            edit_token: "ab".into(),
        });
        let wire = r#"{"type":"edit_note","note_id":"note-1","content":"Lisbon","version":"ab"}"#;
        assert_eq!(serde_json::to_string(&edit).unwrap(), wire);
        assert_eq!(serde_json::from_str::<ClientFrame>(wire).unwrap(), edit);
        let deleted = ClientFrame::Note(NoteRequest::ListDeletedNotes);
        let wire = r#"{"type":"list_deleted_notes"}"#;
        assert_eq!(serde_json::to_string(&deleted).unwrap(), wire);
        assert_eq!(serde_json::from_str::<ClientFrame>(wire).unwrap(), deleted);
        assert_eq!(
            serde_json::from_str::<ClientFrame>(r#"{"type":"ping"}"#).unwrap(),
            ClientFrame::Ping
        );
    }

    #[test]
    fn every_request_names_its_own_type() {
        let requests = [
            NoteRequest::ListNotes {
                category: None,
                cursor: None,
                limit: 1,
            },
            NoteRequest::SearchNotes {
                query: "q".into(),
                limit: 1,
            },
            NoteRequest::GetNote {
                note_id: "n".into(),
            },
            NoteRequest::EditNote {
                note_id: "n".into(),
                content: "c".into(),
                edit_token: "t".into(),
            },
            NoteRequest::DeleteNote {
                note_id: "n".into(),
            },
            NoteRequest::NoteHistory {
                note_id: "n".into(),
            },
            NoteRequest::ListDeletedNotes,
            NoteRequest::RestoreNote {
                note_id: "n".into(),
                version: None,
            },
            NoteRequest::ConfirmNote {
                note_id: "n".into(),
            },
        ];
        for (request, kind) in requests.iter().zip(NoteRequest::TYPES) {
            let wire = serde_json::to_value(request).unwrap();
            assert_eq!(wire["type"], kind);
            assert_eq!(request.kind(), kind);
        }
    }
}
