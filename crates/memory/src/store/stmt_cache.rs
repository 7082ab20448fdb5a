//! Prepared statements kept for the life of a local connection, for the reads a search repeats.
//!
//! libSQL prepares a statement each time one is run (`Connection::query` parses and plans it),
//! and the search's read of the turns after its conversation hits — a join with a `VALUES` list
//! and a subquery — costs more to plan than to run (docs/benchmarks.md, *Statements prepared
//! once*). A connection that runs jobs one at a time (a reader thread's, the inline reader's)
//! keeps a [`StmtCache`] beside it and runs each job inside [`scoped`]; [`each_row`] then takes
//! its statement from the cache, runs it to the end, resets it and puts it back. Outside a scope
//! (the writer, a remote server's stream) it prepares as `query` does.
//!
//! A statement is always read to its end and reset before it goes back, so no cached statement
//! holds a read transaction open between jobs (a later read on the connection sees the latest
//! writes, `tests::a_cached_statement_reads_what_was_written_since`). The cache holds at most
//! [`CAPACITY`] statements, the least recently used dropped first. It must be dropped before its
//! connection: its owner declares it so.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use libsql::{Connection, Row, Rows, Statement, Value};

use crate::error::MemoryError;

/// Statements kept per connection (the texts a search's reads take: one per list length).
const CAPACITY: usize = 32;

tokio::task_local! {
    static CURRENT: Arc<StmtCache>;
}

/// The statements prepared on one connection, most recently used last.
#[derive(Default)]
pub(crate) struct StmtCache {
    stmts: Mutex<Vec<(String, Statement)>>,
}

impl std::fmt::Debug for StmtCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StmtCache").finish_non_exhaustive()
    }
}

impl StmtCache {
    /// The statement for `sql`, taken out while it runs.
    fn take(&self, sql: &str) -> Option<Statement> {
        let mut stmts = self.stmts.lock().unwrap_or_else(PoisonError::into_inner);
        let at = stmts.iter().position(|(s, _)| s == sql)?;
        Some(stmts.remove(at).1)
    }

    fn put(&self, sql: &str, stmt: Statement) {
        let mut stmts = self.stmts.lock().unwrap_or_else(PoisonError::into_inner);
        if stmts.len() >= CAPACITY {
            stmts.remove(0);
        }
        stmts.push((sql.to_owned(), stmt));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.stmts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Runs `job` with `cache` as the statements of the connection it reads on.
pub(crate) async fn scoped<F: Future>(cache: &Arc<StmtCache>, job: F) -> F::Output {
    CURRENT.scope(Arc::clone(cache), job).await
}

/// Runs `sql` with `args` on `conn` and hands every row to `read`, to the end; the statement is
/// prepared once per connection when the job runs [`scoped`].
pub(crate) async fn each_row(
    conn: &Connection,
    sql: &str,
    args: Vec<Value>,
    ctx: &'static str,
    read: impl FnMut(&Row) -> Result<(), MemoryError>,
) -> Result<(), MemoryError> {
    let Ok(cache) = CURRENT.try_with(Arc::clone) else {
        let rows = conn.query(sql, args).await.map_err(MemoryError::db(ctx))?;
        return read_all(rows, ctx, read).await;
    };
    let stmt = match cache.take(sql) {
        Some(stmt) => stmt,
        None => conn.prepare(sql).await.map_err(MemoryError::db(ctx))?,
    };
    let outcome = match stmt.query(args).await {
        Ok(rows) => read_all(rows, ctx, read).await,
        Err(e) => Err(MemoryError::db(ctx)(e)),
    };
    // Whatever happened, the statement goes back reset: no step half done, no lock held.
    stmt.reset();
    cache.put(sql, stmt);
    outcome
}

/// Hands every row of `rows` to `read`, to the end.
pub(crate) async fn read_all(
    mut rows: Rows,
    ctx: &'static str,
    mut read: impl FnMut(&Row) -> Result<(), MemoryError>,
) -> Result<(), MemoryError> {
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        read(&row)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    async fn conn() -> (tempfile::TempDir, libsql::Database, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let db = libsql::Builder::new_local(dir.path().join("t.db"))
            .build()
            .await
            .unwrap();
        let conn = db.connect().unwrap();
        conn.execute("CREATE TABLE t (x INTEGER)", ())
            .await
            .unwrap();
        (dir, db, conn)
    }

    async fn xs(conn: &Connection, above: i64) -> Vec<i64> {
        let mut out = Vec::new();
        each_row(
            conn,
            "SELECT x FROM t WHERE x > ? ORDER BY x",
            vec![Value::Integer(above)],
            "test",
            |row| {
                out.push(row.get::<i64>(0).unwrap());
                Ok(())
            },
        )
        .await
        .unwrap();
        out
    }

    #[tokio::test]
    async fn a_cached_statement_reads_what_was_written_since() {
        let (_dir, db, conn) = conn().await;
        let writer = db.connect().unwrap();
        let cache = Arc::new(StmtCache::default());
        scoped(&cache, async {
            assert!(xs(&conn, 0).await.is_empty());
            writer
                .execute("INSERT INTO t VALUES (1), (2), (3)", ())
                .await
                .unwrap();
            assert_eq!(xs(&conn, 0).await, [1, 2, 3]);
            assert_eq!(xs(&conn, 1).await, [2, 3], "new arguments bound");
            writer
                .execute("INSERT INTO t VALUES (4)", ())
                .await
                .unwrap();
            assert_eq!(xs(&conn, 2).await, [3, 4]);
        })
        .await;
        assert_eq!(cache.len(), 1, "one statement, prepared once and kept");
        // A write on the reading connection is not blocked by a kept statement.
        conn.execute("INSERT INTO t VALUES (5)", ()).await.unwrap();
        assert_eq!(
            xs(&conn, 4).await,
            [5],
            "outside a scope: prepared as query does"
        );
        assert_eq!(cache.len(), 1);
    }

    #[tokio::test]
    async fn a_failed_read_puts_its_statement_back_reset() {
        let (_dir, _db, conn) = conn().await;
        conn.execute("INSERT INTO t VALUES (1), (2)", ())
            .await
            .unwrap();
        let cache = Arc::new(StmtCache::default());
        scoped(&cache, async {
            let refused = each_row(&conn, "SELECT x FROM t", Vec::new(), "test", |_| {
                Err(MemoryError::WorkerStopped)
            })
            .await;
            assert!(refused.is_err());
            let mut seen = 0;
            each_row(&conn, "SELECT x FROM t", Vec::new(), "test", |_| {
                seen += 1;
                Ok(())
            })
            .await
            .unwrap();
            assert_eq!(seen, 2, "read from the start again");
            // Nothing half-read holds the file: another connection can write.
            conn.execute("INSERT INTO t VALUES (3)", ()).await.unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn the_cache_keeps_the_most_recently_used() {
        let (_dir, _db, conn) = conn().await;
        let cache = Arc::new(StmtCache::default());
        scoped(&cache, async {
            for n in 0..CAPACITY + 5 {
                let sql = format!("SELECT x FROM t WHERE x > {n}");
                each_row(&conn, &sql, Vec::new(), "test", |_| Ok(()))
                    .await
                    .unwrap();
            }
        })
        .await;
        assert_eq!(cache.len(), CAPACITY);
        assert!(
            cache.take("SELECT x FROM t WHERE x > 0").is_none(),
            "the oldest left"
        );
        let last = format!("SELECT x FROM t WHERE x > {}", CAPACITY + 4);
        assert!(cache.take(&last).is_some());
    }
}
