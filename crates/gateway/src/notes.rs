//! The user's notes over the connection: `list_notes`, `search_notes`, `get_note`, `edit_note`,
//! `delete_note`, and their lifecycle: `note_history`, `list_deleted_notes`, `restore_note`,
//! `confirm_note`. The user is the connection's authenticated one; a frame never names it.
//! Bad ids, limits and versions are refused with a message saying what to fix, before anything
//! is read or changed.

use runtime::{AgentRuntime, MAX_NOTES_PAGE, RuntimeError};
use types::{ErrorCode, NoteId, NoteRequest, ServerFrame, ToolExecutionContext};

/// A refusal to send back: code, message.
type Refusal = (ErrorCode, String);

/// Serves one note request for the user of `ctx` (the connection's, surface `gateway`).
pub(crate) async fn answer(
    runtime: &AgentRuntime,
    ctx: &ToolExecutionContext,
    request: NoteRequest,
) -> Result<ServerFrame, Refusal> {
    match request {
        NoteRequest::ListNotes {
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
        NoteRequest::SearchNotes { query, limit } => {
            let found = runtime
                .search_notes(ctx, &query, page(limit)?)
                .await
                .map_err(refusal)?;
            Ok(ServerFrame::NoteResults {
                query,
                notes: found.hits,
                time: found.time,
            })
        }
        NoteRequest::GetNote { note_id } => {
            let note = runtime.note(ctx, &note_id_of(&note_id)?).await;
            Ok(ServerFrame::Note {
                note: note.map_err(refusal)?,
            })
        }
        NoteRequest::EditNote {
            note_id,
            content,
            edit_token,
        } => edit(runtime, ctx, &note_id, &content, &edit_token).await,
        NoteRequest::DeleteNote { note_id } => {
            let id = note_id_of(&note_id)?;
            runtime.delete_note(ctx, &id).await.map_err(refusal)?;
            Ok(ServerFrame::NoteDeleted {
                note_id: id.to_string(),
            })
        }
        NoteRequest::NoteHistory { note_id } => history(runtime, ctx, &note_id).await,
        NoteRequest::ListDeletedNotes => {
            let deleted = runtime.deleted_notes(ctx).await.map_err(refusal)?;
            Ok(ServerFrame::DeletedNotes { notes: deleted })
        }
        NoteRequest::RestoreNote { note_id, version } => {
            restore(runtime, ctx, &note_id, version).await
        }
        NoteRequest::ConfirmNote { note_id } => {
            let id = note_id_of(&note_id)?;
            let note = runtime.confirm_note(ctx, &id).await.map_err(refusal)?;
            Ok(ServerFrame::NoteConfirmed { note })
        }
    }
}

/// `edit_note`: the text replaced, if `edit_token` names the current one.
async fn edit(
    runtime: &AgentRuntime,
    ctx: &ToolExecutionContext,
    note_id: &str,
    content: &str,
    edit_token: &str,
) -> Result<ServerFrame, Refusal> {
    let id = note_id_of(note_id)?;
    if edit_token.trim().is_empty() {
        return Err((
            ErrorCode::InvalidRequest,
            "version is empty: send the version get_note or list_notes showed".into(),
        ));
    }
    let note = runtime
        .edit_note(ctx, &id, content, edit_token)
        .await
        .map_err(refusal)?;
    Ok(ServerFrame::NoteEdited { note })
}

/// `note_history`: every version, and when the note was deleted.
async fn history(
    runtime: &AgentRuntime,
    ctx: &ToolExecutionContext,
    note_id: &str,
) -> Result<ServerFrame, Refusal> {
    let id = note_id_of(note_id)?;
    let history = runtime.note_history(ctx, &id).await.map_err(refusal)?;
    let (deleted_at, purge_after) = history.deleted.unzip();
    Ok(ServerFrame::NoteVersions {
        note_id: history.note_id.to_string(),
        versions: history.versions,
        deleted_at,
        purge_after,
    })
}

/// `restore_note`: a deleted note back, or an earlier version made current.
async fn restore(
    runtime: &AgentRuntime,
    ctx: &ToolExecutionContext,
    note_id: &str,
    version: Option<u32>,
) -> Result<ServerFrame, Refusal> {
    let id = note_id_of(note_id)?;
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

/// A failed memory request as the client is told it: the one mapping of every memory frame
/// (notes, and capture's proposals and conversation search), so a governance refusal is
/// `not_allowed` with the pipeline's words wherever it happens.
pub(crate) fn refusal(e: RuntimeError) -> Refusal {
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
