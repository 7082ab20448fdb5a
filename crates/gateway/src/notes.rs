//! The user's notes over the connection: `list_notes`, `search_notes`, `get_note`, `edit_note`,
//! `delete_note`, and their lifecycle: `note_history`, `list_deleted_notes`, `restore_note`,
//! `confirm_note`. The user is the connection's authenticated one; a frame never names it.
//! Bad ids, limits and versions are refused with a message saying what to fix, before anything
//! is read or changed.

use runtime::{AgentRuntime, MAX_NOTES_PAGE, RuntimeError};
use types::{ClientFrame, ErrorCode, NoteId, ServerFrame, ToolExecutionContext};

/// A note request, as the connection received it.
#[derive(Debug)]
pub(crate) enum NoteRequest {
    List {
        category: Option<String>,
        cursor: Option<String>,
        limit: u32,
    },
    Search {
        query: String,
        limit: u32,
    },
    Get {
        note_id: String,
    },
    Edit {
        note_id: String,
        content: String,
        version: String,
    },
    Delete {
        note_id: String,
    },
    History {
        note_id: String,
    },
    Deleted,
    Restore {
        note_id: String,
        version: Option<u32>,
    },
    Confirm {
        note_id: String,
    },
}

impl NoteRequest {
    /// The note request `frame` carries; `None` for the other frames.
    pub(crate) fn of(frame: ClientFrame) -> Option<Self> {
        Some(match frame {
            ClientFrame::ListNotes {
                category,
                cursor,
                limit,
            } => NoteRequest::List {
                category,
                cursor,
                limit,
            },
            ClientFrame::SearchNotes { query, limit } => NoteRequest::Search { query, limit },
            ClientFrame::GetNote { note_id } => NoteRequest::Get { note_id },
            ClientFrame::EditNote {
                note_id,
                content,
                version,
            } => NoteRequest::Edit {
                note_id,
                content,
                version,
            },
            ClientFrame::DeleteNote { note_id } => NoteRequest::Delete { note_id },
            ClientFrame::NoteHistory { note_id } => NoteRequest::History { note_id },
            ClientFrame::ListDeletedNotes => NoteRequest::Deleted,
            ClientFrame::RestoreNote { note_id, version } => {
                NoteRequest::Restore { note_id, version }
            }
            ClientFrame::ConfirmNote { note_id } => NoteRequest::Confirm { note_id },
            _ => return None,
        })
    }

    /// The frame `type` it came as, for an error's `ref`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            NoteRequest::List { .. } => "list_notes",
            NoteRequest::Search { .. } => "search_notes",
            NoteRequest::Get { .. } => "get_note",
            NoteRequest::Edit { .. } => "edit_note",
            NoteRequest::Delete { .. } => "delete_note",
            NoteRequest::History { .. } => "note_history",
            NoteRequest::Deleted => "list_deleted_notes",
            NoteRequest::Restore { .. } => "restore_note",
            NoteRequest::Confirm { .. } => "confirm_note",
        }
    }
}

/// A refusal to send back: code, message.
type Refusal = (ErrorCode, String);

/// Serves one note request for the user of `ctx` (the connection's, surface `gateway`).
pub(crate) async fn answer(
    runtime: &AgentRuntime,
    ctx: &ToolExecutionContext,
    request: NoteRequest,
) -> Result<ServerFrame, Refusal> {
    match request {
        NoteRequest::List {
            category,
            cursor,
            limit,
        } => {
            let listing = runtime
                .list_notes(ctx, category.as_deref(), cursor.as_deref(), page(limit)?)
                .await
                .map_err(refusal)?;
            Ok(ServerFrame::NoteList {
                notes: listing.notes,
                total: listing.total,
                next_cursor: listing.next_cursor,
            })
        }
        NoteRequest::Search { query, limit } => {
            let notes = runtime
                .search_notes(ctx, &query, page(limit)?)
                .await
                .map_err(refusal)?;
            Ok(ServerFrame::NoteResults { query, notes })
        }
        NoteRequest::Get { note_id } => {
            let note = runtime
                .note(ctx, &note_id_of(&note_id)?)
                .await
                .map_err(refusal)?;
            Ok(ServerFrame::Note { note })
        }
        NoteRequest::Edit {
            note_id,
            content,
            version,
        } => {
            let id = note_id_of(&note_id)?;
            if version.trim().is_empty() {
                return Err((
                    ErrorCode::InvalidRequest,
                    "version is empty: send the version get_note or list_notes showed".into(),
                ));
            }
            let note = runtime
                .edit_note(ctx, &id, &content, &version)
                .await
                .map_err(refusal)?;
            Ok(ServerFrame::NoteEdited { note })
        }
        NoteRequest::Delete { note_id } => {
            let id = note_id_of(&note_id)?;
            runtime.delete_note(ctx, &id).await.map_err(refusal)?;
            Ok(ServerFrame::NoteDeleted {
                note_id: id.to_string(),
            })
        }
        NoteRequest::History { note_id } => {
            let id = note_id_of(&note_id)?;
            let history = runtime.note_history(ctx, &id).await.map_err(refusal)?;
            let (deleted_at, purge_after) = history.deleted.unzip();
            Ok(ServerFrame::NoteVersions {
                note_id: history.note_id.to_string(),
                versions: history.versions,
                deleted_at,
                purge_after,
            })
        }
        NoteRequest::Deleted => {
            let deleted = runtime.deleted_notes(ctx).await.map_err(refusal)?;
            Ok(ServerFrame::DeletedNotes { notes: deleted })
        }
        NoteRequest::Restore { note_id, version } => {
            let id = note_id_of(&note_id)?;
            if version == Some(0) {
                return Err((
                    ErrorCode::InvalidRequest,
                    "version counts from 1: note_history lists the note's versions".into(),
                ));
            }
            let note = runtime
                .restore_note(ctx, &id, version)
                .await
                .map_err(refusal)?;
            Ok(ServerFrame::NoteRestored { note })
        }
        NoteRequest::Confirm { note_id } => {
            let id = note_id_of(&note_id)?;
            let note = runtime.confirm_note(ctx, &id).await.map_err(refusal)?;
            Ok(ServerFrame::NoteConfirmed { note })
        }
    }
}

fn page(limit: u32) -> Result<usize, Refusal> {
    match usize::try_from(limit) {
        Ok(n) if (1..=MAX_NOTES_PAGE).contains(&n) => Ok(n),
        _ => Err((
            ErrorCode::InvalidRequest,
            format!("limit must be between 1 and {MAX_NOTES_PAGE}"),
        )),
    }
}

fn note_id_of(text: &str) -> Result<NoteId, Refusal> {
    NoteId::parse(text.trim()).map_err(|_| {
        (
            ErrorCode::InvalidRequest,
            "note_id must look like note-<uuid>: list_notes shows your notes' ids".into(),
        )
    })
}

fn refusal(e: RuntimeError) -> Refusal {
    match e {
        RuntimeError::MemoryDisabled => (ErrorCode::MemoryDisabled, e.to_string()),
        RuntimeError::NoteNotFound(_) => (
            ErrorCode::NoteNotFound,
            format!("{e}: list_notes shows your notes"),
        ),
        RuntimeError::NoteVersionMismatch(_) => (ErrorCode::NoteChanged, e.to_string()),
        RuntimeError::InvalidNoteRequest(message) => (ErrorCode::InvalidRequest, message),
        RuntimeError::NoteRefused {
            kind: "permission_denied" | "rate_limited",
            message,
        } => (ErrorCode::NotAllowed, message),
        RuntimeError::NoteRefused { message, .. } => (ErrorCode::InvalidRequest, message),
        e => {
            tracing::warn!(error = %e, "a note request failed");
            (
                ErrorCode::Internal,
                "could not reach your notes; try again".to_owned(),
            )
        }
    }
}
