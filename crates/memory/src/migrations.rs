//! Numbered schema migrations, recorded in `schema_migrations`, each applied in one transaction.
//!
//! A migration is a list of single statements (no batches: the remote protocol and triggers with
//! inner `;` make statement splitting fragile). Applied migrations are never edited; a change to
//! the schema is a new entry at the end of [`MIGRATIONS`].

use libsql::{Connection, TransactionBehavior};

use crate::error::MemoryError;
use crate::time::now_text;

pub(crate) struct Migration {
    pub(crate) version: i64,
    pub(crate) name: &'static str,
    pub(crate) statements: &'static [&'static str],
}

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
    version: 1,
    name: "sessions, events, notes, chunks, vectors, fts, summaries, meta",
    statements: &[
        "CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('conversation', 'memory')),
            title TEXT,
            created_at TEXT NOT NULL,
            last_active_at TEXT NOT NULL,
            next_seq INTEGER NOT NULL DEFAULT 1
        )",
        "CREATE INDEX sessions_by_user ON sessions (user_id, last_active_at)",
        "CREATE TABLE events (
            session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            payload_json TEXT NOT NULL,
            note_id TEXT UNIQUE,
            created_at TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )",
        "CREATE TABLE notes (
            note_id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
            event_seq INTEGER NOT NULL,
            content TEXT NOT NULL,
            metadata_json TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )",
        "CREATE INDEX notes_by_session ON notes (session_id, created_at)",
        "CREATE TABLE chunks (
            chunk_id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            event_seq INTEGER NOT NULL,
            note_id TEXT,
            ordinal INTEGER NOT NULL,
            text TEXT NOT NULL,
            metadata_json TEXT NOT NULL,
            FOREIGN KEY (session_id, event_seq) REFERENCES events (session_id, seq) ON DELETE CASCADE
        )",
        "CREATE INDEX chunks_by_event ON chunks (session_id, event_seq)",
        "CREATE INDEX chunks_by_note ON chunks (note_id) WHERE note_id IS NOT NULL",
        "CREATE TABLE chunk_vectors (
            chunk_id INTEGER PRIMARY KEY REFERENCES chunks (chunk_id) ON DELETE CASCADE,
            model_id TEXT NOT NULL,
            dims INTEGER NOT NULL,
            vector BLOB NOT NULL
        )",
        "CREATE VIRTUAL TABLE chunks_fts USING fts5 (
            text,
            content = 'chunks',
            content_rowid = 'chunk_id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        )",
        "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts (rowid, text) VALUES (new.chunk_id, new.text);
        END",
        "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.chunk_id, old.text);
        END",
        "CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text ON chunks BEGIN
            INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.chunk_id, old.text);
            INSERT INTO chunks_fts (rowid, text) VALUES (new.chunk_id, new.text);
        END",
        "CREATE TABLE summary_state (
            session_id TEXT PRIMARY KEY,
            epoch INTEGER NOT NULL,
            summary TEXT NOT NULL,
            upto_seq INTEGER NOT NULL,
            updated_at TEXT NOT NULL
        )",
        "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ],
}, Migration {
    version: 2,
    name: "chunks_fts carries session_id, so the keyword leg scopes without a join",
    // The FTS table is rebuilt from `chunks` (external content, so the text is still stored only
    // once): an UNINDEXED column is not tokenized, costs no index space, and lets
    // `WHERE chunks_fts MATCH ? AND session_id IN (...) ORDER BY rank LIMIT ?` filter and rank
    // inside FTS5.
    statements: &[
        "DROP TRIGGER chunks_fts_insert",
        "DROP TRIGGER chunks_fts_delete",
        "DROP TRIGGER chunks_fts_update",
        "DROP TABLE chunks_fts",
        "CREATE VIRTUAL TABLE chunks_fts USING fts5 (
            text,
            session_id UNINDEXED,
            content = 'chunks',
            content_rowid = 'chunk_id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        )",
        "INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')",
        "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts (rowid, text, session_id)
            VALUES (new.chunk_id, new.text, new.session_id);
        END",
        "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts (chunks_fts, rowid, text, session_id)
            VALUES ('delete', old.chunk_id, old.text, old.session_id);
        END",
        "CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text, session_id ON chunks BEGIN
            INSERT INTO chunks_fts (chunks_fts, rowid, text, session_id)
            VALUES ('delete', old.chunk_id, old.text, old.session_id);
            INSERT INTO chunks_fts (rowid, text, session_id)
            VALUES (new.chunk_id, new.text, new.session_id);
        END",
    ],
}, Migration {
    version: 3,
    name: "a change log every reader catches up from, and receipts of tool-call writes",
    // Every change to a chunk or its vector, by any writer (this process, the runner CLI, another
    // host), appends the chunk's id to `index_changes` in the writer's own transaction, through
    // triggers: no code path can forget it. A reader compares the log's head with the last entry
    // it applied before each search and loads only the chunks named since (see `freshness.rs`).
    // The log keeps its last 50,000 entries; a reader left further behind reloads everything.
    statements: &[
        "CREATE TABLE index_changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_id INTEGER NOT NULL,
            session_id TEXT NOT NULL
        )",
        "CREATE TRIGGER index_changes_prune AFTER INSERT ON index_changes BEGIN
            DELETE FROM index_changes WHERE seq <= new.seq - 50000;
        END",
        "CREATE TRIGGER index_changes_chunk_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO index_changes (chunk_id, session_id) VALUES (new.chunk_id, new.session_id);
        END",
        "CREATE TRIGGER index_changes_chunk_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO index_changes (chunk_id, session_id) VALUES (old.chunk_id, old.session_id);
        END",
        "CREATE TRIGGER index_changes_chunk_update AFTER UPDATE OF session_id ON chunks BEGIN
            INSERT INTO index_changes (chunk_id, session_id) VALUES (old.chunk_id, old.session_id);
            INSERT INTO index_changes (chunk_id, session_id) VALUES (new.chunk_id, new.session_id);
        END",
        "CREATE TRIGGER index_changes_vector_insert AFTER INSERT ON chunk_vectors BEGIN
            INSERT INTO index_changes (chunk_id, session_id)
            SELECT chunk_id, session_id FROM chunks WHERE chunk_id = new.chunk_id;
        END",
        "CREATE TRIGGER index_changes_vector_update AFTER UPDATE ON chunk_vectors BEGIN
            INSERT INTO index_changes (chunk_id, session_id)
            SELECT chunk_id, session_id FROM chunks WHERE chunk_id = new.chunk_id;
        END",
        "CREATE TRIGGER index_changes_vector_delete AFTER DELETE ON chunk_vectors BEGIN
            INSERT INTO index_changes (chunk_id, session_id)
            SELECT chunk_id, session_id FROM chunks WHERE chunk_id = old.chunk_id;
        END",
        // One row per memory write made for a model's tool call, keyed by the call (session, call
        // id, tool and arguments), written in the write's own transaction: a retried call finds
        // its receipt and gets the original result instead of writing twice.
        "CREATE TABLE write_receipts (
            call_key TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            note_id TEXT NOT NULL,
            version TEXT,
            created_at TEXT NOT NULL
        )",
        "CREATE INDEX write_receipts_by_age ON write_receipts (created_at)",
    ],
}, Migration {
    version: 4,
    name: "note metadata as columns: category, context, confidence, expiry",
    // Every existing note is kept; the columns are filled from the note's JSON metadata where it
    // already holds a valid value. Tags stay in the JSON (and in every chunk's metadata, where
    // both search legs filter on them). Listing pages by (created_at, note_id) per session, with
    // or without a category; the expiry index serves the sweeper and the "anything expired in
    // scope?" check every search makes.
    statements: &[
        "ALTER TABLE notes ADD COLUMN category TEXT
            CHECK (category IS NULL OR category IN ('fact', 'pattern', 'preference', 'capability'))",
        "ALTER TABLE notes ADD COLUMN context TEXT",
        "ALTER TABLE notes ADD COLUMN confidence REAL
            CHECK (confidence IS NULL OR (confidence >= 0.0 AND confidence <= 1.0))",
        "ALTER TABLE notes ADD COLUMN expires_at TEXT",
        "UPDATE notes SET category = json_extract(metadata_json, '$.category')
         WHERE json_extract(metadata_json, '$.category')
               IN ('fact', 'pattern', 'preference', 'capability')",
        "UPDATE notes SET context = json_extract(metadata_json, '$.context')
         WHERE json_type(metadata_json, '$.context') = 'text'",
        "UPDATE notes SET confidence = json_extract(metadata_json, '$.confidence')
         WHERE json_type(metadata_json, '$.confidence') IN ('real', 'integer')
           AND json_extract(metadata_json, '$.confidence') BETWEEN 0.0 AND 1.0",
        "CREATE INDEX notes_by_session_newest ON notes (session_id, created_at DESC, note_id DESC)",
        "CREATE INDEX notes_by_category ON notes (session_id, category, created_at DESC, note_id DESC)",
        "CREATE INDEX notes_by_expiry ON notes (expires_at) WHERE expires_at IS NOT NULL",
    ],
}, Migration {
    version: 6,
    name: "audit log of memory operations from every surface",
    // One row per memory operation: written inside the transaction of the change it records (a
    // save, update or delete), or on its own for reads, denials and failures. Never any note text.
    statements: &[
        "CREATE TABLE audit_log (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at TEXT NOT NULL,
            user_id TEXT NOT NULL,
            surface TEXT NOT NULL,
            client TEXT,
            tool TEXT NOT NULL,
            operation TEXT NOT NULL,
            namespace TEXT,
            key TEXT,
            note_id TEXT,
            outcome TEXT NOT NULL,
            reason TEXT,
            redactions TEXT
        )",
        "CREATE INDEX audit_log_by_time ON audit_log (at, id)",
    ],
}, Migration {
    version: 7,
    name: "note versions, deleted-note tombstones, normalised-text hashes",
    // An update copies the text it replaces into `note_versions` (same transaction); a delete
    // moves the note into `deleted_notes` (its chunks, vectors and FTS rows are removed at once,
    // so search never sees it) until it is restored or purged after the retention window. Live
    // queries on `notes` are unchanged. `text_hash` (normalised text, see `duplicates.rs`) lets a
    // save find an exact duplicate with one indexed probe; rows from before this migration are
    // filled in when the store opens.
    statements: &[
        "CREATE TABLE note_versions (
            note_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            content TEXT NOT NULL,
            metadata_json TEXT NOT NULL,
            saved_at TEXT NOT NULL,
            replaced_at TEXT NOT NULL,
            PRIMARY KEY (note_id, version)
        )",
        "CREATE INDEX note_versions_by_session ON note_versions (session_id)",
        "CREATE TABLE deleted_notes (
            note_id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata_json TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            deleted_at TEXT NOT NULL
        )",
        "CREATE INDEX deleted_notes_by_age ON deleted_notes (deleted_at)",
        "CREATE INDEX deleted_notes_by_session ON deleted_notes (session_id, deleted_at)",
        "ALTER TABLE notes ADD COLUMN text_hash TEXT",
        "CREATE INDEX notes_by_text_hash ON notes (session_id, text_hash)",
    ],
}];

/// Brings the schema up to date. Returns how many migrations were applied (0 when current).
pub(crate) async fn migrate(conn: &Connection) -> Result<usize, MemoryError> {
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )",
        (),
    )
    .await
    .map_err(MemoryError::db("preparing migrations"))?;
    let mut applied = 0;
    for migration in MIGRATIONS {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .await
            .map_err(MemoryError::db("starting a migration"))?;
        // Checked inside the write transaction: a second process opening at the same time waits
        // for the first and then sees the migration as done.
        let mut rows = tx
            .query(
                "SELECT 1 FROM schema_migrations WHERE version = ?1",
                [migration.version],
            )
            .await
            .map_err(MemoryError::db("reading applied migrations"))?;
        let done = rows
            .next()
            .await
            .map_err(MemoryError::db("reading applied migrations"))?;
        drop(rows);
        if done.is_some() {
            tx.rollback()
                .await
                .map_err(MemoryError::db("finishing a migration"))?;
            continue;
        }
        let outcome = apply(&tx, migration).await;
        match outcome {
            Ok(()) => tx
                .commit()
                .await
                .map_err(MemoryError::db("committing a migration"))?,
            Err(e) => {
                let _ = tx.rollback().await;
                return Err(e);
            }
        }
        tracing::info!(
            version = migration.version,
            name = migration.name,
            "applied memory migration"
        );
        applied += 1;
    }
    Ok(applied)
}

async fn apply(conn: &Connection, migration: &Migration) -> Result<(), MemoryError> {
    for statement in migration.statements {
        conn.execute(statement, ())
            .await
            .map_err(MemoryError::db("applying a migration"))?;
    }
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
        (migration.version, migration.name, now_text()),
    )
    .await
    .map_err(MemoryError::db("recording a migration"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn count(conn: &Connection, sql: &str) -> i64 {
        let mut rows = conn.query(sql, ()).await.unwrap();
        rows.next().await.unwrap().unwrap().get(0).unwrap()
    }

    #[tokio::test]
    async fn the_fts_migration_upgrades_a_version_1_database_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let db = libsql::Builder::new_local(dir.path().join("old.db"))
            .build()
            .await
            .unwrap();
        let conn = db.connect().unwrap();
        // A database as version 1 left it, with rows in two sessions.
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
             applied_at TEXT NOT NULL)",
            (),
        )
        .await
        .unwrap();
        let tx = conn.transaction().await.unwrap();
        apply(&tx, &MIGRATIONS[0]).await.unwrap();
        tx.commit().await.unwrap();
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

        assert_eq!(migrate(&conn).await.unwrap(), MIGRATIONS.len() - 1);
        assert_eq!(migrate(&conn).await.unwrap(), 0, "applied once");
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
    }

    #[tokio::test]
    async fn the_metadata_migration_keeps_every_note_and_fills_its_columns() {
        let dir = tempfile::tempdir().unwrap();
        let db = libsql::Builder::new_local(dir.path().join("v3.db"))
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
        for m in &MIGRATIONS[..3] {
            let tx = conn.transaction().await.unwrap();
            apply(&tx, m).await.unwrap();
            tx.commit().await.unwrap();
        }
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
}
