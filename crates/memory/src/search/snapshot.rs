//! Opening fast: the in-memory indexes kept on disk beside the store and checked against the
//! change log, instead of rebuilt from every row at each open.
//!
//! A plain local store keeps its indexes in `<store>.index` ([`super::snapshot_file`]) as the
//! flat arrays they are in memory (int8 and binary codes, scales, facets, keyword dictionary and
//! postings), current to a change-log entry, and named by a token also recorded in `store_meta`
//! (`index_snapshot`). At open the file is read into a fresh index when its version, model, size
//! and token match and every section's checksum holds — array by array, with no per-row work —
//! and the log's changes after its entry (this process's own earlier writes and any other
//! process's) are applied as every catch-up applies them ([`super::freshness`]). Any
//! doubt means a rebuild from the rows, never a wrong result: no file, a damaged or truncated one,
//! another model, a token that is not the store's (a store restored from an older copy), an entry
//! past the log's head, or one the log has already pruned. A rebuild writes a new snapshot, and
//! so does an open that had many changes to apply.
//!
//! Not for encrypted stores (the file would hold note terms in plain text beside an encrypted
//! database), nor remote or replica stores: they rebuild at every open.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::rooms::Upkeep;
use crate::search::freshness::log_head;
use crate::search::snapshot_file::{self, Header};
use crate::store::rows::query_first;

/// An open that applied more log entries than this after its snapshot writes a new one.
const REFRESH_AFTER: i64 = 10_000;
/// The `store_meta` key naming the current snapshot.
const TOKEN_KEY: &str = "index_snapshot";

impl MemoryStore {
    /// Fills the in-memory indexes at open: from the snapshot and the log when they can be
    /// trusted, else rebuilt from the rows (and a snapshot written).
    /// `Some(chunks)`: rebuilt from the rows, and how many chunks the store holds (counted in the
    /// rebuild's transaction); `None`: loaded from the snapshot.
    pub(crate) async fn load_index(&self) -> Result<Option<usize>, MemoryError> {
        if let Some(path) = self.inner.snapshot.clone() {
            match self.load_snapshot(path).await {
                Ok(Some(snapshot_at)) => {
                    self.catch_up().await?;
                    if self.inner.freshness.applied() - snapshot_at > REFRESH_AFTER {
                        self.write_snapshot().await;
                    }
                    return Ok(None);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "could not read the memory index snapshot; rebuilding")
                }
            }
        }
        let chunks = self.reload_index().await?;
        self.write_snapshot().await;
        Ok(Some(chunks))
    }

    /// Reads the snapshot into the index; `Some(entry)`: loaded, current to that log entry.
    async fn load_snapshot(&self, path: PathBuf) -> Result<Option<i64>, MemoryError> {
        let (token, head) = self
            .read(|conn| async move {
                let token = meta_value(&conn, TOKEN_KEY).await?;
                Ok((token, log_head(&conn).await?))
            })
            .await?;
        let Some(token) = token else {
            return Ok(None);
        };
        let index = &self.inner.index;
        let expected = Header {
            model: index.model_id().to_owned(),
            dims: index.dims(),
            applied: 0,
            token,
        };
        let fresh = index.empty_like();
        let (fresh, found) = tokio::task::spawn_blocking(move || {
            let found = snapshot_file::read(&path, &expected, &fresh);
            (fresh, found)
        })
        .await
        .map_err(|e| MemoryError::Io {
            context: "reading the index snapshot",
            source: std::io::Error::other(e.to_string()),
        })?;
        let Some(applied) = found.map_err(MemoryError::io("reading the index snapshot"))? else {
            return Ok(None);
        };
        // Past the log's head: the store went back (restored); before its pruned tail: changes
        // were lost to the log. Either way the snapshot cannot be brought up to date.
        if applied > head.last || (head.first > applied + 1 && head.last > applied) {
            tracing::info!(
                applied,
                ?head,
                "the memory index snapshot does not match the change log; rebuilding"
            );
            return Ok(None);
        }
        fresh.train();
        let mut current = self.inner.freshness.lock();
        index.replace_with(fresh);
        *current = applied;
        tracing::debug!(applied, "loaded the memory index snapshot");
        Ok(Some(applied))
    }

    /// Writes the index to the snapshot file and records its token (a failure is logged: the
    /// next open rebuilds).
    pub(crate) async fn write_snapshot(&self) {
        let Some(path) = self.inner.snapshot.clone() else {
            return;
        };
        // Current to the log's head: this process's own writes only move `applied` at a catch-up.
        if let Err(e) = self.catch_up().await {
            return tracing::warn!(error = %e, "could not write the memory index snapshot");
        }
        let header = Header {
            model: self.inner.index.model_id().to_owned(),
            dims: self.inner.index.dims(),
            applied: self.inner.freshness.applied(),
            token: uuid::Uuid::new_v4().to_string(),
        };
        let index = Arc::clone(&self.inner.index);
        let token = header.token.clone();
        let written =
            tokio::task::spawn_blocking(move || snapshot_file::write(&path, &index, &header)).await;
        let rows = match written {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => {
                return tracing::warn!(error = %e, "could not write the memory index snapshot");
            }
            Err(e) => {
                return tracing::warn!(error = %e, "could not write the memory index snapshot");
            }
        };
        let recorded = self
            .write(move |conn| async move {
                conn.execute(
                    "INSERT INTO store_meta (key, value) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [TOKEN_KEY, token.as_str()],
                )
                .await
                .map_err(MemoryError::db("recording the index snapshot"))
            })
            .await;
        match recorded {
            Ok(_) => tracing::debug!(rows, "wrote the memory index snapshot"),
            Err(e) => tracing::warn!(error = %e, "could not record the memory index snapshot"),
        }
    }
}

impl Upkeep<'_> {
    /// Writes the index snapshot now (plain local stores; a no-op for the others). An open
    /// writes one after a rebuild or after applying many changes; an agent that wants the next
    /// open to apply fewer may call this when idle.
    pub async fn write_index_snapshot(&self) {
        self.write_snapshot().await;
    }
}

async fn meta_value(conn: &libsql::Connection, key: &str) -> Result<Option<String>, MemoryError> {
    let ctx = "reading store_meta";
    query_first(
        conn,
        "SELECT value FROM store_meta WHERE key = ?1",
        [key],
        ctx,
        |row| row.get(0).map_err(MemoryError::db(ctx)),
    )
    .await
}
