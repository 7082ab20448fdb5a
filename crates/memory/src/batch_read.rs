//! Several reads in one request to a remote server.
//!
//! libsql's remote client runs a plain `query` as two HTTP requests: it first asks the server to
//! describe the statement (for its column names), then runs it. A search's last read used to be
//! three such queries (the change log's head, the best chunks' details, their notes' texts): six
//! round trips. A batch is one request whatever it holds, so on a remote server [`Reads::rows`]
//! sends its statements as one batch, their arguments written in as literals
//! ([`Stmt::inline`]), and hands back each statement's rows. On a file each statement simply runs
//! with its arguments bound: there is no network to save.
//!
//! libsql marks a batch's statements as not wanting rows. The server we run (`sqld`) sends them
//! anyway; a server that honoured the mark would answer with no rows at all, which would read as
//! "nothing found". So every batch starts with `SELECT 1`: should it come back without its row,
//! the store says so once in the log and reads statement by statement from then on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use libsql::{Connection, Rows};

use crate::error::MemoryError;
use crate::stmt::Stmt;

/// The first statement of every batch: it always yields one row.
const SENTINEL: &str = "SELECT 1";

/// Whether a store batches its reads: a remote server's store does, until the server first
/// sends a batch back without rows.
#[derive(Debug, Clone, Default)]
pub(crate) struct Batching(Option<Arc<AtomicBool>>);

impl Batching {
    pub(crate) fn remote() -> Self {
        Self(Some(Arc::new(AtomicBool::new(true))))
    }

    pub(crate) fn none() -> Self {
        Self(None)
    }

    fn on(&self) -> bool {
        self.0.as_ref().is_some_and(|on| on.load(Ordering::Relaxed))
    }

    fn stop(&self) {
        if let Some(on) = &self.0 {
            on.store(false, Ordering::Relaxed);
        }
    }
}

/// A reader's connection, and whether it batches its reads.
pub(crate) struct Reads {
    conn: Connection,
    batching: Batching,
}

impl Reads {
    pub(crate) fn new(conn: Connection, batching: Batching) -> Self {
        Self { conn, batching }
    }

    /// Runs `stmts` (reads only) and gives back each one's rows, in order: one request on a
    /// remote server.
    pub(crate) async fn rows(
        &self,
        stmts: &[Stmt],
        ctx: &'static str,
    ) -> Result<Vec<Rows>, MemoryError> {
        if self.batching.on() {
            if let Some(rows) = self.batch(stmts, ctx).await? {
                return Ok(rows);
            }
            self.batching.stop();
            tracing::warn!(
                "the memory server answers batches without rows; reading statement by statement"
            );
        }
        let mut out = Vec::with_capacity(stmts.len());
        for stmt in stmts {
            out.push(
                self.conn
                    .query(stmt.sql.as_ref(), stmt.args.clone())
                    .await
                    .map_err(MemoryError::db(ctx))?,
            );
        }
        Ok(out)
    }

    /// One batch; `None` when the server sent it back without rows.
    async fn batch(
        &self,
        stmts: &[Stmt],
        ctx: &'static str,
    ) -> Result<Option<Vec<Rows>>, MemoryError> {
        let mut sql = String::from(SENTINEL);
        for stmt in stmts {
            sql.push_str(";\n");
            sql.push_str(&stmt.inline()?);
        }
        let mut batch = self
            .conn
            .execute_batch(&sql)
            .await
            .map_err(MemoryError::db(ctx))?;
        let Some(mut sentinel) = batch.next_stmt_row().flatten() else {
            return Err(missing());
        };
        if sentinel
            .next()
            .await
            .map_err(MemoryError::db(ctx))?
            .is_none()
        {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(stmts.len());
        for _ in stmts {
            out.push(batch.next_stmt_row().flatten().ok_or_else(missing)?);
        }
        Ok(Some(out))
    }
}

/// The rows of the one statement [`Reads::rows`] was given.
pub(crate) fn one(rows: Vec<Rows>) -> Result<Rows, MemoryError> {
    rows.into_iter().next().ok_or_else(missing)
}

/// The error for a batch that answered fewer statements than it was sent.
pub(crate) fn missing() -> MemoryError {
    MemoryError::Corrupt {
        what: "batch of reads",
        source: Some("the server answered fewer statements than it was sent".into()),
    }
}
