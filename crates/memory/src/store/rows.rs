//! A statement's result read to its end.
//!
//! On a libSQL server a statement sent on its own is a cursor: its rows stream in the HTTP
//! response, and the statement's end — or its error — comes after the last row. A reader that
//! takes the row it wanted and drops the rest leaves that response unread, and sqld then cancels
//! whatever of the statement still runs (its progress handler interrupts it, `SQLITE_INTERRUPT`).
//! An interrupted write (an `INSERT … RETURNING`) rolls its whole transaction back, and nothing
//! tells the client: libsql 0.10 then runs the next statements outside any transaction and its
//! commit returns `Ok` (see `tests/remote_commits.rs`, and [`crate::store::finish`], which
//! commits with a `COMMIT` statement so that such a write fails). A cancellation that comes late
//! interrupts the stream's next statement instead. So every read of one row goes through
//! [`first_row`] or [`query_first`], which read the rest to the end: the statement has finished on
//! the server, and its error, if any, is seen.

use libsql::params::IntoParams;
use libsql::{Connection, Row, Rows};

use crate::error::MemoryError;

/// What `read` takes from the first row of `rows`, the rest read to the end (see the module's
/// notes). `read` runs before the rest is read: on a file, a row is only valid until the next one
/// is stepped to.
pub(crate) async fn first_row<T>(
    mut rows: Rows,
    ctx: &'static str,
    read: impl FnOnce(&Row) -> Result<T, MemoryError>,
) -> Result<Option<T>, MemoryError> {
    let first = match rows.next().await.map_err(MemoryError::db(ctx))? {
        Some(row) => Some(read(&row)?),
        None => None,
    };
    while rows.next().await.map_err(MemoryError::db(ctx))?.is_some() {}
    Ok(first)
}

/// Runs `sql` on `conn` and gives what `read` takes from its first row, through [`first_row`].
pub(crate) async fn query_first<T>(
    conn: &Connection,
    sql: &str,
    params: impl IntoParams,
    ctx: &'static str,
    read: impl FnOnce(&Row) -> Result<T, MemoryError>,
) -> Result<Option<T>, MemoryError> {
    let rows = conn
        .query(sql, params)
        .await
        .map_err(MemoryError::db(ctx))?;
    first_row(rows, ctx, read).await
}
