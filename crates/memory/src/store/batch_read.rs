//! Several reads in one request to a remote server.
//!
//! libsql's remote client runs a plain `query` as two HTTP requests: it first asks the server to
//! describe the statement (for its column names), then runs it. A batch is one request whatever it
//! holds, so on a remote server [`Reads::rows`] sends its statements as one batch, their arguments
//! written in as literals ([`Stmt::inline`]), and hands back each statement's rows in order. On a
//! file each statement simply runs with its arguments bound: there is no network to save.
//!
//! The batch is not a transaction: each statement reads the database as committed when it runs,
//! exactly as the same statements sent one by one would, in the same order.
//!
//! A statement read one by one on a server is a cursor: its rows stream in the HTTP response,
//! which ends after the last row. A reader that stops at the row it wanted and drops the rest
//! leaves that response unread, and the server can then interrupt a later statement of the same
//! job's stream (`SQLITE_INTERRUPT`; measured in `memory-bench stores` at load 7–14: 22 of 300
//! remote searches read one by one failed so, then 0, 0 and 1 of 300 once the one-row read of the
//! change log's head read to the end — one cause, not the only one). So a one-row read goes
//! through [`crate::store::rows::first_row`], which reads to the end; batches have no cursor.
//!
//! libsql marks a batch's statements as not wanting rows. The server we run (`sqld`) sends them
//! anyway; a server that honoured the mark would answer with no rows at all, which would read as
//! "nothing found". So every batch starts with `SELECT 1`: should it come back without its row,
//! the store says so once in the log and reads statement by statement from then on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use libsql::{Connection, Row, Rows};

use crate::error::MemoryError;
use crate::store::stmt::Stmt;
use crate::store::stmt_cache::{each_row, read_all};

/// The first statement of every batch: it always yields one row.
const SENTINEL: &str = "SELECT 1";

/// Whether a store batches its reads: a remote server's store does, until the server first
/// sends a batch back without rows (shared by the store's reader jobs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Batching(Option<Arc<AtomicBool>>);

impl Batching {
    pub(crate) fn remote() -> Self {
        Self(Some(Arc::new(AtomicBool::new(true))))
    }

    fn on(&self) -> bool {
        self.0.as_ref().is_some_and(|on| on.load(Ordering::Relaxed))
    }

    /// Reads statement by statement from now on (a server without batch rows; the benches'
    /// comparison).
    pub(crate) fn set(&self, on: bool) {
        if let Some(flag) = &self.0 {
            flag.store(on, Ordering::Relaxed);
        }
    }
}

/// A reader job's connection, and whether it batches its reads.
pub(crate) struct Reads {
    conn: Connection,
    batching: Batching,
}

impl Reads {
    pub(crate) fn new(conn: Connection, batching: Batching) -> Self {
        Self { conn, batching }
    }

    /// Whether reads go to a server as one batch (where a statement more in a batch is cheaper
    /// than a request more).
    pub(crate) fn batches(&self) -> bool {
        self.batching.on()
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
            self.batching.set(false);
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

    /// The rows of one statement (one request on a remote server, where `query` takes two).
    pub(crate) async fn one(&self, stmt: Stmt, ctx: &'static str) -> Result<Rows, MemoryError> {
        let [rows] = self.rows_n([stmt], ctx).await?;
        Ok(rows)
    }

    /// Runs `stmt` and hands each of its rows to `read`, to the end ([`Reads::each_in`] for one
    /// statement).
    pub(crate) async fn each(
        &self,
        stmt: Stmt,
        ctx: &'static str,
        mut read: impl FnMut(&Row) -> Result<(), MemoryError>,
    ) -> Result<(), MemoryError> {
        self.each_in(vec![stmt], ctx, |_, row| read(row)).await
    }

    /// Runs `stmts` in order and hands each row, with the index of its statement, to `read`:
    /// one request on a server, and on a file each statement prepared once per connection and
    /// read to its end before the next runs.
    pub(crate) async fn each_in(
        &self,
        stmts: Vec<Stmt>,
        ctx: &'static str,
        mut read: impl FnMut(usize, &Row) -> Result<(), MemoryError>,
    ) -> Result<(), MemoryError> {
        if self.batching.on() {
            let rows = self.rows(&stmts, ctx).await?;
            for (i, rows) in rows.into_iter().enumerate() {
                read_all(rows, ctx, |row| read(i, row)).await?;
            }
            return Ok(());
        }
        for (i, stmt) in stmts.into_iter().enumerate() {
            each_row(&self.conn, &stmt.sql, stmt.args, ctx, |row| read(i, row)).await?;
        }
        Ok(())
    }

    /// [`Reads::rows`] for a fixed number of statements.
    pub(crate) async fn rows_n<const N: usize>(
        &self,
        stmts: [Stmt; N],
        ctx: &'static str,
    ) -> Result<[Rows; N], MemoryError> {
        let rows = self.rows(&stmts, ctx).await?;
        rows.try_into().map_err(|_| missing())
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

fn missing() -> MemoryError {
    MemoryError::Corrupt {
        what: "batch of reads",
        source: Some("the server answered fewer statements than it was sent".into()),
    }
}
