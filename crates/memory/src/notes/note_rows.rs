//! The rows one note write makes, as statements shared by the statement-by-statement path
//! ([`crate::notes::note::insert_note`]) and a remote store's one-request batch ([`crate::notes::one_trip`]):
//! the event, the `notes` row, and what each of its chunks records.

use libsql::Value;
use types::{Message, SessionId};

use crate::error::MemoryError;
use crate::notes::duplicates::text_hash;
use crate::notes::indexing::ChunkMeta;
use crate::notes::note::NoteWrite;
use crate::store::stmt::Stmt;
use crate::time::to_text;

/// Which placeholder holds the event's sequence number in each of [`note_rows`] (a remote
/// batch puts an expression there, see [`crate::notes::one_trip`]).
pub(crate) const SEQ_ARG: usize = 1;

/// The event (sequence number `seq`) and the `notes` row of one note write.
pub(crate) fn note_rows(
    session: &SessionId,
    write: &NoteWrite,
    seq: i64,
) -> Result<[Stmt; 2], MemoryError> {
    let payload = serde_json::to_string(&Message::user(write.content.clone()))
        .map_err(MemoryError::corrupt("note message"))?;
    let metadata =
        serde_json::to_string(&write.metadata).map_err(MemoryError::corrupt("note metadata"))?;
    let text = |t: &str| Value::Text(t.to_owned());
    let event = Stmt::new(
        "INSERT INTO events (session_id, seq, role, payload_json, note_id, created_at)
         VALUES (?2, ?1, 'user', ?3, ?4, ?5)",
        vec![
            Value::Integer(seq),
            text(session.as_str()),
            Value::Text(payload),
            text(write.note_id.as_str()),
            text(&write.updated_at),
        ],
    );
    let note = Stmt::new(
        "INSERT INTO notes (note_id, session_id, event_seq, content, metadata_json, created_at,
             updated_at, category, context, confidence, expires_at, text_hash)
         VALUES (?2, ?3, ?1, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
         ON CONFLICT (note_id) DO UPDATE SET event_seq = excluded.event_seq,
             content = excluded.content, metadata_json = excluded.metadata_json,
             updated_at = excluded.updated_at, category = excluded.category,
             context = excluded.context, confidence = excluded.confidence,
             expires_at = excluded.expires_at, text_hash = excluded.text_hash",
        vec![
            Value::Integer(seq),
            text(write.note_id.as_str()),
            text(session.as_str()),
            text(&write.content),
            Value::Text(metadata),
            text(&write.created_at),
            text(&write.updated_at),
            write
                .metadata
                .category
                .map_or(Value::Null, |c| text(c.as_str())),
            write
                .metadata
                .context
                .clone()
                .map_or(Value::Null, Value::Text),
            write.metadata.confidence.map_or(Value::Null, Value::Real),
            write
                .metadata
                .expires_at
                .map_or(Value::Null, |t| Value::Text(to_text(t))),
            Value::Text(text_hash(&write.content)),
        ],
    );
    Ok([event, note])
}

/// What each chunk of a note records in its metadata.
pub(crate) fn chunk_meta(write: &NoteWrite) -> ChunkMeta {
    ChunkMeta {
        note_id: Some(write.note_id.to_string()),
        source: "user_memory".into(),
        role: None,
        created_at: write.created_at.clone(),
        updated_at: write.updated_at.clone(),
        tags: write.metadata.tags.clone(),
    }
}
