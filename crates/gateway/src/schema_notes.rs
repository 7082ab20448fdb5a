//! Example note frames for the protocol schema (see `schema`).

use types::{
    ClientFrame, DeletedNoteView, NoteRequest, NoteVersionView, NoteView, ProvenanceView,
    ServerFrame, TimeReadView,
};

use crate::schema::both;

const NOTE_ID: &str = "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f";
const CURSOR: &str = "2025-01-01T09:00:00.000000Z~note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f";

fn note(full: bool) -> NoteView {
    NoteView {
        note_id: NOTE_ID.into(),
        text: "Loves the trams in Lisbon".into(),
        edit_token: "5e1f0c9d7a2b3c48".into(),
        category: full.then(|| "preference".to_owned()),
        tags: if full {
            vec!["travel".into()]
        } else {
            Vec::new()
        },
        created_at: "2025-01-01T09:00:00.000Z".into(),
        updated_at: "2025-01-01T09:00:00.000Z".into(),
        provenance: full.then(|| {
            Box::new(ProvenanceView {
                origin: "file".into(),
                session_id: Some("s-7".into()),
                turn_id: Some("t-3".into()),
                confirmed: false,
            })
        }),
        confirmed_text: full.then(|| "Loves the buses in Lisbon".into()),
    }
}

/// How a search read "last week" (every field set: `from` and `until` are absent only for a
/// span open on that side).
pub(crate) fn time_read() -> TimeReadView {
    TimeReadView {
        phrase: "last week".into(),
        from: Some("2025-01-06T00:00:00+01:00".into()),
        until: Some("2025-01-13T00:00:00+01:00".into()),
        timezone: "Europe/Paris".into(),
        read: "read \"last week\" as 6 January 2025 to 12 January 2025".into(),
    }
}

fn version(full: bool) -> NoteVersionView {
    NoteVersionView {
        version: 1,
        text: "Loves the trams in Lisbon".into(),
        edit_token: "5e1f0c9d7a2b3c48".into(),
        category: full.then(|| "preference".to_owned()),
        tags: if full {
            vec!["travel".into()]
        } else {
            Vec::new()
        },
        saved_at: "2025-01-01T09:00:00.000Z".into(),
        replaced_at: full.then(|| "2025-01-02T10:30:00.000Z".to_owned()),
        provenance: full.then(|| ProvenanceView {
            origin: "user".into(),
            session_id: Some("s-7".into()),
            turn_id: Some("t-3".into()),
            confirmed: true,
        }),
    }
}

/// `(with every optional field, with none)` for each note request.
pub(crate) fn client_examples() -> Vec<(ClientFrame, ClientFrame)> {
    vec![
        (
            ClientFrame::Note(NoteRequest::ListNotes {
                category: Some("preference".into()),
                cursor: Some(CURSOR.into()),
                limit: 50,
            }),
            ClientFrame::Note(NoteRequest::ListNotes {
                category: None,
                cursor: None,
                limit: 50,
            }),
        ),
        both(ClientFrame::Note(NoteRequest::SearchNotes {
            query: "Lisbon".into(),
            limit: 10,
        })),
        both(ClientFrame::Note(NoteRequest::GetNote {
            note_id: NOTE_ID.into(),
        })),
        both(ClientFrame::Note(NoteRequest::EditNote {
            note_id: NOTE_ID.into(),
            content: "Loves the trams in Lisbon and Porto".into(),
            edit_token: "9a3c51e0b2d4f687".into(),
        })),
        both(ClientFrame::Note(NoteRequest::DeleteNote {
            note_id: NOTE_ID.into(),
        })),
        both(ClientFrame::Note(NoteRequest::NoteHistory {
            note_id: NOTE_ID.into(),
        })),
        both(ClientFrame::Note(NoteRequest::ListDeletedNotes)),
        (
            ClientFrame::Note(NoteRequest::RestoreNote {
                note_id: NOTE_ID.into(),
                version: Some(1),
            }),
            ClientFrame::Note(NoteRequest::RestoreNote {
                note_id: NOTE_ID.into(),
                version: None,
            }),
        ),
        both(ClientFrame::Note(NoteRequest::ConfirmNote {
            note_id: NOTE_ID.into(),
        })),
    ]
}

/// `(with every optional field, with none)` for each note answer.
pub(crate) fn server_examples() -> Vec<(ServerFrame, ServerFrame)> {
    vec![
        (
            ServerFrame::NoteList {
                notes: vec![note(true)],
                total: 61,
                next_cursor: Some(CURSOR.into()),
            },
            ServerFrame::NoteList {
                notes: vec![note(false)],
                total: 1,
                next_cursor: None,
            },
        ),
        (
            ServerFrame::NoteResults {
                query: "Lisbon trams last week".into(),
                notes: vec![note(true)],
                time: Some(time_read()),
            },
            ServerFrame::NoteResults {
                query: "Lisbon".into(),
                notes: vec![note(false)],
                time: None,
            },
        ),
        (
            ServerFrame::Note { note: note(true) },
            ServerFrame::Note { note: note(false) },
        ),
        (
            ServerFrame::NoteEdited { note: note(true) },
            ServerFrame::NoteEdited { note: note(false) },
        ),
        both(ServerFrame::NoteDeleted {
            note_id: NOTE_ID.into(),
        }),
        (
            ServerFrame::NoteVersions {
                note_id: NOTE_ID.into(),
                versions: vec![version(true)],
                deleted_at: Some("2025-01-03T08:00:00.000Z".into()),
                purge_after: Some("2025-02-02T08:00:00.000Z".into()),
            },
            ServerFrame::NoteVersions {
                note_id: NOTE_ID.into(),
                versions: vec![version(false)],
                deleted_at: None,
                purge_after: None,
            },
        ),
        (
            ServerFrame::DeletedNotes {
                notes: vec![deleted(true)],
            },
            ServerFrame::DeletedNotes {
                notes: vec![deleted(false)],
            },
        ),
        (
            ServerFrame::NoteRestored { note: note(true) },
            ServerFrame::NoteRestored { note: note(false) },
        ),
        (
            ServerFrame::NoteConfirmed { note: note(true) },
            ServerFrame::NoteConfirmed { note: note(false) },
        ),
    ]
}

fn deleted(full: bool) -> DeletedNoteView {
    DeletedNoteView {
        note: note(full),
        deleted_at: "2025-01-03T08:00:00.000Z".into(),
        purge_after: "2025-02-02T08:00:00.000Z".into(),
    }
}
