//! A note's life after it is saved: versions, tombstones, restore, confirm and purge.
//!
//! - An update copies the text it replaces (with its metadata) into `note_versions`, in the
//!   update's own transaction; the note id never changes. Search and recall index only the
//!   current text: old versions have no chunks or vectors.
//! - A delete moves the note into `deleted_notes` (a tombstone) and removes its event, chunks,
//!   vectors at once; its versions stay. Within the retention window
//!   (`[memory] tombstone_retention_days`, default 30) [`MemoryStore::restore`] brings it
//!   back (`restore`), re-indexed, with the same id; after it the sweeper purges the tombstone and every
//!   version ([`Upkeep::purge_deleted`](crate::Upkeep::purge_deleted)), leaving nothing behind.
//! - Restoring a version of a live note is an update to that version's text (so the text it
//!   replaces becomes a version in turn: a restore can always be undone).
//! - [`MemoryStore::confirm`] (in `provenance`) marks an unconfirmed note (one saved after untrusted tool
//!   output, see [`crate::notes::provenance`]) as confirmed, so automatic recall may use it.

use chrono::{DateTime, Utc};
use libsql::{Connection, Value};
use serde::{Deserialize, Serialize};
use types::{NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::metadata::NoteMetadata;
use crate::notes::note::{LoadedNote, Note};
use crate::rooms::Upkeep;
use crate::store::rows::query_first;
use crate::store::stmt::Stmt;
use crate::store::{begin, finish};
use crate::time::{self, now_text, to_text};

/// Tombstones are kept this long unless configured otherwise.
pub const DEFAULT_TOMBSTONE_RETENTION_DAYS: u32 = 30;

/// One text a note has had, numbered from 1 (the first save) upwards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoteVersion {
    pub version: u32,
    pub content: String,
    pub metadata: NoteMetadata,
    /// When this text was written.
    pub saved_at: DateTime<Utc>,
    /// When it was replaced by the next version; `None` for the current (or last) one.
    pub replaced_at: Option<DateTime<Utc>>,
}

/// Whether a note is live or deleted (and restorable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NoteState {
    Live,
    /// Deleted at `deleted_at`; restorable until `purge_after`, then purged by the sweeper.
    Deleted {
        deleted_at: DateTime<Utc>,
        purge_after: DateTime<Utc>,
    },
}

/// Every version of one note, oldest first; the last is the current (or, if deleted, last) text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoteHistory {
    pub note_id: NoteId,
    pub state: NoteState,
    pub versions: Vec<NoteVersion>,
}

/// A deleted note that can still be restored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeletedNote {
    pub note: Note,
    /// The path it had as a file of the `memory` tool (where a restore puts it back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub deleted_at: DateTime<Utc>,
    pub purge_after: DateTime<Utc>,
}

/// A note row as read for history and restore: live or tombstone.
pub(crate) struct Stored {
    pub(crate) note: Note,
    pub(crate) deleted_at: Option<DateTime<Utc>>,
}

/// Copies the note's current text into its versions (inside the caller's transaction), before an
/// update replaces it.
pub(crate) async fn keep_version(
    conn: &Connection,
    session: &SessionId,
    note: &Note,
) -> Result<(), MemoryError> {
    let metadata =
        serde_json::to_string(&note.metadata).map_err(MemoryError::corrupt("note metadata"))?;
    conn.execute(
        "INSERT INTO note_versions (note_id, session_id, version, content, metadata_json,
             saved_at, replaced_at)
         VALUES (?1, ?2, (SELECT coalesce(max(version), 0) + 1 FROM note_versions
                          WHERE note_id = ?1), ?3, ?4, ?5, ?6)",
        libsql::params![
            note.note_id.as_str(),
            session.as_str(),
            note.content.as_str(),
            metadata,
            to_text(note.updated_at),
            now_text()
        ],
    )
    .await
    .map_err(MemoryError::db("keeping a note version"))?;
    Ok(())
}

/// [`keep_version`] of `note_id`'s live row as stored, when `replacement` differs from its text
/// (a put that rewrites a key with the same value leaves no version).
pub(crate) async fn keep_stored_version(
    conn: &Connection,
    note_id: &NoteId,
    replacement: &str,
) -> Result<(), MemoryError> {
    conn.execute(
        "INSERT INTO note_versions (note_id, session_id, version, content, metadata_json,
             saved_at, replaced_at)
         SELECT note_id, session_id, (SELECT coalesce(max(version), 0) + 1 FROM note_versions
                                      WHERE note_id = ?1),
                content, metadata_json, updated_at, ?2
         FROM notes WHERE note_id = ?1 AND content <> ?3",
        [note_id.as_str(), now_text().as_str(), replacement],
    )
    .await
    .map_err(MemoryError::db("keeping a note version"))?;
    Ok(())
}

/// Moves the note into `deleted_notes` (inside the caller's transaction, which removes the live
/// row and its index entries afterwards): its text, metadata, and the file path or key the live
/// row has, so a restore brings it back where it was.
pub(crate) async fn entomb(
    conn: &Connection,
    session: &SessionId,
    old: &LoadedNote,
) -> Result<(), MemoryError> {
    tombstone_row(session, old)
        .run(conn, "keeping a deleted note")
        .await?;
    Ok(())
}

/// [`entomb`]'s statement: copies the live row as stored, provided it still holds `old`'s event.
/// When it does not, the `NOT NULL` columns refuse the NULLs the join yields — so a remote batch
/// built on a read that went stale fails whole (see [`crate::notes::one_trip_edit`]).
pub(crate) fn tombstone_row(session: &SessionId, old: &LoadedNote) -> Stmt {
    Stmt::new(
        "INSERT OR REPLACE INTO deleted_notes (note_id, session_id, content, metadata_json,
             created_at, updated_at, deleted_at, path, mem_namespace, mem_key)
         SELECT ?1, ?2, live.content, live.metadata_json, live.created_at, live.updated_at,
                ?3, live.path, live.mem_namespace, live.mem_key
         FROM (SELECT 1) LEFT JOIN notes live
             ON live.note_id = ?1 AND live.session_id = ?2 AND live.event_seq = ?4",
        vec![
            old.note.note_id.as_str().into(),
            session.as_str().into(),
            now_text().into(),
            Value::Integer(old.event_seq),
        ],
    )
}

/// Removes every version of a note (a note swept at expiry leaves none behind).
pub(crate) async fn forget_versions(conn: &Connection, note_id: &str) -> Result<(), MemoryError> {
    conn.execute("DELETE FROM note_versions WHERE note_id = ?1", [note_id])
        .await
        .map_err(MemoryError::db("removing note versions"))?;
    Ok(())
}

pub(crate) async fn load_stored(
    conn: &Connection,
    session: &SessionId,
    note_id: &NoteId,
) -> Result<Stored, MemoryError> {
    let ctx = "reading a note";
    query_first(
        conn,
        "SELECT content, metadata_json, created_at, updated_at, NULL FROM notes
             WHERE note_id = ?1 AND session_id = ?2
         UNION ALL
         SELECT content, metadata_json, created_at, updated_at, deleted_at FROM deleted_notes
             WHERE note_id = ?1 AND session_id = ?2
         LIMIT 1",
        [note_id.as_str(), session.as_str()],
        ctx,
        |row| {
            let text = |i| row.get::<String>(i).map_err(MemoryError::db(ctx));
            let deleted_at: Option<String> = row.get(4).map_err(MemoryError::db(ctx))?;
            Ok(Stored {
                note: Note {
                    note_id: note_id.clone(),
                    content: text(0)?,
                    metadata: serde_json::from_str(&text(1)?)
                        .map_err(MemoryError::corrupt("note metadata"))?,
                    created_at: time::parse(&text(2)?)?,
                    updated_at: time::parse(&text(3)?)?,
                },
                deleted_at: deleted_at.as_deref().map(time::parse).transpose()?,
            })
        },
    )
    .await?
    .ok_or_else(|| MemoryError::NoteNotFound(note_id.clone()))
}

async fn past_versions(
    conn: &Connection,
    note_id: &NoteId,
) -> Result<Vec<NoteVersion>, MemoryError> {
    let ctx = "reading note versions";
    let mut rows = conn
        .query(
            "SELECT version, content, metadata_json, saved_at, replaced_at FROM note_versions
             WHERE note_id = ?1 ORDER BY version",
            [note_id.as_str()],
        )
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut versions = Vec::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        let text = |i| row.get::<String>(i).map_err(MemoryError::db(ctx));
        versions.push(NoteVersion {
            version: u32::try_from(row.get::<i64>(0).map_err(MemoryError::db(ctx))?)
                .map_err(MemoryError::corrupt("note version"))?,
            content: text(1)?,
            metadata: serde_json::from_str(&text(2)?)
                .map_err(MemoryError::corrupt("note metadata"))?,
            saved_at: time::parse(&text(3)?)?,
            replaced_at: Some(time::parse(&text(4)?)?),
        });
    }
    Ok(versions)
}

impl MemoryStore {
    /// Every version of `note_id` (live or deleted, not yet purged), oldest first.
    pub async fn history(
        &self,
        user: &UserId,
        note_id: &NoteId,
    ) -> Result<NoteHistory, MemoryError> {
        let (session, note_id) = (SessionId::user_memory(user), note_id.clone());
        let retention = self.upkeep().tombstone_retention();
        self.read(move |conn| async move {
            let stored = load_stored(&conn, &session, &note_id).await?;
            let mut versions = past_versions(&conn, &note_id).await?;
            let next = versions.last().map_or(1, |v| v.version + 1);
            versions.push(NoteVersion {
                version: next,
                content: stored.note.content,
                metadata: stored.note.metadata,
                saved_at: stored.note.updated_at,
                replaced_at: None,
            });
            let state = match stored.deleted_at {
                None => NoteState::Live,
                Some(deleted_at) => NoteState::Deleted {
                    deleted_at,
                    purge_after: deleted_at + retention,
                },
            };
            Ok(NoteHistory {
                note_id,
                state,
                versions,
            })
        })
        .await
    }

    /// `user`'s deleted notes that can still be restored, most recently deleted first.
    pub async fn list_deleted(&self, user: &UserId) -> Result<Vec<DeletedNote>, MemoryError> {
        let session = SessionId::user_memory(user);
        let retention = self.upkeep().tombstone_retention();
        self.read(move |conn| async move {
            let ctx = "listing deleted notes";
            let mut rows = conn
                .query(
                    "SELECT note_id, content, metadata_json, created_at, updated_at, deleted_at,
                            path
                     FROM deleted_notes WHERE session_id = ?1
                     ORDER BY deleted_at DESC, note_id",
                    [session.as_str()],
                )
                .await
                .map_err(MemoryError::db(ctx))?;
            let mut deleted = Vec::new();
            while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                let text = |i| row.get::<String>(i).map_err(MemoryError::db(ctx));
                let deleted_at = time::parse(&text(5)?)?;
                deleted.push(DeletedNote {
                    note: Note {
                        note_id: NoteId::parse(&text(0)?)
                            .map_err(MemoryError::corrupt("note id"))?,
                        content: text(1)?,
                        metadata: serde_json::from_str(&text(2)?)
                            .map_err(MemoryError::corrupt("note metadata"))?,
                        created_at: time::parse(&text(3)?)?,
                        updated_at: time::parse(&text(4)?)?,
                    },
                    path: row.get(6).map_err(MemoryError::db(ctx))?,
                    deleted_at,
                    purge_after: deleted_at + retention,
                });
            }
            Ok(deleted)
        })
        .await
    }
}

impl Upkeep<'_> {
    /// How long a deleted note stays restorable (`[memory] tombstone_retention_days`).
    pub fn tombstone_retention(&self) -> chrono::Duration {
        chrono::Duration::days(i64::from(self.inner.tombstone_retention_days))
    }

    /// Purges the tombstones (and every version) of notes deleted more than `older_than` ago, of
    /// every user of the store. Returns the purged ids. The sweeper calls this with
    /// [`Upkeep::tombstone_retention`](crate::Upkeep::tombstone_retention).
    pub async fn purge_deleted(
        &self,
        older_than: chrono::Duration,
    ) -> Result<Vec<NoteId>, MemoryError> {
        let cutoff = to_text(Utc::now() - older_than);
        let purged = self
            .write(move |conn| async move {
                let tx = begin(&conn).await?;
                let outcome = async {
                    let ctx = "purging deleted notes";
                    let mut rows = tx
                        .query(
                            "SELECT note_id FROM deleted_notes WHERE deleted_at <= ?1",
                            [cutoff.as_str()],
                        )
                        .await
                        .map_err(MemoryError::db(ctx))?;
                    let mut ids = Vec::new();
                    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                        ids.push(row.get::<String>(0).map_err(MemoryError::db(ctx))?);
                    }
                    drop(rows);
                    let mut purged = Vec::with_capacity(ids.len());
                    for id in ids {
                        forget_versions(&tx, &id).await?;
                        tx.execute(
                            "DELETE FROM deleted_notes WHERE note_id = ?1",
                            [id.as_str()],
                        )
                        .await
                        .map_err(MemoryError::db(ctx))?;
                        purged.push(NoteId::parse(&id).map_err(MemoryError::corrupt("note id"))?);
                    }
                    Ok(purged)
                }
                .await;
                finish(tx, outcome).await
            })
            .await?;
        if !purged.is_empty() {
            tracing::info!(notes = purged.len(), "purged deleted notes");
        }
        Ok(purged)
    }
}
