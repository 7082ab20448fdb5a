//! What re-landing remote reads in one request (issue 33 §8) relies on from the libsql client
//! against a real `sqld`: a batch (`execute_batch`, which the client splits with its own SQL
//! parser and sends re-rendered) gives back the literals the store inlines unchanged, and a batch
//! on a reader connection that is kept and reused sees every commit another connection made before
//! it — a stale snapshot there would be the "stale read through a second connection" suspected of
//! the `restore_places` failures of the first landing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use libsql::Value;
use test_support::{Need, Sqld, need};

async fn remote(server: &Sqld) -> libsql::Database {
    libsql::Builder::new_remote(server.url(), String::new())
        .build()
        .await
        .unwrap()
}

/// The rows of the batch's `n`-th statement (0 is the first), first row only.
async fn first_row(batch: &mut libsql::BatchRows, n: usize) -> Vec<Value> {
    for _ in 0..n {
        batch.next_stmt_row();
    }
    let mut rows = batch
        .next_stmt_row()
        .flatten()
        .expect("the statement's rows");
    let row = rows.next().await.unwrap().expect("one row");
    (0..rows.column_count())
        .map(|i| row.get_value(i).unwrap())
        .collect()
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_batch_on_a_kept_reader_connection_sees_every_earlier_commit() {
    need(Need::Sqld);
    let server = Sqld::start();
    let db = remote(&server).await;
    let writer = db.connect().unwrap();
    writer
        .execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)", ())
        .await
        .unwrap();
    // Kept and reused, as a reader thread keeps its connection.
    let reader = db.connect().unwrap();
    for i in 1..=40i64 {
        let tx = writer.transaction().await.unwrap();
        tx.execute("INSERT INTO t (body) VALUES (?1)", [format!("row {i}")])
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let mut batch = reader
            .execute_batch(
                "SELECT 1; SELECT count(*), (SELECT body FROM t ORDER BY id DESC LIMIT 1) FROM t",
            )
            .await
            .unwrap();
        assert_eq!(
            first_row(&mut batch, 1).await,
            [Value::Integer(i), Value::Text(format!("row {i}"))],
            "the batch after commit {i} read an older snapshot"
        );
        // A plain query on the same connection, between batches, sees it too.
        let mut rows = reader.query("SELECT count(*) FROM t", ()).await.unwrap();
        let n: i64 = rows.next().await.unwrap().unwrap().get(0).unwrap();
        assert_eq!(n, i);
    }
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn inlined_literals_come_back_unchanged_through_a_batch() {
    need(Need::Sqld);
    let server = Sqld::start();
    let conn = remote(&server).await.connect().unwrap();
    // Each literal as the store's statement helper writes it (`Stmt::inline`).
    let cases: [(&str, Value); 8] = [
        (
            "'it''s; -- not a comment ?1'",
            Value::Text("it's; -- not a comment ?1".into()),
        ),
        ("CAST(X'610062' AS TEXT)", Value::Text("a\0b".into())),
        ("X'00ff'", Value::Blob(vec![0, 255])),
        ("0.1", Value::Real(0.1)),
        ("1e300", Value::Real(1e300)),
        ("-42", Value::Integer(-42)),
        ("9223372036854775807", Value::Integer(i64::MAX)),
        ("NULL", Value::Null),
    ];
    let select: Vec<&str> = cases.iter().map(|(sql, _)| *sql).collect();
    let sql = format!("SELECT 1; SELECT {}", select.join(", "));
    let mut batch = conn.execute_batch(&sql).await.unwrap();
    let got = first_row(&mut batch, 1).await;
    let want: Vec<Value> = cases.into_iter().map(|(_, v)| v).collect();
    assert_eq!(got, want, "{sql}");
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn batches_on_several_readers_at_once_see_the_last_commit() {
    need(Need::Sqld);
    let server = Sqld::start();
    let db = remote(&server).await;
    let writer = db.connect().unwrap();
    writer
        .execute("CREATE TABLE t (id INTEGER PRIMARY KEY)", ())
        .await
        .unwrap();
    // As the store's reader threads: several kept connections, read from at the same time.
    let readers: Vec<libsql::Connection> = (0..4).map(|_| db.connect().unwrap()).collect();
    for i in 1..=25i64 {
        let tx = writer.transaction().await.unwrap();
        tx.execute("INSERT INTO t (id) VALUES (?1)", [i])
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let reads = readers.iter().map(|reader| async move {
            let mut batch = reader
                .execute_batch("SELECT 1; SELECT count(*) FROM t")
                .await
                .unwrap();
            first_row(&mut batch, 1).await
        });
        for seen in futures::future::join_all(reads).await {
            assert_eq!(seen, [Value::Integer(i)], "a reader missed commit {i}");
        }
    }
}
