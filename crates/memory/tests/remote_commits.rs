//! A remote write is reported done only when its transaction committed on the server.
//!
//! libsql 0.10's remote client keeps, per Hrana stream, its own idea of whether a transaction is
//! open (the `get_autocommit` answer to the last statement it sent). When the server rolled the
//! transaction back without the client reading the error — sqld cancels a statement whose cursor
//! response the client drops before its end, and an interrupted write rolls back its whole
//! transaction — the next statement runs outside any transaction, the client then closes the
//! stream after each statement, and `Transaction::commit` finds no stream and returns `Ok`
//! without sending `COMMIT`. That is how `restore_places::…::remote` once saw a restore return
//! `Ok` with no file at its path. The first test shows the mechanism on libsql and sqld alone;
//! the second rolls a restore's transaction back from the proxy and checks that the store says
//! the write failed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::time::Duration;

use common::proxy::Clients;
use common::user;
use memory::{PathExpect, PathPut};
use test_support::{Need, Sqld, need};

/// Rows the cursor of the test's write returns: more than the HTTP response buffers hold, so
/// the server is still sending them when the client drops the cursor.
const ROWS: i64 = 20_000;

/// How one attempt ends: the commit's result and the rows of the cursor's write that landed.
struct Outcome {
    committed: Result<(), libsql::Error>,
    landed: i64,
}

/// In one transaction: a write whose rows come back through a cursor (read to the end or only
/// its first row), two more writes, then the commit (libsql's, or a `COMMIT` statement).
async fn attempt(conn: &libsql::Connection, read_to_end: bool, commit_statement: bool) -> Outcome {
    conn.execute("DELETE FROM t", ()).await.unwrap();
    let tx = conn
        .transaction_with_behavior(libsql::TransactionBehavior::Immediate)
        .await
        .unwrap();
    let insert = format!(
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {ROWS})
         INSERT INTO t (v) SELECT i FROM s RETURNING v"
    );
    let mut rows = tx.query(&insert, ()).await.unwrap();
    assert!(rows.next().await.unwrap().is_some());
    if read_to_end {
        while rows.next().await.unwrap().is_some() {}
    }
    drop(rows);
    // Time for the server to see the dropped response and cancel what still ran.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for v in [1, 2] {
        tx.execute("INSERT INTO u (v) VALUES (?1)", [v])
            .await
            .unwrap();
    }
    let committed = match commit_statement {
        true => tx.execute("COMMIT", ()).await.map(|_| ()),
        false => tx.commit().await,
    };
    let mut counted = conn.query("SELECT count(*) FROM t", ()).await.unwrap();
    let landed = counted.next().await.unwrap().unwrap().get(0).unwrap();
    while counted.next().await.unwrap().is_some() {}
    Outcome { committed, landed }
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_write_whose_cursor_is_dropped_early_is_rolled_back_and_libsql_commits_ok() {
    need(Need::Sqld);
    let server = Sqld::start_with_auth();
    let db = libsql::Builder::new_remote(server.url(), server.token(r#"{"a":"rw"}"#))
        .build()
        .await
        .unwrap();
    let conn = db.connect().unwrap();
    conn.execute("CREATE TABLE t (v INTEGER)", ())
        .await
        .unwrap();
    conn.execute("CREATE TABLE u (v INTEGER)", ())
        .await
        .unwrap();

    // Read to its end, the write lands with its transaction.
    let whole = attempt(&conn, true, false).await;
    assert!(whole.committed.is_ok(), "{:?}", whole.committed);
    assert_eq!(whole.landed, ROWS);

    // Dropped after its first row, the write is cancelled by the server and its transaction
    // rolled back; libsql's commit still says Ok.
    let dropped = attempt(&conn, false, false).await;
    assert_eq!(dropped.landed, 0, "the server rolled the write back");
    assert!(
        dropped.committed.is_ok(),
        "libsql 0.10 returns Ok without sending COMMIT: {:?}",
        dropped.committed
    );

    // A `COMMIT` statement is sent whatever the client believes, and fails.
    let checked = attempt(&conn, false, true).await;
    assert_eq!(checked.landed, 0);
    let err = checked.committed.expect_err("no transaction to commit");
    assert!(
        err.to_string().contains("no transaction is active"),
        "{err}"
    );
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_restore_whose_transaction_the_server_rolled_back_is_an_error() {
    need(Need::Sqld);
    let c = Clients::start().await;
    let (proxy, store) = (&c.proxy, &c.store);
    let alice = user("alice");
    let path = "/memories/garden/roses.md";
    let text = "Prune the roses in March";
    let file = match store
        .files()
        .put_file(&alice, path, text, PathExpect::Absent, None, None)
        .await
        .unwrap()
    {
        PathPut::Written(file) => file,
        other => panic!("not written: {other:?}"),
    };
    assert_eq!(
        store.files().delete_path(&alice, path, None).await.unwrap(),
        1
    );

    // The server ends the restore's transaction just before it gives the note its path back.
    let rolled_back = proxy.roll_back_before("path = (SELECT path FROM deleted_notes");
    let restored = store.restore(&alice, None, &file.note_id, None).await;
    tokio::time::timeout(Duration::from_secs(5), rolled_back)
        .await
        .expect("the proxy rolled the restore's transaction back");
    let err = restored.expect_err("a restore that did not commit is not done");
    assert!(
        matches!(err, memory::MemoryError::Database { .. }),
        "{err:?}"
    );
    assert!(
        store
            .files()
            .read_file(&alice, path)
            .await
            .unwrap()
            .is_none()
    );
}
