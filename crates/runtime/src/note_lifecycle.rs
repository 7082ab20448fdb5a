//! A note's life as its user sees it: every version of a note, the deleted notes that can still
//! be restored, restoring one (or going back to an earlier version of a live note, which adds a
//! version and never rewrites history), and confirming a note saved after untrusted tool output.
//!
//! These operations have no model tool, so they pass the registry's governance stages directly
//! (DESIGN §7) as the caller's surface: permission (a read-only surface may not restore or
//! confirm), rate limit, the write with its audit row in its own transaction (reads get their
//! own row), metrics. The user is the caller's authenticated one, never an argument.

use memory::{CallKey, Note, NoteState, NoteVersion, Provenance};
use serde_json::json;
use tools::MemoryAccess;
use tools::governance::Answer;
use types::{
    DeletedNoteView, NoteId, NoteVersionView, NoteView, ProvenanceView, ToolExecutionContext,
    memory_ops,
};

use crate::RuntimeError;
use crate::notes::{note_error, note_view, rfc3339_in};
use crate::runtime::AgentRuntime;

/// Every version of a note, oldest first; `deleted` holds when it was deleted and when it will
/// be purged.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteTimeline {
    pub note_id: NoteId,
    pub versions: Vec<NoteVersionView>,
    /// When it was deleted and when it will be purged (RFC 3339), for a deleted note.
    pub deleted: Option<(String, String)>,
}

impl AgentRuntime {
    /// Every version of the caller's note `note_id`, live or deleted (not yet purged).
    pub async fn note_history(
        &self,
        ctx: &ToolExecutionContext,
        note_id: &NoteId,
    ) -> Result<NoteTimeline, RuntimeError> {
        let store = self.notes_store()?;
        let history = self
            .govern(
                ctx,
                memory_ops::HISTORY,
                MemoryAccess::note_read(note_id),
                |_| async move {
                    store
                        .history(&ctx.user_id, note_id)
                        .await
                        .map_err(note_error("reading a note's history"))
                },
            )
            .await?;
        let tz = self.zone();
        Ok(NoteTimeline {
            note_id: history.note_id,
            versions: history
                .versions
                .into_iter()
                .map(|v| version_entry(v, tz))
                .collect(),
            deleted: match history.state {
                NoteState::Live => None,
                NoteState::Deleted {
                    deleted_at,
                    purge_after,
                } => Some((rfc3339_in(deleted_at, tz), rfc3339_in(purge_after, tz))),
            },
        })
    }

    /// The caller's deleted notes that can still be restored, most recently deleted first.
    pub async fn deleted_notes(
        &self,
        ctx: &ToolExecutionContext,
    ) -> Result<Vec<DeletedNoteView>, RuntimeError> {
        let store = self.notes_store()?;
        let access = MemoryAccess::notes_read();
        let deleted = self
            .govern(ctx, memory_ops::DELETED, access, |_| async move {
                store
                    .list_deleted(&ctx.user_id)
                    .await
                    .map_err(note_error("listing deleted notes"))
            })
            .await?;
        let tz = self.zone();
        Ok(deleted
            .into_iter()
            .map(|d| DeletedNoteView {
                note: note_view(d.note, tz),
                deleted_at: rfc3339_in(d.deleted_at, tz),
                purge_after: rfc3339_in(d.purge_after, tz),
            })
            .collect())
    }

    /// Restores the caller's note `note_id`: a deleted one to its last text (or to `version`),
    /// a live one to `version` (required), as a new current version. A bad id or version changes
    /// nothing.
    pub async fn restore_note(
        &self,
        ctx: &ToolExecutionContext,
        note_id: &NoteId,
        version: Option<u32>,
    ) -> Result<NoteView, RuntimeError> {
        let store = self.notes_store()?;
        self.change_note(ctx, memory_ops::RESTORE, note_id, |call| async move {
            let restored = store.restore(&ctx.user_id, call.as_ref(), note_id, version);
            restored.await.map_err(note_error("restoring a note"))
        })
        .await
    }

    /// Marks the caller's note `note_id` as confirmed, so automatic recall may use it.
    pub async fn confirm_note(
        &self,
        ctx: &ToolExecutionContext,
        note_id: &NoteId,
    ) -> Result<NoteView, RuntimeError> {
        let store = self.notes_store()?;
        self.change_note(ctx, memory_ops::CONFIRM, note_id, |call| async move {
            let confirmed = store.confirm(&ctx.user_id, call.as_ref(), note_id);
            confirmed.await.map_err(note_error("confirming a note"))
        })
        .await
    }

    /// A change `op` (a memory operation) to the caller's note `note_id`, through the one
    /// pipeline; the note as it is after it.
    async fn change_note<F, Fut>(
        &self,
        ctx: &ToolExecutionContext,
        op: &str,
        note_id: &NoteId,
        change: F,
    ) -> Result<NoteView, RuntimeError>
    where
        F: FnOnce(Option<CallKey>) -> Fut,
        Fut: Future<Output = Result<Note, RuntimeError>>,
    {
        let access = MemoryAccess::note_change(note_id);
        Ok(note_view(
            self.govern(ctx, op, access, change).await?,
            self.zone(),
        ))
    }

    /// Runs `op` through the one governance pipeline as `ctx`'s surface (permission and rate
    /// limit; no free text to screen), handing it the call key that carries the audit tag so
    /// that a write records its row in its own transaction; reads and failures get theirs from
    /// the closing stages, with the metrics. A refusal is [`RuntimeError::NoteRefused`].
    pub(crate) async fn govern<T, F, Fut>(
        &self,
        ctx: &ToolExecutionContext,
        name: &str,
        access: MemoryAccess,
        op: F,
    ) -> Result<T, RuntimeError>
    where
        T: Answer,
        F: FnOnce(Option<CallKey>) -> Fut,
        Fut: Future<Output = Result<T, RuntimeError>>,
    {
        govern_on(&self.tools, ctx, name, access, op).await
    }
}

/// [`AgentRuntime::govern`] through `tools`' governance, for callers that hold the registry
/// rather than the runtime (capture's background task).
pub(crate) async fn govern_on<T, F, Fut>(
    tools: &tools::ToolRegistry,
    ctx: &ToolExecutionContext,
    name: &str,
    access: MemoryAccess,
    op: F,
) -> Result<T, RuntimeError>
where
    T: Answer,
    F: FnOnce(Option<CallKey>) -> Fut,
    Fut: Future<Output = Result<T, RuntimeError>>,
{
    let args = json!({ "note_id": access.key });
    tools
        .governance()
        .govern(name, &access, args, ctx, |_, governed| {
            op(governed.audit.map(CallKey::audit_only))
        })
        .await
}

fn version_entry(v: NoteVersion, tz: chrono_tz::Tz) -> NoteVersionView {
    NoteVersionView {
        version: v.version,
        edit_token: memory::edit_token(&v.content),
        text: v.content,
        category: v.metadata.category.map(|c| c.as_str().to_owned()),
        tags: v.metadata.tags,
        saved_at: rfc3339_in(v.saved_at, tz),
        replaced_at: v.replaced_at.map(|t| rfc3339_in(t, tz)),
        provenance: v.metadata.provenance.map(provenance_view),
    }
}

pub(crate) fn provenance_view(p: Provenance) -> ProvenanceView {
    ProvenanceView {
        origin: p.origin.as_str().to_owned(),
        session_id: p.session_id,
        turn_id: p.turn_id,
        confirmed: p.confirmed,
    }
}
