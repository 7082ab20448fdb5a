//! Notes: what the memory tools save, update, delete and read.
//!
//! A note lives in the user's session `memory:{user}` as one event (a user message carrying the
//! text), one `notes` row, and its chunks and vectors. Save, update and delete each touch
//! all of them in ONE transaction; the in-memory vector index changes only after the commit. An
//! update keeps the note id and `created_at`, replaces the event (new sequence number) and the
//! chunks, and bumps `updated_at`.
//!
//! Writes made for a model's tool call carry a [`CallKey`] and record a receipt in the same
//! transaction (a retried call writes nothing and gets the first receipt); a checked update
//! replaces a note only at the [`edit_token`] its caller was shown (see [`crate::notes::receipts`]).

use chrono::{DateTime, Utc};
use libsql::{Connection, Rows};
use serde::{Deserialize, Serialize};
use types::{NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::bounds::{MAX_NOTE_BYTES, TooLong};
use crate::notes::indexing::{EventRef, Prepared, delete_event, insert_chunks, prepare};
use crate::notes::lifecycle::{entomb, keep_version};
use crate::notes::metadata::MetadataPatch;
pub use crate::notes::metadata::NoteMetadata;
use crate::notes::note_rows::{chunk_meta, note_rows};
use crate::notes::receipts::{CallKey, WriteReceipt, Written, edit_token, record_for, replay};
use crate::notes::sessions::{allocate_seq, ensure_session, to_sql_seq};
use crate::store::batch_read::Reads;
use crate::store::rows::first_row;
use crate::store::rows::query_first;
use crate::store::stmt::Stmt;
use crate::store::{begin, finish};
use crate::time::{self, now_text, to_text};
use memory_index::vector_index::IndexChange;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub note_id: NoteId,
    pub content: String,
    pub metadata: NoteMetadata,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A note as exported and imported (the CLI writes one per line, as JSON Lines).
pub type ExportedNote = Note;

pub(crate) fn validate(content: &str) -> Result<&str, MemoryError> {
    let content = content.trim();
    if content.is_empty() {
        return Err(MemoryError::InvalidInput(
            "the note is empty: give the text to remember".into(),
        ));
    }
    if content.contains('\0') {
        // SQLite's local API would keep only the text before it.
        return Err(MemoryError::InvalidInput(
            "the note contains a NUL character: remove it and save again".into(),
        ));
    }
    if let Err(too_long) = TooLong::check(content, MAX_NOTE_BYTES) {
        return Err(MemoryError::InvalidInput(format!(
            "the note is too long ({too_long}): save a shorter summary"
        )));
    }
    Ok(content)
}

/// Everything needed to write one note's rows.
#[derive(Clone)]
pub(crate) struct NoteWrite {
    pub(crate) note_id: NoteId,
    pub(crate) content: String,
    pub(crate) metadata: NoteMetadata,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
    pub(crate) prepared: Prepared,
}

impl MemoryStore {
    /// Writes a new note for `user` with a fresh id `note-<uuid>`; a second call with the same
    /// key writes nothing and returns the first call's receipt (see [`MemoryStore::save`]).
    pub(crate) async fn write_new(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        content: &str,
        metadata: NoteMetadata,
    ) -> Result<Written, MemoryError> {
        let content = validate(content)?.to_owned();
        let metadata = metadata.validated()?;
        let note_id = NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string())
            .map_err(|e| MemoryError::InvalidInput(e.to_string()))?;
        let prepared = prepare(self.inner.embedder.as_ref(), &content).await?;
        let now = now_text();
        let write = NoteWrite {
            note_id,
            content,
            metadata,
            created_at: now.clone(),
            updated_at: now,
            prepared,
        };
        let (owner, index, call) = (user.clone(), self.inner.index.clone(), call.cloned());
        let one_trip = self.inner.db.saves_in_one_batch();
        let written = self
            .write(move |conn| async move {
                if one_trip {
                    return match crate::notes::one_trip::save(&conn, &owner, call.as_ref(), &write)
                        .await?
                    {
                        Some(receipt) => Ok(Written::replayed(receipt)),
                        None => Written::note(write.into_note()?),
                    };
                }
                let tx = begin(&conn).await?;
                let mut changes = Vec::new();
                let outcome = async {
                    if let Some(receipt) = replay(&tx, &owner, call.as_ref()).await? {
                        return Ok(Err(receipt));
                    }
                    insert_note(&tx, &owner, &write, &mut changes).await?;
                    record_for(
                        &tx,
                        &owner,
                        call.as_ref(),
                        &write.note_id,
                        Some(&write.content),
                    )
                    .await?;
                    Ok(Ok(()))
                }
                .await;
                match finish(tx, outcome).await? {
                    Err(receipt) => Ok(Written::replayed(receipt)),
                    Ok(()) => {
                        index.apply(&changes);
                        Written::note(write.into_note()?)
                    }
                }
            })
            .await?;
        tracing::info!(user = %user, note_id = %written.receipt.note_id, replayed = written.receipt.replayed, "saved note");
        Ok(written)
    }

    /// Replaces the text of `note_id`, keeping its id, metadata and `created_at`; the replaced
    /// text is kept as a version (see [`MemoryStore::history`]). With `expected`, only if the
    /// note's current [`edit_token`] is that (else [`MemoryError::VersionMismatch`], and nothing
    /// changes); `patch` changes the note's category, tags or expiry (validated like a save; an
    /// empty patch keeps them) in the same transaction; idempotent per call key.
    pub async fn update(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: &NoteId,
        content: &str,
        expected: Option<&str>,
        patch: MetadataPatch,
    ) -> Result<Written, MemoryError> {
        let content = validate(content)?.to_owned();
        let prepared = prepare(self.inner.embedder.as_ref(), &content).await?;
        let (user, note_id, index) = (user.clone(), note_id.clone(), self.inner.index.clone());
        let (call, expected) = (call.cloned(), expected.map(str::to_owned));
        let one_trip = self.inner.db.is_remote();
        self.write(move |conn| async move {
            if one_trip {
                let edit = crate::notes::one_trip_edit::Edit {
                    note_id: &note_id,
                    content: &content,
                    expected: expected.as_deref(),
                    patch: &patch,
                    prepared: &prepared,
                };
                if let Some(written) =
                    crate::notes::one_trip_edit::update(&conn, &user, call.as_ref(), edit).await?
                {
                    tracing::info!(user = %user, note_id = %note_id, "updated note");
                    return Ok(written);
                }
            }
            let tx = begin(&conn).await?;
            let mut changes = Vec::new();
            let outcome = async {
                if let Some(receipt) = replay(&tx, &user, call.as_ref()).await? {
                    return Ok(Err(receipt));
                }
                let session = SessionId::user_memory(&user);
                let old = load_note(&tx, &session, &note_id, true).await?;
                let metadata = patch.rewrite(&old.note, &content)?;
                if let Some(expected) = &expected
                    && edit_token(&old.note.content) != expected.trim()
                {
                    return Err(MemoryError::VersionMismatch(note_id.clone()));
                }
                keep_version(&tx, &session, &old.note).await?;
                old.delete_event(&tx, &session, &mut changes).await?;
                let write = NoteWrite {
                    note_id: note_id.clone(),
                    content,
                    metadata,
                    created_at: to_text(old.note.created_at),
                    updated_at: now_text(),
                    prepared,
                };
                insert_note(&tx, &user, &write, &mut changes).await?;
                record_for(&tx, &user, call.as_ref(), &note_id, Some(&write.content)).await?;
                Ok(Ok(write))
            }
            .await;
            match finish(tx, outcome).await? {
                Err(receipt) => Ok(Written::replayed(receipt)),
                Ok(write) => {
                    index.apply(&changes);
                    tracing::info!(user = %user, note_id = %note_id, "updated note");
                    Written::note(write.into_note()?)
                }
            }
        })
        .await
    }

    /// Deletes `note_id`: its event, chunks and vectors go at once; its text stays
    /// restorable as a tombstone for the retention window (see [`crate::notes::lifecycle`]).
    /// Idempotent per call key: a retried delete returns the receipt of the delete it made
    /// instead of "not found".
    pub async fn delete(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: &NoteId,
    ) -> Result<WriteReceipt, MemoryError> {
        let (user, note_id, index) = (user.clone(), note_id.clone(), self.inner.index.clone());
        let call = call.cloned();
        let one_trip = self.inner.db.is_remote();
        self.write(move |conn| async move {
            if one_trip
                && let Some(receipt) =
                    crate::notes::one_trip_edit::delete(&conn, &user, call.as_ref(), &note_id)
                        .await?
            {
                tracing::info!(user = %user, note_id = %note_id, "deleted note");
                return Ok(receipt);
            }
            let tx = begin(&conn).await?;
            let mut changes = Vec::new();
            let outcome = async {
                if let Some(receipt) = replay(&tx, &user, call.as_ref()).await? {
                    return Ok(receipt);
                }
                let session = SessionId::user_memory(&user);
                let old = load_note(&tx, &session, &note_id, false).await?;
                entomb(&tx, &session, &old).await?;
                old.delete_event(&tx, &session, &mut changes).await?;
                tx.execute("DELETE FROM notes WHERE note_id = ?1", [note_id.as_str()])
                    .await
                    .map_err(MemoryError::db("deleting a note"))?;
                record_for(&tx, &user, call.as_ref(), &note_id, None).await?;
                Ok(WriteReceipt {
                    note_id: note_id.clone(),
                    edit_token: None,
                    replayed: false,
                })
            }
            .await;
            let receipt = finish(tx, outcome).await?;
            if !receipt.replayed {
                index.apply(&changes);
                tracing::info!(user = %user, note_id = %note_id, "deleted note");
            }
            Ok(receipt)
        })
        .await
    }

    pub async fn get(&self, user: &UserId, note_id: &NoteId) -> Result<Note, MemoryError> {
        let read = note_read(&SessionId::user_memory(user), note_id, true);
        let (note_id, batching) = (note_id.clone(), self.batching());
        self.read(move |conn| async move {
            // One request to a remote server, where a described query takes two.
            let rows = Reads::new(conn, batching).one(read, NOTE_CTX).await?;
            Ok(loaded_from(rows, &note_id).await?.note)
        })
        .await
    }

    /// All of the user's notes that have not expired, oldest first.
    pub async fn list_notes(&self, user: &UserId) -> Result<Vec<Note>, MemoryError> {
        let session = SessionId::user_memory(user);
        self.read(move |conn| async move {
            let mut rows = conn
                .query(
                    "SELECT note_id, content, metadata_json, created_at, updated_at, event_seq
                     FROM notes WHERE session_id = ?1 AND (expires_at IS NULL OR expires_at > ?2)
                     ORDER BY created_at, note_id",
                    [session.as_str(), now_text().as_str()],
                )
                .await
                .map_err(MemoryError::db("listing notes"))?;
            let mut notes = Vec::new();
            while let Some(row) = rows
                .next()
                .await
                .map_err(MemoryError::db("listing notes"))?
            {
                notes.push(note_from_row(&row)?.note);
            }
            Ok(notes)
        })
        .await
    }
}

impl NoteWrite {
    pub(crate) fn into_note(self) -> Result<Note, MemoryError> {
        Ok(Note {
            note_id: self.note_id,
            content: self.content,
            metadata: self.metadata,
            created_at: time::parse(&self.created_at)?,
            updated_at: time::parse(&self.updated_at)?,
        })
    }
}

/// Writes the event, the note row and the chunks of one note into the open transaction.
pub(crate) async fn insert_note(
    conn: &Connection,
    user: &UserId,
    write: &NoteWrite,
    changes: &mut Vec<IndexChange>,
) -> Result<(), MemoryError> {
    let session = SessionId::user_memory(user);
    ensure_session(conn, &session, user, &write.updated_at).await?;
    let seq = to_sql_seq(allocate_seq(conn, &session).await?)?;
    for row in note_rows(&session, write, seq)? {
        row.run(conn, "saving a note").await?;
    }
    let meta = chunk_meta(write);
    insert_chunks(
        conn,
        EventRef {
            session: session.as_str(),
            seq,
        },
        &meta,
        &crate::notes::facet_rows::note_facets(&meta, &write.metadata),
        &write.prepared,
        changes,
    )
    .await
}

pub(crate) struct LoadedNote {
    pub(crate) note: Note,
    pub(crate) event_seq: i64,
    /// The row's `metadata_json` and `updated_at` exactly as stored (a remote edit checks that
    /// the row is still as it read it, see [`crate::notes::one_trip_edit`]).
    pub(crate) stored_metadata: String,
    pub(crate) stored_updated_at: String,
}

impl LoadedNote {
    /// Deletes the note's event of `session` with its chunks and vectors (the note row is the
    /// caller's to replace, entomb or keep).
    pub(crate) async fn delete_event(
        &self,
        conn: &Connection,
        session: &SessionId,
        changes: &mut Vec<IndexChange>,
    ) -> Result<(), MemoryError> {
        let event = EventRef {
            session: session.as_str(),
            seq: self.event_seq,
        };
        delete_event(conn, event, changes).await
    }
}

/// The read of one note of `session` (its columns as [`note_from_row`] takes them).
pub(crate) fn note_read(session: &SessionId, note_id: &NoteId, live_only: bool) -> Stmt {
    // An expired note is not found (until the sweeper deletes it), except by delete.
    let now = if live_only { now_text() } else { String::new() };
    Stmt::new(
        "SELECT note_id, content, metadata_json, created_at, updated_at, event_seq
         FROM notes WHERE note_id = ?1 AND session_id = ?2
         AND (?3 = '' OR expires_at IS NULL OR expires_at > ?3)",
        vec![note_id.as_str().into(), session.as_str().into(), now.into()],
    )
}

async fn load_note(
    conn: &Connection,
    session: &SessionId,
    note_id: &NoteId,
    live_only: bool,
) -> Result<LoadedNote, MemoryError> {
    let read = note_read(session, note_id, live_only);
    let rows = conn
        .query(read.sql.as_ref(), read.args)
        .await
        .map_err(MemoryError::db(NOTE_CTX))?;
    loaded_from(rows, note_id).await
}

const NOTE_CTX: &str = "reading a note";

/// The note in the rows of [`note_read`]; [`MemoryError::NoteNotFound`] when there is none.
async fn loaded_from(rows: Rows, note_id: &NoteId) -> Result<LoadedNote, MemoryError> {
    first_row(rows, NOTE_CTX, note_from_row)
        .await?
        .ok_or_else(|| MemoryError::NoteNotFound(note_id.clone()))
}

pub(crate) async fn note_exists(conn: &Connection, note_id: &NoteId) -> Result<bool, MemoryError> {
    let found = query_first(
        conn,
        "SELECT 1 FROM notes WHERE note_id = ?1",
        [note_id.as_str()],
        "reading a note",
        |_| Ok(()),
    )
    .await?;
    Ok(found.is_some())
}

pub(crate) fn note_from_row(row: &libsql::Row) -> Result<LoadedNote, MemoryError> {
    let ctx = "reading a note";
    let text = |i| row.get::<String>(i).map_err(MemoryError::db(ctx));
    let (stored_metadata, stored_updated_at) = (text(2)?, text(4)?);
    Ok(LoadedNote {
        note: Note {
            note_id: NoteId::parse(&text(0)?).map_err(MemoryError::corrupt("note id"))?,
            content: text(1)?,
            metadata: serde_json::from_str(&stored_metadata)
                .map_err(MemoryError::corrupt("note metadata"))?,
            created_at: time::parse(&text(3)?)?,
            updated_at: time::parse(&stored_updated_at)?,
        },
        event_seq: row.get::<i64>(5).map_err(MemoryError::db(ctx))?,
        stored_metadata,
        stored_updated_at,
    })
}
