//! A save (and an import batch) on a remote server in one request.
//!
//! Over Hrana every statement of an open transaction is an HTTP round trip; a save run statement
//! by statement took about ten, and held the server's write lock across all of them. Here the
//! whole save is one transactional batch (`BEGIN`, the statements, `COMMIT`, or `ROLLBACK` if any
//! failed): the server runs it in one go, so the transaction never waits on the network.
//!
//! No statement needs the result of an earlier one: the note id, texts, vectors and times are
//! computed before, and what only the server knows is an expression the server evaluates in the
//! same transaction — the session row is upserted with its next sequence number bumped, and the
//! event, note and chunks take `next_seq - 1` of the session *owned by this user* (NULL, which
//! the `NOT NULL` columns refuse, when another user owns it); each vector finds its chunk by
//! (session, sequence, ordinal). The statements are the same ones the statement-by-statement path
//! runs ([`crate::notes::note::note_rows`], [`crate::notes::indexing::chunk_row`], …), with their arguments
//! written in as literals ([`crate::store::stmt`]): libsql sends a batch without parameters.
//!
//! An import batch first reads which of its ids are stored already (one more request), then
//! writes the others the same way.
//!
//! A batch returns no rows, so the new chunks reach this process's vector index through the
//! change log at the next catch-up (which every search and `stats` runs first), not right after
//! the commit. When the batch fails, nothing was written; a receipt for the call (a retried call)
//! or a session owned by someone else is then looked up and reported as the local path would.

use libsql::{Connection, Value};
use types::{AuditTag, SessionId, UserId};

use crate::error::MemoryError;
use crate::notes::indexing::{EventRef, chunk_row, vector_row};
use crate::notes::note::NoteWrite;
use crate::notes::note_rows::{SEQ_ARG, chunk_meta, note_rows};
use crate::notes::receipts::{CallKey, WriteReceipt, find, record_for_rows};
use crate::notes::sessions::{SessionKind, session_owner};
use crate::store::stmt::{Stmt, literal};

/// Saves `write` for `owner` in one transactional batch; the earlier receipt instead when the
/// call was already made (nothing is written then).
pub(crate) async fn save(
    conn: &Connection,
    owner: &UserId,
    call: Option<&CallKey>,
    write: &NoteWrite,
) -> Result<Option<WriteReceipt>, MemoryError> {
    let batch = save_batch(owner, call, write)?;
    let Err(source) = conn.execute_transactional_batch(&batch).await else {
        return Ok(None);
    };
    if let Some(key) = call
        && let Some(receipt) = find(conn, owner, key).await?
    {
        return Ok(Some(receipt));
    }
    let session = SessionId::user_memory(owner);
    if session_owner(conn, &session)
        .await?
        .is_some_and(|o| o != owner.as_str())
    {
        return Err(MemoryError::SessionOwnedByOtherUser(session));
    }
    Err(MemoryError::Database {
        context: "saving a note",
        source,
    })
}

/// Adds `owner`'s imported notes that are not stored yet in one transactional batch; how many.
/// `None` when the batch was refused (a note stored meanwhile, a server error): nothing was
/// written, and the caller imports them statement by statement, which is idempotent by id and
/// says precisely what is wrong.
pub(crate) async fn import(
    conn: &Connection,
    owner: &UserId,
    writes: &[NoteWrite],
    audit: Option<&AuditTag>,
) -> Result<Option<usize>, MemoryError> {
    let ids: Vec<&str> = writes.iter().map(|w| w.note_id.as_str()).collect();
    let ids = serde_json::to_string(&ids).map_err(MemoryError::corrupt("note ids"))?;
    let ctx = "reading note ids";
    let mut rows = conn
        .query(
            "SELECT note_id FROM notes WHERE note_id IN (SELECT value FROM json_each(?1))",
            [ids],
        )
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut stored = std::collections::HashSet::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        stored.insert(row.get::<String>(0).map_err(MemoryError::db(ctx))?);
    }
    drop(rows);
    let new: Vec<&NoteWrite> = writes
        .iter()
        .filter(|w| !stored.contains(w.note_id.as_str()))
        .collect();
    if new.is_empty() {
        return Ok(Some(0));
    }
    let mut sql = Vec::new();
    for write in &new {
        push_note(&mut sql, owner, write)?;
        // A governed import's audit row per note, in the same batch as the note.
        if let Some(row) = crate::notes::audit::write_row(owner, audit, Some(&write.note_id)) {
            sql.push(row.inline()?);
        }
    }
    Ok(try_batch(conn, &sql, "import").await.then_some(new.len()))
}

/// Runs `sql` as one transactional batch; whether it committed. A refused batch wrote nothing,
/// and the caller goes statement by statement, which says precisely what is wrong.
pub(crate) async fn try_batch(conn: &Connection, sql: &[String], what: &'static str) -> bool {
    match conn.execute_transactional_batch(&sql.join(";\n")).await {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(error = %e, what, "a remote batch was refused; going statement by statement");
            false
        }
    }
}

/// The batch's statements, `;`-separated.
fn save_batch(
    owner: &UserId,
    call: Option<&CallKey>,
    write: &NoteWrite,
) -> Result<String, MemoryError> {
    let mut sql = Vec::new();
    push_note(&mut sql, owner, write)?;
    for row in record_for_rows(owner, call, &write.note_id, Some(&write.content)) {
        sql.push(row.inline()?);
    }
    Ok(sql.join(";\n"))
}

/// Appends the statements that write one note for `owner`: the session (created, or its next
/// sequence number taken), the event, the note row, and each chunk with its vector.
pub(crate) fn push_note(
    sql: &mut Vec<String>,
    owner: &UserId,
    write: &NoteWrite,
) -> Result<(), MemoryError> {
    let session = SessionId::user_memory(owner);
    let quoted = |t: &str| literal(&Value::Text(t.to_owned()));
    let (s, u) = (quoted(session.as_str()), quoted(owner.as_str()));
    let seq =
        format!("(SELECT next_seq - 1 FROM sessions WHERE session_id = {s} AND user_id = {u})");
    let upsert = Stmt::new(
        "INSERT INTO sessions (session_id, user_id, kind, created_at, last_active_at, next_seq)
         VALUES (?1, ?2, ?3, ?4, ?4, 2)
         ON CONFLICT (session_id) DO UPDATE SET last_active_at = excluded.last_active_at,
             next_seq = next_seq + 1
         WHERE sessions.user_id = excluded.user_id",
        vec![
            session.as_str().into(),
            owner.as_str().into(),
            SessionKind::of(&session).as_str().into(),
            write.updated_at.as_str().into(),
        ],
    );
    sql.push(upsert.inline()?);
    for row in note_rows(&session, write, 0)? {
        sql.push(row.inline_with(&[(SEQ_ARG, &seq)])?);
    }
    let meta = chunk_meta(write);
    let meta_json = serde_json::to_string(&meta).map_err(MemoryError::corrupt("chunk metadata"))?;
    let event = EventRef {
        session: session.as_str(),
        seq: 0,
    };
    let prepared = &write.prepared;
    for (ordinal, (text, vector)) in prepared.chunks.iter().zip(&prepared.vectors).enumerate() {
        let chunk = chunk_row(event, &meta, &meta_json, ordinal, text);
        sql.push(chunk.inline_with(&[(SEQ_ARG, &seq)])?);
        let chunk_id = format!(
            "(SELECT chunk_id FROM chunks WHERE session_id = {s} AND event_seq = {seq} \
             AND ordinal = {ordinal})"
        );
        let row = vector_row(0, &prepared.model_id, vector);
        sql.push(row.inline_with(&[(1, &chunk_id)])?);
    }
    Ok(())
}
