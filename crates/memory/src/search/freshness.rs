//! Keeping this process's caches as fresh as the database, whoever wrote to it.
//!
//! The vector and keyword indexes live in this process, but other writers share the
//! database: `runner memory save|import|update|delete|reindex`, a second store on the same file, a
//! remote server's other clients. Every change to a chunk or its vector appends the chunk's id to
//! the `index_changes` log, through triggers, in the writer's own transaction (migration 3).
//!
//! A search checks the log's head (two primary-key lookups) in the same reader job that reads its
//! hits, after running both legs on the indexes as they are; [`MemoryStore::catch_up`] (`stats`,
//! and other callers) does the same on its own. When the head has moved past the last entry this
//! process applied, the search's job reads the changes instead, they are applied, and the search
//! runs again. Only the chunks named since are read back: each is put back (replaced in place) with its current vector of the
//! active model when it still has one, and removed under every other session the log names for
//! it (both indexes follow the same changes). A reader left behind the log's pruned tail reloads the whole index.
//!
//! Ordering: catch-ups apply under one lock and only move forward (a delta read from an older
//! snapshot than one already applied is dropped). This process's own writes also update the index
//! right after their commit; if a catch-up from a snapshot before such a commit lands after it, the
//! commit's log entries are newer than what the catch-up records as applied, so the next search
//! applies them again. The database stays the truth and every step is idempotent.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use libsql::{Connection, Row, Rows, Value};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::facet_rows::{FACET_COLUMNS, facets_from_row, terms_from_row};
use crate::notes::indexing::blob_to_vector;
use crate::store::batch_read::Reads;
use crate::store::rows::first_row;
use crate::store::stmt::Stmt;
use memory_index::vector_index::IndexChange;

/// The last log entry this process has applied, and the lock catch-ups apply under.
#[derive(Debug, Default)]
pub(crate) struct Freshness {
    applied: Mutex<i64>,
}

impl Freshness {
    pub(crate) fn lock(&self) -> MutexGuard<'_, i64> {
        // A plain number: still meaningful after a panic elsewhere.
        self.applied.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn applied(&self) -> i64 {
        *self.lock()
    }
}

/// The log's first and last entries (0 when it is empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LogHead {
    pub(crate) first: i64,
    pub(crate) last: i64,
}

/// What a reader found in the log.
pub(crate) enum Delta {
    /// Nothing new.
    Current,
    /// Entries were pruned before this process read them: reload everything.
    TooFarBehind,
    /// The changes up to `upto`, to apply in this order.
    Changes {
        upto: i64,
        changes: Vec<IndexChange>,
    },
}

impl MemoryStore {
    /// Applies every change committed to the database since this process last looked (by any
    /// writer) to the vector and keyword indexes.
    pub(crate) async fn catch_up(&self) -> Result<(), MemoryError> {
        let reader = self.delta_reader();
        let batching = self.batching();
        let delta = self
            .read(move |conn| async move {
                let delta = reader.read(&Reads::new(conn, batching)).await?;
                Ok(delta.unwrap_or(Delta::Current))
            })
            .await?;
        self.apply_delta(delta).await
    }

    /// What a reader job needs to read the changes since this process last caught up.
    pub(crate) fn delta_reader(&self) -> DeltaReader {
        DeltaReader {
            since: self.inner.freshness.applied(),
            model: self.inner.index.model_id().to_owned(),
            dims: self.inner.index.dims(),
        }
    }

    /// Applies what a [`DeltaReader`] found.
    pub(crate) async fn apply_delta(&self, delta: Delta) -> Result<(), MemoryError> {
        match delta {
            Delta::Current => Ok(()),
            Delta::TooFarBehind => {
                tracing::info!("memory changed a lot in another process; reloading the index");
                self.reload_index().await.map(drop)
            }
            Delta::Changes { upto, changes } => {
                let mut applied = self.inner.freshness.lock();
                if upto <= *applied {
                    // Another catch-up got here first, with a newer or equal snapshot.
                    return Ok(());
                }
                self.inner.index.apply(&changes);
                tracing::debug!(
                    from = *applied,
                    upto,
                    changes = changes.len(),
                    "caught up with other writers"
                );
                *applied = upto;
                Ok(())
            }
        }
    }
}

/// Reads, on a reader thread, the changes since a point (see [`MemoryStore::delta_reader`]).
#[derive(Debug, Clone)]
pub(crate) struct DeltaReader {
    since: i64,
    model: String,
    dims: usize,
}

impl DeltaReader {
    /// `None` when nothing was committed since; else the changes to apply.
    pub(crate) async fn read(&self, reads: &Reads) -> Result<Option<Delta>, MemoryError> {
        let head = head_from(reads.one(log_head_stmt(), LOG_CTX).await?).await?;
        self.after(reads, head).await
    }

    /// [`DeltaReader::read`], the log's head read already (in a search's batch of reads).
    pub(crate) async fn after(
        &self,
        reads: &Reads,
        head: LogHead,
    ) -> Result<Option<Delta>, MemoryError> {
        if head.last <= self.since {
            return Ok(None);
        }
        read_delta(reads, self.since, head, &self.model, self.dims)
            .await
            .map(Some)
    }
}

const LOG_CTX: &str = "reading the change log";

/// The statement that reads the log's head (see [`head_from`]).
pub(crate) fn log_head_stmt() -> Stmt {
    Stmt::new(
        "SELECT (SELECT min(seq) FROM index_changes), (SELECT max(seq) FROM index_changes)",
        Vec::new(),
    )
}

/// The head in the rows of [`log_head_stmt`].
pub(crate) async fn head_from(rows: Rows) -> Result<LogHead, MemoryError> {
    let head = first_row(rows, LOG_CTX, head_row).await?;
    Ok(head.unwrap_or_default())
}

/// The head in the row of [`log_head_stmt`].
pub(crate) fn head_row(row: &Row) -> Result<LogHead, MemoryError> {
    let get = |i| {
        row.get::<Option<i64>>(i)
            .map(|v| v.unwrap_or(0))
            .map_err(MemoryError::db(LOG_CTX))
    };
    Ok(LogHead {
        first: get(0)?,
        last: get(1)?,
    })
}

/// The log's head, read on `conn` (inside a write transaction, say).
pub(crate) async fn log_head(conn: &Connection) -> Result<LogHead, MemoryError> {
    let stmt = log_head_stmt();
    let rows = conn
        .query(stmt.sql.as_ref(), stmt.args)
        .await
        .map_err(MemoryError::db(LOG_CTX))?;
    head_from(rows).await
}

async fn read_delta(
    reads: &Reads,
    since: i64,
    head: LogHead,
    model: &str,
    dims: usize,
) -> Result<Delta, MemoryError> {
    if head.first > since + 1 {
        return Ok(Delta::TooFarBehind);
    }
    let ctx = LOG_CTX;
    // Every (chunk, session) the log names since `since`: removed first, ...
    let named_stmt = Stmt::new(
        "SELECT DISTINCT chunk_id, session_id FROM index_changes WHERE seq > ?1 AND seq <= ?2",
        vec![Value::Integer(since), Value::Integer(head.last)],
    );
    let mut rows = reads.one(named_stmt, ctx).await?;
    let mut named: Vec<(String, i64)> = Vec::new();
    let mut ids = HashSet::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        let chunk_id: i64 = row.get(0).map_err(MemoryError::db(ctx))?;
        ids.insert(chunk_id);
        named.push((row.get(1).map_err(MemoryError::db(ctx))?, chunk_id));
    }
    drop(rows);
    let mut upserts = Vec::new();
    // ... then put back as they are now, when they still have a vector of the active model.
    let mut ids: Vec<i64> = ids.into_iter().collect();
    ids.sort_unstable();
    for batch in ids.chunks(500) {
        let marks = vec!["?"; batch.len()].join(", ");
        let sql = format!(
            "SELECT c.session_id, c.chunk_id, v.vector, {FACET_COLUMNS} FROM chunks c
             JOIN chunk_vectors v ON v.chunk_id = c.chunk_id
             LEFT JOIN notes n ON n.note_id = c.note_id
             WHERE v.model_id = ? AND v.dims = ? AND c.chunk_id IN ({marks})"
        );
        let mut params = vec![
            Value::Text(model.to_owned()),
            Value::Integer(i64::try_from(dims).unwrap_or(i64::MAX)),
        ];
        params.extend(batch.iter().map(|id| Value::Integer(*id)));
        let mut rows = reads.one(Stmt::built(sql, params), ctx).await?;
        while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
            let blob: Vec<u8> = row.get(2).map_err(MemoryError::db(ctx))?;
            let Some(vector) = blob_to_vector(&blob, dims) else {
                tracing::warn!("skipping a malformed stored vector");
                continue;
            };
            upserts.push(IndexChange::Upsert {
                session: row.get(0).map_err(MemoryError::db(ctx))?,
                chunk_id: row.get(1).map_err(MemoryError::db(ctx))?,
                vector,
                facets: facets_from_row(&row, 3)?,
                terms: terms_from_row(&row, 3)?,
            });
        }
    }
    // A chunk put back under the same session is replaced in place, never removed first: a
    // search running beside this catch-up must not miss a chunk that only changed (or did not
    // change at all — this process may have applied its own write already).
    let kept: HashSet<(&str, i64)> = upserts
        .iter()
        .filter_map(|c| match c {
            IndexChange::Upsert {
                session, chunk_id, ..
            } => Some((session.as_str(), *chunk_id)),
            IndexChange::Remove { .. } => None,
        })
        .collect();
    let mut changes: Vec<IndexChange> = named
        .iter()
        .filter(|(session, chunk_id)| !kept.contains(&(session.as_str(), *chunk_id)))
        .map(|(session, chunk_id)| IndexChange::Remove {
            session: session.clone(),
            chunk_id: *chunk_id,
        })
        .collect();
    changes.extend(upserts);
    Ok(Delta::Changes {
        upto: head.last,
        changes,
    })
}
