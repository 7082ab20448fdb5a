//! Notes (their lifecycle across every table, failed updates, bad input, hundreds of concurrent
//! writes surviving a reopen) and the retrieval trait object, on real database files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::collections::HashSet;
use std::sync::Arc;

use common::{Backend, FlakyEmbedder, fixture, fixture_on, on_both_backends, session, user};
use memory::{
    HashEmbedder, HitSource, HybridQuery, MemoryError, MemoryStore, NoteMetadata, Weights,
};
use types::{Message, SessionId};

pub(crate) const KEYWORDS_ONLY: Weights = Weights {
    vector: 0.0,
    fts: 1.0,
};

fn keyword_query(sessions: Vec<SessionId>, text: &str) -> HybridQuery {
    HybridQuery {
        weights: KEYWORDS_ONLY,
        ..HybridQuery::new(sessions, text, 10)
    }
}

pub(crate) async fn note_ids_found(store: &MemoryStore, who: &str, text: &str) -> Vec<String> {
    let q = keyword_query(vec![SessionId::user_memory(&user(who))], text);
    store
        .search(&q)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.note_id.map(|n| n.to_string()).unwrap_or_default())
        .collect()
}

on_both_backends!(
    note_lifecycle_keeps_every_table_in_step,
    failed_updates_leave_the_old_note_intact_and_searchable,
    bad_note_input_is_rejected_without_changes,
    hundreds_of_concurrent_writes_get_distinct_sequences_and_survive_reopen,
);

async fn note_lifecycle_keeps_every_table_in_step(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let raw = f.raw().await;

    let note = common::save_note(&f.store, &alice, "Alice's cat is named Whiskers.").await;
    let id = note.note_id.to_string();
    assert!(id.starts_with("note-"));
    assert_eq!(note.created_at, note.updated_at);
    let by_meta = |field: &'static str| {
        format!("SELECT count(*) FROM chunks WHERE json_extract(metadata_json, '$.{field}') = ?1")
    };
    assert_eq!(raw.count(&by_meta("note_id"), [id.as_str()]).await, 1);
    assert_eq!(raw.count(&by_meta("source"), ["user_memory"]).await, 1);
    assert_eq!(
        raw.count(&by_meta("created_at"), [memory_time(&note.created_at)])
            .await,
        1,
        "created_at is queryable"
    );

    // Search finds it, with its id and source.
    let hits = f
        .store
        .search(&HybridQuery::new(
            vec![SessionId::user_memory(&alice)],
            "whiskers",
            5,
        ))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].note_id.as_ref(), Some(&note.note_id));
    assert_eq!(hits[0].source, HitSource::UserMemory);
    assert_eq!(hits[0].text, "Alice's cat is named Whiskers.");
    assert!(hits[0].score > 0.0 && hits[0].score <= 1.0);

    // Update: same id, created_at kept, old text gone from chunks, vectors and search.
    let updated = f
        .store
        .update(
            &alice,
            None,
            &note.note_id,
            "Alice's cat is named Mittens.",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();
    assert_eq!(updated.note_id, note.note_id);
    assert_eq!(updated.created_at, note.created_at);
    assert!(updated.updated_at > note.updated_at);
    assert_eq!(f.store.get(&alice, &note.note_id).await.unwrap(), updated);
    assert_eq!(raw.chunks_holding("whiskers").await, 0);
    assert_eq!(raw.chunks_holding("mittens").await, 1);
    assert_eq!(
        raw.count(
            "SELECT count(*) FROM events WHERE note_id = ?1",
            [id.as_str()]
        )
        .await,
        1
    );
    assert_eq!(raw.count("SELECT count(*) FROM chunk_vectors", ()).await, 1);
    let blob = raw.blob("SELECT vector FROM chunk_vectors").await;
    // Stored as the index keeps it: a tag byte, the scale, the int8 codes.
    let vector = HashEmbedder::new(common::DIMS).embed_one("Alice's cat is named Mittens.");
    let mut codes = vec![0i8; vector.len()];
    let scale = memory_index::dot::quantize(&vector, &mut codes);
    let mut expected = vec![1u8];
    expected.extend(scale.to_le_bytes());
    expected.extend(codes.iter().map(|c| c.to_le_bytes()[0]));
    assert_eq!(blob, expected, "the vector is the new text's");
    assert!(
        note_ids_found(&f.store, "alice", "whiskers")
            .await
            .is_empty()
    );
    assert_eq!(
        note_ids_found(&f.store, "alice", "mittens").await,
        std::slice::from_ref(&id)
    );

    // Delete: event, note, chunks and vectors all go.
    f.store
        .delete(&alice, None, &note.note_id)
        .await
        .map(|_| ())
        .unwrap();
    for table in ["events", "notes", "chunks", "chunk_vectors"] {
        assert_eq!(
            raw.count(&format!("SELECT count(*) FROM {table}"), ())
                .await,
            0,
            "{table}"
        );
    }
    assert_eq!(raw.chunks_holding("mittens").await, 0);
    assert!(
        note_ids_found(&f.store, "alice", "mittens cat")
            .await
            .is_empty()
    );
    assert_eq!(f.store.upkeep().stats().await.unwrap().indexed_vectors, 0);

    // Unknown ids: typed not-found, nothing changed.
    for result in [
        f.store.get(&alice, &note.note_id).await.map(drop),
        f.store
            .delete(&alice, None, &note.note_id)
            .await
            .map(|_| ()),
        f.store
            .update(
                &alice,
                None,
                &note.note_id,
                "x",
                None,
                memory::MetadataPatch::default(),
            )
            .await
            .and_then(memory::Written::into_note)
            .map(drop),
    ] {
        let err = result.unwrap_err();
        assert!(
            matches!(err, MemoryError::NoteNotFound(_)) && err.is_not_found(),
            "{err:?}"
        );
    }
}

fn memory_time(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

async fn failed_updates_leave_the_old_note_intact_and_searchable(backend: Backend) {
    let f = fixture_on(backend).await;
    let embedder = Arc::new(FlakyEmbedder::new());
    let store = f.open(embedder.clone()).await;
    let alice = user("alice");
    let note = common::save_note(&store, &alice, "The user's favourite tea is oolong.").await;
    let raw = f.raw().await;
    let check_intact = |label: &'static str| {
        let (store, raw, note, alice) = (store.clone(), &raw, note.clone(), alice.clone());
        async move {
            assert_eq!(
                store.get(&alice, &note.note_id).await.unwrap(),
                note,
                "{label}"
            );
            assert_eq!(
                note_ids_found(&store, "alice", "oolong").await,
                [note.note_id.to_string()]
            );
            let hybrid = store
                .search(&HybridQuery::new(
                    vec![SessionId::user_memory(&alice)],
                    "oolong tea",
                    5,
                ))
                .await
                .unwrap();
            assert_eq!(hybrid.len(), 1, "{label}");
            for table in ["events", "notes", "chunks", "chunk_vectors"] {
                let n = raw
                    .count(&format!("SELECT count(*) FROM {table}"), ())
                    .await;
                assert_eq!(n, 1, "{label}: {table}");
            }
            assert_eq!(raw.chunks_holding("oolong").await, 1, "{label}");
            assert_eq!(
                store.upkeep().stats().await.unwrap().indexed_vectors,
                1,
                "{label}"
            );
        }
    };

    // 1. The embedder fails before anything is written.
    embedder.set_failing(true);
    let err = store
        .update(
            &alice,
            None,
            &note.note_id,
            "Now it is espresso.",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap_err();
    assert!(matches!(err, MemoryError::Embedding { .. }), "{err:?}");
    assert!(err.is_retryable());
    embedder.set_failing(false);
    check_intact("embedder failure").await;

    // 2. The database fails after the old rows were deleted and while the new ones are inserted.
    raw.conn
        .execute(
            "CREATE TRIGGER poison BEFORE INSERT ON chunks WHEN new.text LIKE '%poison%'
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
            (),
        )
        .await
        .unwrap();
    let err = store
        .update(
            &alice,
            None,
            &note.note_id,
            "A poison pill.",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap_err();
    assert!(matches!(err, MemoryError::Database { .. }), "{err:?}");
    let shown = err.to_string();
    assert!(
        !shown.contains("INSERT") && !shown.contains("injected") && !shown.contains('/'),
        "{shown}"
    );
    check_intact("database failure mid-update").await;
    // Saves fail the same way and leave nothing behind.
    store
        .save(
            &alice,
            None,
            "More poison.",
            NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap_err();
    check_intact("database failure mid-save").await;

    raw.conn.execute("DROP TRIGGER poison", ()).await.unwrap();
    let updated = store
        .update(
            &alice,
            None,
            &note.note_id,
            "Now it is espresso.",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();
    assert_eq!(updated.note_id, note.note_id);
    assert_eq!(
        note_ids_found(&store, "alice", "espresso").await,
        [note.note_id.to_string()]
    );
    assert!(note_ids_found(&store, "alice", "oolong").await.is_empty());
}

async fn bad_note_input_is_rejected_without_changes(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    for content in ["", "   \n", &"x".repeat(memory::MAX_NOTE_BYTES + 1)] {
        let err = f
            .store
            .save(
                &alice,
                None,
                content,
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)
            .unwrap_err();
        assert!(err.is_invalid_input(), "{err:?}");
    }
    assert_eq!(f.store.upkeep().stats().await.unwrap().notes, 0);
}

async fn hundreds_of_concurrent_writes_get_distinct_sequences_and_survive_reopen(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let chat = session("chat-1");
    let mut tasks = Vec::new();
    for i in 0..200 {
        let (store, alice, chat) = (f.store.clone(), alice.clone(), chat.clone());
        tasks.push(tokio::spawn(async move {
            if i % 2 == 0 {
                let m = Message::user(format!("message number {i}"));
                (
                    true,
                    store
                        .sessions()
                        .append_message(&chat, &alice, &m)
                        .await
                        .unwrap(),
                )
            } else {
                let text = format!("note number {i} about topic{i}");
                let note = common::save_note(&store, &alice, &text).await;
                assert!(note.note_id.as_str().starts_with("note-"));
                (false, 0)
            }
        }));
    }
    let mut chat_seqs = HashSet::new();
    for t in tasks {
        let (is_chat, seq) = t.await.unwrap();
        if is_chat {
            assert!(chat_seqs.insert(seq), "duplicate sequence {seq}");
        }
    }
    assert_eq!(chat_seqs, (1..=100).collect::<HashSet<u64>>());
    let reopened = f.reopen().await;
    drop(f.store);
    let history = reopened
        .sessions()
        .history(&chat, None, 1000)
        .await
        .unwrap();
    assert_eq!(history.len(), 100);
    assert!(
        history.windows(2).all(|w| w[0].seq + 1 == w[1].seq),
        "oldest first, no gaps"
    );
    let notes = reopened.list_notes(&alice).await.unwrap();
    assert_eq!(notes.len(), 100);
    let memory_history = reopened
        .sessions()
        .history(&SessionId::user_memory(&alice), None, 1000)
        .await
        .unwrap();
    let seqs: HashSet<u64> = memory_history.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=100).collect::<HashSet<u64>>());
    // Everything saved before the reopen is found again, by keywords and by vectors.
    let hits = reopened
        .search(&HybridQuery::new(
            vec![SessionId::user_memory(&alice)],
            "topic77",
            3,
        ))
        .await
        .unwrap();
    assert_eq!(hits[0].text, "note number 77 about topic77");
    let stats = reopened.upkeep().stats().await.unwrap();
    assert_eq!(
        (stats.notes, stats.events, stats.chunks, stats.vectors),
        (100, 200, 200, 200)
    );
    assert_eq!(stats.indexed_vectors, 200);
    assert!(stats.db_bytes > 0);
}

#[tokio::test]
async fn the_trait_object_reaches_the_store() {
    let f = fixture().await;
    let alice = user("alice");
    let tools: Arc<dyn memory::MemoryRetrieval> = Arc::new(f.store.clone());
    let note = tools
        .store_note_once(
            &alice,
            None,
            "Saved through the trait.",
            NoteMetadata::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        tools.get_note(&alice, &note.note_id).await.unwrap().content,
        "Saved through the trait."
    );
    let hits = tools
        .hybrid_query(&HybridQuery::new(
            vec![SessionId::user_memory(&alice)],
            "trait",
            5,
        ))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    tools
        .delete_note_once(&alice, None, &note.note_id)
        .await
        .unwrap();
}
