//! Encryption at rest: the file holds no plaintext, a wrong, missing or unexpected key is one
//! clear error at open, and `change_key` encrypts, re-keys and decrypts a store without losing a
//! note. (The behavioural suite also runs on encrypted files: `on_both_backends!`.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::{DIMS, test_key, user};
use memory::{EncryptionKey, HashEmbedder, HybridQuery, MemoryError, MemoryStore, change_key};
use types::SessionId;

fn other_key() -> EncryptionKey {
    EncryptionKey::parse(&"beef".repeat(16)).unwrap()
}

fn embedder() -> Arc<HashEmbedder> {
    Arc::new(HashEmbedder::new(DIMS))
}

async fn open(path: &Path, key: Option<EncryptionKey>) -> Result<MemoryStore, MemoryError> {
    match key {
        Some(key) => {
            MemoryStore::open(
                memory::Target::File(path),
                memory::OpenOptions {
                    encryption_key: Some(key),
                    ..memory::OpenOptions::with_embedder(embedder())
                },
            )
            .await
        }
        None => {
            MemoryStore::open(
                memory::Target::File(path),
                memory::OpenOptions::with_embedder(embedder()),
            )
            .await
        }
    }
}

/// The notes' texts, sorted, as the store lists them.
async fn texts(store: &MemoryStore) -> Vec<String> {
    let mut texts: Vec<String> = store
        .list_notes(&user("alice"))
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.content)
        .collect();
    texts.sort();
    texts
}

/// Saves `n` notes (and a session with events) and returns their texts, sorted.
async fn fill(store: &MemoryStore, n: usize) -> Vec<String> {
    let mut saved = Vec::new();
    for i in 0..n {
        let text = format!("note {i}: the plaintext marker zanzibar-{i} must not be on disk");
        common::save_note(store, &user("alice"), &text).await;
        saved.push(text);
    }
    saved.sort();
    saved
}

/// Every byte of the database and its WAL.
fn file_bytes(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    let wal = path.with_file_name(format!(
        "{}-wal",
        path.file_name().unwrap().to_string_lossy()
    ));
    if let Ok(more) = std::fs::read(wal) {
        bytes.extend(more);
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn assert_unreadable(result: Result<MemoryStore, MemoryError>, with_key: bool) {
    match result {
        Err(e @ MemoryError::Unreadable { .. }) => {
            let text = e.to_string();
            assert!(
                matches!(e, MemoryError::Unreadable { with_key: w, .. } if w == with_key),
                "{text}"
            );
            assert!(text.contains("cannot be read"), "{text}");
            assert!(!text.contains('/'), "no path in the message: {text}");
        }
        Err(other) => panic!("expected Unreadable, got {other}"),
        Ok(_) => panic!("expected Unreadable, the store opened (with_key {with_key})"),
    }
}

#[tokio::test]
async fn an_encrypted_file_holds_no_plaintext_and_reopens_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let store = open(&path, Some(test_key())).await.unwrap();
    let saved = fill(&store, 5).await;
    store.close().await;
    let bytes = file_bytes(&path);
    assert!(
        !bytes.starts_with(b"SQLite format 3"),
        "header is encrypted"
    );
    assert!(!contains(&bytes, "zanzibar"), "note text is encrypted");

    // The same check on a plaintext file finds the text: the check above can fail.
    let plain = dir.path().join("plain.db");
    let store = open(&plain, None).await.unwrap();
    fill(&store, 1).await;
    store.close().await;
    assert!(contains(&file_bytes(&plain), "zanzibar"));

    let store = open(&path, Some(test_key())).await.unwrap();
    assert_eq!(texts(&store).await, saved);
    let q = HybridQuery::new(
        vec![SessionId::user_memory(&user("alice"))],
        "zanzibar-3",
        3,
    );
    let hits = store.search(&q).await.unwrap();
    assert!(hits[0].text.contains("zanzibar-3"), "{hits:?}");
}

#[tokio::test]
async fn a_wrong_missing_or_unexpected_key_is_one_clear_error_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let encrypted = dir.path().join("enc.db");
    let store = open(&encrypted, Some(test_key())).await.unwrap();
    let saved = fill(&store, 2).await;
    store.close().await;
    assert_unreadable(open(&encrypted, Some(other_key())).await, true);
    assert_unreadable(open(&encrypted, None).await, false);

    let plain = dir.path().join("plain.db");
    let store = open(&plain, None).await.unwrap();
    let plain_saved = fill(&store, 2).await;
    store.close().await;
    assert_unreadable(open(&plain, Some(test_key())).await, true);

    // The failed opens changed nothing.
    let store = open(&encrypted, Some(test_key())).await.unwrap();
    assert_eq!(texts(&store).await, saved);
    store.close().await;
    let store = open(&plain, None).await.unwrap();
    assert_eq!(texts(&store).await, plain_saved);
}

#[tokio::test]
async fn change_key_encrypts_rekeys_and_decrypts_without_losing_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let store = open(&path, None).await.unwrap();
    let saved = fill(&store, 40).await;
    let stats = store.upkeep().stats().await.unwrap();
    store.close().await;

    let steps: [(Option<EncryptionKey>, Option<EncryptionKey>); 3] = [
        (None, Some(test_key())),
        (Some(test_key()), Some(other_key())),
        (Some(other_key()), None),
    ];
    for (from, to) in steps {
        change_key(&path, from.as_ref(), to.as_ref()).await.unwrap();
        // The old key (or its absence) no longer opens the file; the new one does, with every
        // note, chunk and vector.
        assert_unreadable(open(&path, from.clone()).await, from.is_some());
        let store = open(&path, to.clone()).await.unwrap();
        assert_eq!(texts(&store).await, saved, "after {to:?}");
        let now = store.upkeep().stats().await.unwrap();
        assert_eq!(
            (now.notes, now.chunks, now.vectors, now.events),
            (stats.notes, stats.chunks, stats.vectors, stats.events)
        );
        let q = HybridQuery::new(
            vec![SessionId::user_memory(&user("alice"))],
            "zanzibar-7",
            3,
        );
        assert!(
            store.search(&q).await.unwrap()[0]
                .text
                .contains("zanzibar-7")
        );
        store.close().await;
        let encrypted_now = to.is_some();
        assert_eq!(
            !contains(&file_bytes(&path), "zanzibar"),
            encrypted_now,
            "plaintext on disk iff not encrypted"
        );
    }
}

#[tokio::test]
async fn change_key_with_the_wrong_key_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let store = open(&path, Some(test_key())).await.unwrap();
    let saved = fill(&store, 3).await;
    store.close().await;
    let err = change_key(&path, Some(&other_key()), None)
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Unreadable { .. }), "{err}");
    let missing = change_key(&dir.path().join("none.db"), None, Some(&test_key()))
        .await
        .unwrap_err();
    assert!(missing.is_invalid_input(), "{missing}");
    let store = open(&path, Some(test_key())).await.unwrap();
    assert_eq!(texts(&store).await, saved);
}
