//! A note's lifecycle on real database files: versions kept by updates, tombstones kept by
//! deletes, history, restore (deleted notes and old versions), purge leaving nothing behind,
//! (duplicate checks and provenance: `note_checks.rs`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use chrono::Duration;
use common::{Raw, fixture, user};
use memory::{HybridQuery, MemoryError, MemoryStore, NoteMetadata, NoteState, Weights};
use types::{NoteId, SessionId, UserId};

/// Note ids a search for `text` returns, in either leg alone.
async fn searched(store: &MemoryStore, who: &UserId, text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for weights in [
        Weights {
            vector: 0.0,
            fts: 1.0,
        },
        Weights {
            vector: 1.0,
            fts: 0.0,
        },
    ] {
        let q = HybridQuery {
            weights,
            ..HybridQuery::new(vec![SessionId::user_memory(who)], text, 10)
        };
        let hits = store.search(&q).await.unwrap();
        out.push(hits.into_iter().map(|h| h.text).collect());
    }
    out
}

/// Rows left anywhere for a note (versions, tombstone, note, events, chunks, vectors).
async fn rows_of(raw: &Raw, note: &NoteId) -> [i64; 6] {
    let id = note.as_str();
    [
        raw.count(
            "SELECT count(*) FROM note_versions WHERE note_id = ?1",
            [id],
        )
        .await,
        raw.count(
            "SELECT count(*) FROM deleted_notes WHERE note_id = ?1",
            [id],
        )
        .await,
        raw.count("SELECT count(*) FROM notes WHERE note_id = ?1", [id])
            .await,
        raw.count("SELECT count(*) FROM events WHERE note_id = ?1", [id])
            .await,
        raw.count("SELECT count(*) FROM chunks WHERE note_id = ?1", [id])
            .await,
        raw.count(
            "SELECT count(*) FROM chunk_vectors v JOIN chunks c USING (chunk_id)
             WHERE c.note_id = ?1",
            [id],
        )
        .await,
    ]
}

#[tokio::test]
async fn an_update_keeps_the_old_text_as_a_version_and_search_sees_only_the_current() {
    let f = fixture().await;
    let alice = user("alice");
    let note = common::save_note(&f.store, &alice, "Alice lives in Lisbon").await;
    f.store
        .update(
            &alice,
            None,
            &note.note_id,
            "Alice lives in Porto",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();
    f.store
        .update(
            &alice,
            None,
            &note.note_id,
            "Alice lives in Braga",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();

    let history = f.store.history(&alice, &note.note_id).await.unwrap();
    assert_eq!(history.state, NoteState::Live);
    let texts: Vec<(u32, &str, bool)> = history
        .versions
        .iter()
        .map(|v| (v.version, v.content.as_str(), v.replaced_at.is_none()))
        .collect();
    assert_eq!(
        texts,
        [
            (1, "Alice lives in Lisbon", false),
            (2, "Alice lives in Porto", false),
            (3, "Alice lives in Braga", true)
        ]
    );
    for leg in searched(&f.store, &alice, "Lisbon Porto").await {
        assert!(
            leg.iter().all(|t| t == "Alice lives in Braga"),
            "old versions are never found: {leg:?}"
        );
    }
    for leg in searched(&f.store, &alice, "Alice lives in Braga").await {
        assert!(leg.iter().all(|t| t == "Alice lives in Braga"), "{leg:?}");
    }
    // One set of index rows: the current text's.
    let raw = f.raw().await;
    assert_eq!(rows_of(&raw, &note.note_id).await, [2, 0, 1, 1, 1, 1]);
}

#[tokio::test]
async fn a_delete_is_a_tombstone_that_restores_with_the_same_id_and_is_searchable_again() {
    let f = fixture().await;
    let alice = user("alice");
    let note = common::save_note(&f.store, &alice, "The garage code is on a yellow sticker").await;
    f.store
        .delete(&alice, None, &note.note_id)
        .await
        .map(|_| ())
        .unwrap();

    // Gone from reads and search; its index rows are gone at once.
    assert!(matches!(
        f.store.get(&alice, &note.note_id).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    for leg in searched(&f.store, &alice, "yellow sticker").await {
        assert!(leg.is_empty(), "{leg:?}");
    }
    let raw = f.raw().await;
    assert_eq!(rows_of(&raw, &note.note_id).await, [0, 1, 0, 0, 0, 0]);
    let deleted = f.store.list_deleted(&alice).await.unwrap();
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0].note.content, note.content);
    assert_eq!(
        deleted[0].purge_after - deleted[0].deleted_at,
        Duration::days(30)
    );
    let history = f.store.history(&alice, &note.note_id).await.unwrap();
    assert!(matches!(history.state, NoteState::Deleted { .. }));

    let restored = f
        .store
        .restore(&alice, None, &note.note_id, None)
        .await
        .unwrap();
    assert_eq!(
        (&restored.note_id, &restored.content, restored.created_at),
        (&note.note_id, &note.content, note.created_at)
    );
    assert_eq!(f.store.get(&alice, &note.note_id).await.unwrap(), restored);
    for leg in searched(&f.store, &alice, "yellow sticker").await {
        assert_eq!(leg, std::slice::from_ref(&note.content));
    }
    assert_eq!(rows_of(&raw, &note.note_id).await, [0, 0, 1, 1, 1, 1]);
    assert!(f.store.list_deleted(&alice).await.unwrap().is_empty());
}

#[tokio::test]
async fn restoring_an_old_version_of_a_live_note_keeps_the_replaced_text() {
    let f = fixture().await;
    let alice = user("alice");
    let note = common::save_note(&f.store, &alice, "Prefers window seats").await;
    f.store
        .update(
            &alice,
            None,
            &note.note_id,
            "Prefers aisle seats",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();

    let back = f
        .store
        .restore(&alice, None, &note.note_id, Some(1))
        .await
        .unwrap();
    assert_eq!(back.content, "Prefers window seats");
    let history = f.store.history(&alice, &note.note_id).await.unwrap();
    let texts: Vec<&str> = history
        .versions
        .iter()
        .map(|v| v.content.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "Prefers window seats",
            "Prefers aisle seats",
            "Prefers window seats"
        ]
    );

    // Bad requests say what to fix and change nothing.
    for (version, expected) in [
        (None, "is not deleted"),
        (Some(3), "already the current"),
        (Some(9), "has no version 9"),
    ] {
        let err = f
            .store
            .restore(&alice, None, &note.note_id, version)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{version:?}: {err}");
    }
    let after = f.store.history(&alice, &note.note_id).await.unwrap();
    assert_eq!(after, history);
}

#[tokio::test]
async fn a_deleted_note_restores_to_an_older_version_when_asked() {
    let f = fixture().await;
    let alice = user("alice");
    let note = common::save_note(&f.store, &alice, "Dentist is Dr Ana").await;
    f.store
        .update(
            &alice,
            None,
            &note.note_id,
            "Dentist is Dr Rui",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();
    f.store
        .delete(&alice, None, &note.note_id)
        .await
        .map(|_| ())
        .unwrap();
    let back = f
        .store
        .restore(&alice, None, &note.note_id, Some(1))
        .await
        .unwrap();
    assert_eq!(back.content, "Dentist is Dr Ana");
    let history = f.store.history(&alice, &note.note_id).await.unwrap();
    let texts: Vec<&str> = history
        .versions
        .iter()
        .map(|v| v.content.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "Dentist is Dr Ana",
            "Dentist is Dr Rui",
            "Dentist is Dr Ana"
        ]
    );
}

#[tokio::test]
async fn purge_after_the_retention_window_leaves_nothing_behind() {
    let f = fixture().await;
    let alice = user("alice");
    let note = common::save_note(&f.store, &alice, "Old phone number 555 0101").await;
    f.store
        .update(
            &alice,
            None,
            &note.note_id,
            "Phone number 555 0202",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();
    let kept = common::save_note(&f.store, &alice, "Kept note about bees").await;
    f.store
        .delete(&alice, None, &note.note_id)
        .await
        .map(|_| ())
        .unwrap();
    let raw = f.raw().await;

    // Within the window (the default 30 days) nothing is purged.
    let none = f
        .store
        .upkeep()
        .purge_deleted(f.store.upkeep().tombstone_retention())
        .await
        .unwrap();
    assert!(none.is_empty());
    assert_eq!(rows_of(&raw, &note.note_id).await, [1, 1, 0, 0, 0, 0]);

    // Past it: versions and tombstone go; the text is nowhere in the database.
    let purged = f
        .store
        .upkeep()
        .purge_deleted(Duration::zero())
        .await
        .unwrap();
    assert_eq!(purged, std::slice::from_ref(&note.note_id));
    assert_eq!(rows_of(&raw, &note.note_id).await, [0; 6]);
    assert_eq!(raw.chunks_holding("0101").await, 0);
    assert_eq!(raw.chunks_holding("0202").await, 0);
    assert!(matches!(
        f.store.restore(&alice, None, &note.note_id, None).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    assert_eq!(rows_of(&raw, &kept.note_id).await, [0, 0, 1, 1, 1, 1]);
}

#[tokio::test]
async fn an_expired_note_is_swept_with_its_versions() {
    let f = fixture().await;
    let alice = user("alice");
    let soon = NoteMetadata {
        expires_at: Some(chrono::Utc::now() + Duration::milliseconds(300)),
        ..NoteMetadata::default()
    };
    let note = f
        .store
        .save(
            &alice,
            None,
            "Parking spot 42 today",
            soon,
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    f.store
        .update(
            &alice,
            None,
            &note.note_id,
            "Parking spot 43 today",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();
    // Wait until it has expired (a fact about the clock, not a timing assertion).
    while !f
        .store
        .upkeep()
        .list_expired(&alice)
        .await
        .unwrap()
        .iter()
        .any(|n| n.note_id == note.note_id)
    {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        f.store.upkeep().sweep_expired().await.unwrap(),
        std::slice::from_ref(&note.note_id)
    );
    assert_eq!(rows_of(&f.raw().await, &note.note_id).await, [0; 6]);
}

#[tokio::test]
async fn history_and_restore_never_reach_another_users_notes() {
    let f = fixture().await;
    let (alice, bob) = (user("alice"), user("bob"));
    let note = common::save_note(&f.store, &alice, "Alice's secret recipe uses saffron").await;
    f.store
        .delete(&alice, None, &note.note_id)
        .await
        .map(|_| ())
        .unwrap();
    assert!(matches!(
        f.store.history(&bob, &note.note_id).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    assert!(matches!(
        f.store.restore(&bob, None, &note.note_id, None).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    assert!(f.store.list_deleted(&bob).await.unwrap().is_empty());
    assert!(matches!(
        f.store.confirm(&bob, None, &note.note_id).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    // Still Alice's to restore.
    f.store
        .restore(&alice, None, &note.note_id, None)
        .await
        .unwrap();
    assert!(f.store.list_notes(&bob).await.unwrap().is_empty());
}
