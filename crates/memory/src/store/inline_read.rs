//! Small reads on the caller's thread, for a store whose database is a local file.
//!
//! A search ends with one small read (the change log's head and the details of its best chunks:
//! a few primary-key lookups, ~50–100 µs of SQLite work). Sent to a reader thread it costs two
//! thread wake-ups on top, and on a loaded machine a wake-up can wait for a core far longer than
//! the read itself. So a local store keeps one more connection for such reads, run where the
//! search runs, as a short query is embedded there: only when the connection is free (another
//! search holding it sends its read to a reader thread as before) and only for local files (a
//! server's connection really waits on the network, which an async thread must not do blocking).

use std::future::Future;
use std::sync::Arc;

use libsql::Connection;

use crate::error::MemoryError;
use crate::store::stmt_cache::{StmtCache, scoped};
use crate::store::worker::{Target, connect};

pub(crate) struct InlineReader {
    conn: tokio::sync::Mutex<Connection>,
    /// The statements its jobs repeat (see [`crate::store::stmt_cache`]).
    cache: Arc<StmtCache>,
    /// The connection belongs to it.
    _db: libsql::Database,
}

impl std::fmt::Debug for InlineReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineReader").finish_non_exhaustive()
    }
}

impl InlineReader {
    /// A connection for the readers' target when it is a file; `None` for a server.
    pub(crate) async fn open(readers: &Target) -> Result<Option<Self>, MemoryError> {
        if !matches!(readers, Target::Local { .. } | Target::ReplicaFile { .. }) {
            return Ok(None);
        }
        let (db, conn) = connect(readers).await?;
        Ok(Some(Self {
            conn: tokio::sync::Mutex::new(conn),
            cache: Arc::new(StmtCache::default()),
            _db: db,
        }))
    }

    /// Runs `job` here and now when the connection is free; gives it back otherwise.
    pub(crate) async fn try_run<T, F, Fut>(&self, job: F) -> Result<Result<T, MemoryError>, F>
    where
        F: FnOnce(Connection) -> Fut,
        Fut: Future<Output = Result<T, MemoryError>>,
    {
        let Ok(guard) = self.conn.try_lock() else {
            return Err(job);
        };
        let outcome = scoped(&self.cache, job(guard.clone())).await;
        drop(guard);
        Ok(outcome)
    }
}
