//! An update and a delete on a remote server in two requests.
//!
//! Statement by statement, an update on a remote server took about fifteen HTTP round trips and a
//! delete about ten, all inside one write transaction — the server's write lock held across the
//! network. Here each is one read of the note as stored (outside any transaction) and then one
//! transactional batch that does everything else ([`crate::notes::one_trip`] explains the batch).
//!
//! The batch must not act on a row that changed after the read. Its first statement copies the
//! row into the note's versions (an update) or its tombstone (a delete, the same statement a local
//! delete runs: [`crate::notes::lifecycle::tombstone_row`]) from the live row *matching what was read* —
//! the same event, and for an update the same text, metadata and `updated_at` — through a `LEFT
//! JOIN` that yields NULLs when no such row is left; the `NOT NULL` columns refuse them, and the
//! batch fails having written nothing.
//!
//! Whatever is not the plain case is handed back (`None`) to the statement-by-statement path,
//! which is authoritative and says precisely what is wrong: a note not found, a version that does
//! not match the caller's, a refused batch. A retried call lands there too (its first attempt
//! changed the note, or the batch's receipt collides with the first one's) and gets its receipt.
//! So the fast path only ever does what the statement path would have done.
//!
//! As with a remote save, the in-process indexes learn the change from the change log at the next
//! catch-up (which every search runs first).

use libsql::{Connection, Value};
use types::{NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::notes::lifecycle::tombstone_row;
use crate::notes::metadata::MetadataPatch;
use crate::notes::note::{LoadedNote, NoteWrite, note_from_row, note_read};
use crate::notes::one_trip::{push_note, try_batch};
use crate::notes::receipts::{CallKey, WriteReceipt, Written, edit_token, record_for_rows};
use crate::store::stmt::Stmt;
use crate::time::now_text;

/// What an update writes, decided before the database is touched.
pub(crate) struct Edit<'a> {
    pub(crate) note_id: &'a NoteId,
    pub(crate) content: &'a str,
    /// The version the caller was shown, when the update is checked.
    pub(crate) expected: Option<&'a str>,
    pub(crate) patch: &'a MetadataPatch,
    pub(crate) prepared: &'a crate::notes::indexing::Prepared,
}

/// Updates `owner`'s note in one read and one batch; `None` when the statement path must decide.
pub(crate) async fn update(
    conn: &Connection,
    owner: &UserId,
    call: Option<&CallKey>,
    edit: Edit<'_>,
) -> Result<Option<Written>, MemoryError> {
    let session = SessionId::user_memory(owner);
    let Some(old) = read(conn, &session, edit.note_id, true).await? else {
        return Ok(None);
    };
    if edit
        .expected
        .is_some_and(|v| edit_token(&old.note.content) != v.trim())
    {
        return Ok(None);
    }
    let write = NoteWrite {
        note_id: edit.note_id.clone(),
        content: edit.content.to_owned(),
        metadata: edit.patch.rewrite(&old.note, edit.content)?,
        created_at: crate::time::to_text(old.note.created_at),
        updated_at: now_text(),
        prepared: edit.prepared.clone(),
    };
    let mut sql = vec![
        Stmt::new(
            "INSERT INTO note_versions (note_id, session_id, version, content, metadata_json,
                 saved_at, replaced_at)
             SELECT ?1, ?2, (SELECT coalesce(max(version), 0) + 1 FROM note_versions
                             WHERE note_id = ?1),
                    live.content, live.metadata_json, live.updated_at, ?3
             FROM (SELECT 1) LEFT JOIN notes live
                 ON live.note_id = ?1 AND live.session_id = ?2 AND live.event_seq = ?4
                 AND live.content = ?5 AND live.metadata_json = ?6 AND live.updated_at = ?7",
            vec![
                edit.note_id.as_str().into(),
                session.as_str().into(),
                write.updated_at.as_str().into(),
                Value::Integer(old.event_seq),
                old.note.content.as_str().into(),
                old.stored_metadata.as_str().into(),
                old.stored_updated_at.as_str().into(),
            ],
        )
        .inline()?,
    ];
    push_event_removal(&mut sql, &session, old.event_seq)?;
    push_note(&mut sql, owner, &write)?;
    for row in record_for_rows(owner, call, edit.note_id, Some(&write.content)) {
        sql.push(row.inline()?);
    }
    if !try_batch(conn, &sql, "update").await {
        return Ok(None);
    }
    write.into_note().and_then(Written::note).map(Some)
}

/// Deletes `owner`'s note (to its tombstone) in one read and one batch; `None` when the
/// statement path must decide.
pub(crate) async fn delete(
    conn: &Connection,
    owner: &UserId,
    call: Option<&CallKey>,
    note_id: &NoteId,
) -> Result<Option<WriteReceipt>, MemoryError> {
    let session = SessionId::user_memory(owner);
    let Some(old) = read(conn, &session, note_id, false).await? else {
        return Ok(None);
    };
    let mut sql = vec![tombstone_row(&session, &old).inline()?];
    push_event_removal(&mut sql, &session, old.event_seq)?;
    sql.push(
        Stmt::new(
            "DELETE FROM notes WHERE note_id = ?1",
            vec![note_id.as_str().into()],
        )
        .inline()?,
    );
    for row in record_for_rows(owner, call, note_id, None) {
        sql.push(row.inline()?);
    }
    let receipt = WriteReceipt {
        note_id: note_id.clone(),
        edit_token: None,
        replayed: false,
    };
    Ok(try_batch(conn, &sql, "delete").await.then_some(receipt))
}

/// The note as stored, or `None` when it is not there (the statement path reports that). One
/// request: a plain `query` costs a remote connection two (it describes the statement first).
async fn read(
    conn: &Connection,
    session: &SessionId,
    note_id: &NoteId,
    live_only: bool,
) -> Result<Option<LoadedNote>, MemoryError> {
    let ctx = "reading a note";
    let sql = note_read(session, note_id, live_only).inline()?;
    let mut batch = conn
        .execute_batch(&sql)
        .await
        .map_err(MemoryError::db(ctx))?;
    let Some(Some(mut rows)) = batch.next_stmt_row() else {
        return Ok(None);
    };
    match rows.next().await.map_err(MemoryError::db(ctx))? {
        Some(row) => note_from_row(&row).map(Some),
        None => Ok(None),
    }
}

/// The statements that remove one event with its chunks and vectors, as
/// [`crate::notes::indexing::delete_event`] runs them.
fn push_event_removal(
    sql: &mut Vec<String>,
    session: &SessionId,
    seq: i64,
) -> Result<(), MemoryError> {
    for stmt in crate::notes::indexing::event_removal() {
        sql.push(Stmt::new(stmt, vec![session.as_str().into(), Value::Integer(seq)]).inline()?);
    }
    Ok(())
}
