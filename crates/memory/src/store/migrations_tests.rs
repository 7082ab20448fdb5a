//! Tests of the numbered migrations: upgrades of databases older versions left, in place.

use super::*;

async fn count(conn: &Connection, sql: &str) -> i64 {
    let mut rows = conn.query(sql, ()).await.unwrap();
    rows.next().await.unwrap().unwrap().get(0).unwrap()
}

/// A database in `dir` as version `applied` left it: its first `applied` migrations, no rows.
async fn left_by(dir: &tempfile::TempDir, applied: usize) -> (libsql::Database, Connection) {
    let db = libsql::Builder::new_local(dir.path().join(format!("v{applied}.db")))
        .build()
        .await
        .unwrap();
    let conn = db.connect().unwrap();
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
         applied_at TEXT NOT NULL)",
        (),
    )
    .await
    .unwrap();
    for m in &MIGRATIONS[..applied] {
        let tx = conn.transaction().await.unwrap();
        apply(&tx, m).await.unwrap();
        tx.commit().await.unwrap();
    }
    (db, conn)
}

#[tokio::test]
async fn the_fts_migration_upgrades_a_version_1_database_in_place() {
    let dir = tempfile::tempdir().unwrap();
    // A database as version 1 left it, with rows in two sessions.
    let (_db, conn) = left_by(&dir, 1).await;
    for (i, (session, text)) in [
        ("memory:a", "green tea every morning"),
        ("memory:b", "green jacket for the trip"),
        ("memory:b", "black coffee"),
    ]
    .into_iter()
    .enumerate()
    {
        conn.execute(
            "INSERT OR IGNORE INTO sessions (session_id, user_id, kind, created_at, last_active_at)
             VALUES (?1, 'u', 'memory', 't', 't')",
            [session],
        )
        .await
        .unwrap();
        conn.execute(
            "INSERT INTO events (session_id, seq, role, payload_json, created_at)
             VALUES (?1, ?2, 'user', '{}', 't')",
            libsql::params![session, i as i64],
        )
        .await
        .unwrap();
        conn.execute(
            "INSERT INTO chunks (session_id, event_seq, ordinal, text, metadata_json)
             VALUES (?1, ?2, 0, ?3, '{}')",
            libsql::params![session, i as i64, text],
        )
        .await
        .unwrap();
    }

    // Migration 2 alone (12 drops the table again).
    let tx = conn.transaction().await.unwrap();
    apply(&tx, &MIGRATIONS[1]).await.unwrap();
    tx.commit().await.unwrap();
    // Old rows are indexed, with their session, and scoped matching works.
    let scoped = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'green'";
    assert_eq!(count(&conn, scoped).await, 2);
    assert_eq!(
        count(&conn, &format!("{scoped} AND session_id = 'memory:b'")).await,
        1
    );
    // The new triggers keep it in step: insert, update of text, delete.
    conn.execute(
        "INSERT INTO chunks (session_id, event_seq, ordinal, text, metadata_json)
         VALUES ('memory:b', 2, 1, 'green pepper', '{}')",
        (),
    )
    .await
    .unwrap();
    assert_eq!(
        count(&conn, &format!("{scoped} AND session_id = 'memory:b'")).await,
        2
    );
    conn.execute(
        "UPDATE chunks SET text = 'red pepper' WHERE text = 'green pepper'",
        (),
    )
    .await
    .unwrap();
    conn.execute(
        "DELETE FROM chunks WHERE text = 'green tea every morning'",
        (),
    )
    .await
    .unwrap();
    assert_eq!(count(&conn, scoped).await, 1);
    assert_eq!(
        count(&conn, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'pepper' AND session_id = 'memory:b'").await,
        1
    );
    conn.execute(
        "INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')",
        (),
    )
    .await
    .unwrap();

    // The rest, up to the drop of the FTS table (its triggers with it): the chunks stay.
    let chunks = count(&conn, "SELECT count(*) FROM chunks").await;
    assert_eq!(migrate(&conn).await.unwrap(), MIGRATIONS.len() - 2);
    assert_eq!(migrate(&conn).await.unwrap(), 0, "applied once");
    let fts_objects = "SELECT count(*) FROM sqlite_master WHERE name LIKE 'chunks_fts%'";
    assert_eq!(count(&conn, fts_objects).await, 0);
    assert_eq!(count(&conn, "SELECT count(*) FROM chunks").await, chunks);
    // No trigger is left to write into the dropped table.
    conn.execute("DELETE FROM chunks", ()).await.unwrap();
}

#[tokio::test]
async fn the_metadata_migration_keeps_every_note_and_fills_its_columns() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, conn) = left_by(&dir, 3).await;
    conn.execute(
        "INSERT INTO sessions (session_id, user_id, kind, created_at, last_active_at)
         VALUES ('memory:a', 'a', 'memory', 't', 't')",
        (),
    )
    .await
    .unwrap();
    for (id, meta) in [
        (
            "n1",
            r#"{"category":"fact","context":"why","confidence":0.5}"#,
        ),
        ("n2", r#"{"category":"mood","confidence":7}"#),
        ("n3", "{}"),
    ] {
        conn.execute(
            "INSERT INTO notes (note_id, session_id, event_seq, content, metadata_json,
             created_at, updated_at) VALUES (?1, 'memory:a', 1, 'x', ?2, 't', 't')",
            [id, meta],
        )
        .await
        .unwrap();
    }
    assert_eq!(migrate(&conn).await.unwrap(), MIGRATIONS.len() - 3);
    assert_eq!(count(&conn, "SELECT count(*) FROM notes").await, 3);
    let filled = "SELECT count(*) FROM notes WHERE note_id = 'n1' AND category = 'fact'
                  AND context = 'why' AND confidence = 0.5";
    assert_eq!(count(&conn, filled).await, 1);
    let invalid_left_out = "SELECT count(*) FROM notes WHERE category IS NULL
                            AND confidence IS NULL AND note_id IN ('n2', 'n3')";
    assert_eq!(count(&conn, invalid_left_out).await, 2);
}
