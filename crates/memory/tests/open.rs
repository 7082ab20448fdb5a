//! Opening: placement, the legacy move, remote configuration, migrations, model changes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::sync::{Arc, Mutex};

use common::{Raw, user};
use memory::{HashEmbedder, HybridQuery, LegacyDir, MemoryError, MemoryStore, OpenOptions};
use types::{DbPath, EmbeddingBackend, EmbeddingConfig, MemoryConfig, Message, SessionId};

fn hash_config(db_path: &str) -> MemoryConfig {
    MemoryConfig {
        db_path: DbPath::from(db_path.to_owned()),
        embedding: EmbeddingConfig {
            backend: EmbeddingBackend::Hash,
            dimensions: Some(common::DIMS),
            ..EmbeddingConfig::default()
        },
        ..MemoryConfig::default()
    }
}

fn no_legacy() -> OpenOptions {
    OpenOptions {
        legacy_dir: LegacyDir::Skip,
        ..OpenOptions::default()
    }
}

#[tokio::test]
async fn migrations_apply_once() {
    let f = common::fixture().await;
    let raw = Raw::open(&f.path).await;
    let sql = "SELECT version || ' ' || name || ' ' || applied_at FROM schema_migrations";
    let first = raw.strings(sql).await;
    // Every migration the crate declares, each once, in order (the list grows with the schema).
    let versions: Vec<i64> = first
        .iter()
        .map(|row| row.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(versions[..4], [1, 2, 3, 4], "{first:?}");
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{first:?}");
    common::save_note(&f.store, &user("alice"), "kept").await;
    drop(f.store);
    let again = MemoryStore::open(
        memory::Target::File(&f.path),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(common::DIMS))),
    )
    .await
    .unwrap();
    assert_eq!(raw.strings(sql).await, first, "reopening applies nothing");
    assert_eq!(raw.strings("PRAGMA journal_mode").await, ["wal"]);
    assert_eq!(again.list_notes(&user("alice")).await.unwrap().len(), 1);
}

#[tokio::test]
async fn database_placement_follows_the_config() {
    let root = tempfile::tempdir().unwrap();
    let check = |db_path: &'static str, expected: std::path::PathBuf| {
        let root = root.path().to_owned();
        async move {
            let store = MemoryStore::open(
                memory::Target::Config {
                    config: &hash_config(db_path),
                    user_root: &root,
                },
                no_legacy(),
            )
            .await
            .unwrap();
            common::save_note(&store, &user("alice"), "placed").await;
            assert!(expected.is_file(), "{db_path} → {}", expected.display());
        }
    };
    check("auto", root.path().join(".oxydra/memory.db")).await;
    check("data/mem.db", root.path().join("data/mem.db")).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let absolute = elsewhere.path().join("abs.db");
    let leaked: &'static str = Box::leak(absolute.to_string_lossy().into_owned().into_boxed_str());
    check(leaked, absolute.clone()).await;
}

#[tokio::test]
async fn a_legacy_database_in_the_working_directory_is_moved_once() {
    let cwd = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let legacy = cwd.path().join(".oxydra/memory.db");
    let alice = user("alice");
    let old = MemoryStore::open(
        memory::Target::File(&legacy),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(common::DIMS))),
    )
    .await
    .unwrap();
    let note = common::save_note(&old, &alice, "Saved by an older version.").await;
    drop(old);

    let options = || OpenOptions {
        legacy_dir: LegacyDir::Dir(cwd.path().to_owned()),
        ..OpenOptions::default()
    };
    let store = MemoryStore::open(
        memory::Target::Config {
            config: &hash_config("auto"),
            user_root: root.path(),
        },
        options(),
    )
    .await
    .unwrap();
    assert_eq!(
        store.get(&alice, &note.note_id).await.unwrap().content,
        note.content
    );
    assert!(!legacy.exists(), "the old file is gone");
    assert!(root.path().join(".oxydra/memory.db").is_file());
    drop(store);

    // A new legacy file does not replace an existing database.
    std::fs::write(&legacy, b"not a database").unwrap();
    let store = MemoryStore::open(
        memory::Target::Config {
            config: &hash_config("auto"),
            user_root: root.path(),
        },
        options(),
    )
    .await
    .unwrap();
    assert_eq!(store.list_notes(&alice).await.unwrap().len(), 1);
    assert!(legacy.exists());
    // An explicit db_path never adopts a legacy file.
    let other = MemoryStore::open(
        memory::Target::Config {
            config: &hash_config("explicit.db"),
            user_root: root.path(),
        },
        options(),
    )
    .await
    .unwrap();
    assert!(other.list_notes(&alice).await.unwrap().is_empty());
}

#[tokio::test]
async fn remote_mode_without_its_token_fails_clearly() {
    let root = tempfile::tempdir().unwrap();
    let config = MemoryConfig {
        remote_url: Some("libsql://memory.example.invalid".into()),
        auth_token_env: Some("OXYDRA_TEST_TOKEN_THAT_IS_NEVER_SET".into()),
        ..hash_config("auto")
    };
    let err = MemoryStore::open(
        memory::Target::Config {
            config: &config,
            user_root: root.path(),
        },
        no_legacy(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, MemoryError::MissingAuthToken { .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "remote memory needs an auth token: set the environment variable OXYDRA_TEST_TOKEN_THAT_IS_NEVER_SET"
    );
    assert!(
        !root.path().join(".oxydra").exists(),
        "no local file is created in remote mode"
    );
}

#[tokio::test]
async fn a_model_change_re_embeds_everything_and_never_mixes_models() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let alice = user("alice");
    let small = MemoryStore::open(
        memory::Target::File(&path),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(64))),
    )
    .await
    .unwrap();
    for text in [
        "Alice plays the cello.",
        "Alice's sister lives in Porto.",
        "Alice runs on Sundays.",
    ] {
        common::save_note(&small, &alice, text).await;
    }
    let chat = SessionId::parse("chat-1").unwrap();
    small
        .sessions()
        .append_message(
            &chat,
            &alice,
            &Message::user("What should I practise on the cello?"),
        )
        .await
        .unwrap();
    drop(small);

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let progress: memory::ProgressFn =
        Box::new(move |done, total| sink.lock().unwrap().push((done, total)));
    let big = MemoryStore::open(
        memory::Target::File(&path),
        memory::OpenOptions {
            progress: Some(progress),
            ..memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(128)))
        },
    )
    .await
    .unwrap();
    assert_eq!(seen.lock().unwrap().last(), Some(&(4, 4)));
    let raw = Raw::open(&path).await;
    let models = raw
        .strings("SELECT DISTINCT model_id || '/' || dims FROM chunk_vectors")
        .await;
    assert_eq!(models, ["hash-v1-128/128"]);
    assert_eq!(
        raw.strings("SELECT value FROM store_meta WHERE key = 'embedding_model_id'")
            .await,
        ["hash-v1-128"]
    );
    let stats = big.upkeep().stats().await.unwrap();
    assert_eq!(
        (stats.chunks, stats.vectors, stats.indexed_vectors),
        (4, 4, 4)
    );
    assert_eq!(stats.model_id, "hash-v1-128");
    let vector_only = HybridQuery {
        weights: memory::Weights {
            vector: 1.0,
            fts: 0.0,
        },
        ..HybridQuery::new(
            vec![SessionId::user_memory(&alice), chat.clone()],
            "cello",
            2,
        )
    };
    let hits = big.search(&vector_only).await.unwrap();
    assert!(
        hits.iter().any(|h| h.text == "Alice plays the cello."),
        "{hits:?}"
    );

    // Reopening with the same model re-embeds nothing; the explicit reindex does everything.
    drop(big);
    let seen_again = Arc::new(Mutex::new(Vec::new()));
    let sink = seen_again.clone();
    let progress: memory::ProgressFn = Box::new(move |d, t| sink.lock().unwrap().push((d, t)));
    let same = MemoryStore::open(
        memory::Target::File(&path),
        memory::OpenOptions {
            progress: Some(progress),
            ..memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(128)))
        },
    )
    .await
    .unwrap();
    assert!(seen_again.lock().unwrap().is_empty());
    let mut calls = 0;
    assert_eq!(same.upkeep().reindex(|_, _| calls += 1).await.unwrap(), 4);
    assert!(calls >= 1);
    assert_eq!(same.upkeep().stats().await.unwrap().indexed_vectors, 4);
}
