//! Bringing a note back (see [`crate::notes::lifecycle`]): a deleted note to its last text or an older
//! version, re-indexed with the same id and — for a file of the `memory` tool or a keyed note —
//! at its path or under its key, unless a newer note holds that place; a live note to an older
//! version, as a new version, so a restore can always be undone.

use libsql::Connection;
use types::{AuditTag, NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::audit::record_write;
use crate::notes::indexing::prepare;
use crate::notes::lifecycle::{NoteState, keep_version, load_stored};
use crate::notes::metadata::{MetadataPatch, NoteMetadata};
use crate::notes::note::{Note, NoteWrite, insert_note};
use crate::notes::receipts::{CallKey, edit_token};
use crate::store::rows::query_first;
use crate::store::{begin, finish};
use crate::time::{now_text, to_text};

impl MemoryStore {
    /// Brings a note back. A deleted note is restored (re-indexed, same id) to its last text, or
    /// to `version` when given. For a live note `version` is required: its text becomes the
    /// current one again, and the text it replaces is kept as a version. With an audited `call`
    /// (a governed call) the restore records its audit row in its own transaction.
    pub async fn restore(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: &NoteId,
        version: Option<u32>,
    ) -> Result<Note, MemoryError> {
        let history = self.history(user, note_id).await?;
        let Some(current) = history.versions.last() else {
            return Err(MemoryError::NoteNotFound(note_id.clone()));
        };
        let target = match version {
            None => current,
            Some(n) => history
                .versions
                .iter()
                .find(|v| v.version == n)
                .ok_or_else(|| {
                    MemoryError::InvalidInput(format!(
                        "note {note_id} has no version {n}: it has versions 1 to {}",
                        current.version
                    ))
                })?,
        };
        match history.state {
            NoteState::Live if version.is_none() => Err(MemoryError::InvalidInput(format!(
                "note {note_id} is not deleted: give the version to go back to \
                 (see its history)"
            ))),
            NoteState::Live if target.version == current.version => {
                Err(MemoryError::InvalidInput(format!(
                    "version {} is already the current text of note {note_id}",
                    target.version
                )))
            }
            NoteState::Live => {
                let patch = MetadataPatch {
                    category: target.metadata.category,
                    tags: Some(target.metadata.tags.clone()),
                    expires_at: Some(target.metadata.expires_at),
                    provenance: target.metadata.provenance.clone(),
                };
                let expected = edit_token(&current.content);
                self.update(user, call, note_id, &target.content, Some(&expected), patch)
                    .await?;
                self.get(user, note_id).await
            }
            NoteState::Deleted { .. } => {
                let content = target.content.clone();
                let metadata = target.metadata.clone();
                let replaced_last = target.version != current.version;
                let audit = call.and_then(CallKey::audit).cloned();
                self.undelete(user, note_id, (content, metadata), replaced_last, audit)
                    .await
            }
        }
    }

    async fn undelete(
        &self,
        user: &UserId,
        note_id: &NoteId,
        (content, metadata): (String, NoteMetadata),
        replaced_last: bool,
        audit: Option<AuditTag>,
    ) -> Result<Note, MemoryError> {
        let prepared = prepare(self.inner.embedder.as_ref(), &content).await?;
        let (user, note_id, index) = (user.clone(), note_id.clone(), self.inner.index.clone());
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let mut changes = Vec::new();
            let outcome = async {
                let session = SessionId::user_memory(&user);
                let stored = load_stored(&tx, &session, &note_id).await?;
                if stored.deleted_at.is_none() {
                    // Restored meanwhile by someone else: nothing to do.
                    return Ok(stored.note);
                }
                if replaced_last {
                    keep_version(&tx, &session, &stored.note).await?;
                }
                let write = NoteWrite {
                    note_id: note_id.clone(),
                    content,
                    metadata,
                    created_at: to_text(stored.note.created_at),
                    updated_at: now_text(),
                    prepared,
                };
                check_place_free(&tx, &note_id).await?;
                insert_note(&tx, &user, &write, &mut changes).await?;
                tx.execute(
                    "UPDATE notes SET
                         path = (SELECT path FROM deleted_notes WHERE note_id = ?1),
                         mem_namespace = (SELECT mem_namespace FROM deleted_notes WHERE note_id = ?1),
                         mem_key = (SELECT mem_key FROM deleted_notes WHERE note_id = ?1)
                     WHERE note_id = ?1",
                    [note_id.as_str()],
                )
                .await
                .map_err(MemoryError::db("restoring a note's path or key"))?;
                tx.execute(
                    "DELETE FROM deleted_notes WHERE note_id = ?1",
                    [note_id.as_str()],
                )
                .await
                .map_err(MemoryError::db("restoring a note"))?;
                record_write(&tx, &user, audit.as_ref(), Some(&note_id)).await?;
                write.into_note()
            }
            .await;
            let note = finish(tx, outcome).await?;
            index.apply(&changes);
            tracing::info!(user = %user, note_id = %note_id, "restored note");
            Ok(note)
        })
        .await
    }
}

/// Refuses to restore a deleted file or keyed note whose path or key a live note holds now: the
/// user decides which one stays (nothing is changed).
async fn check_place_free(conn: &Connection, note_id: &NoteId) -> Result<(), MemoryError> {
    let ctx = "checking a deleted note's path and key";
    let place = query_first(
        conn,
        "SELECT d.path, d.mem_namespace, d.mem_key,
             EXISTS (SELECT 1 FROM notes n
                     WHERE n.session_id = d.session_id AND n.path = d.path),
             EXISTS (SELECT 1 FROM notes n
                     WHERE n.session_id = d.session_id AND n.mem_namespace = d.mem_namespace
                       AND n.mem_key = d.mem_key)
         FROM deleted_notes d WHERE d.note_id = ?1",
        [note_id.as_str()],
        ctx,
        |row| {
            let text = |i| row.get::<Option<String>>(i).map_err(MemoryError::db(ctx));
            let taken = |i| {
                row.get::<i64>(i)
                    .map(|n| n != 0)
                    .map_err(MemoryError::db(ctx))
            };
            Ok((text(0)?, text(1)?, text(2)?, taken(3)?, taken(4)?))
        },
    )
    .await?;
    let Some((path, namespace, key, path_taken, key_taken)) = place else {
        return Ok(());
    };
    if let Some(path) = path
        && path_taken
    {
        return Err(MemoryError::InvalidInput(format!(
            "a file now exists at {path}: rename or delete it, then restore note {note_id}"
        )));
    }
    if let (Some(namespace), Some(key)) = (namespace, key)
        && key_taken
    {
        return Err(MemoryError::InvalidInput(format!(
            "key {key} of namespace {namespace} now holds another note: delete that one, then \
             restore note {note_id}"
        )));
    }
    Ok(())
}
