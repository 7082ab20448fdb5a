//! Embedded replica mode against a real `sqld`: reads from the local file, writes to the
//! primary, read-your-writes, other writers' changes after a sync, and a primary that goes away
//! (reads keep working, writes fail clearly, nothing acknowledged is lost).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::sync::Arc;

use common::user;
use memory::{
    HashEmbedder, HybridQuery, MemoryError, MemoryStore, NoteMetadata, RemoteProblem, Weights,
};
use test_support::{Need, Sqld, need};
use types::SessionId;

fn embedder() -> Arc<HashEmbedder> {
    Arc::new(HashEmbedder::new(common::DIMS))
}

async fn texts_found(store: &MemoryStore, query: &str, weights: Weights) -> Vec<String> {
    let mut q = HybridQuery::new(vec![SessionId::user_memory(&user("alice"))], query, 5);
    q.weights = weights;
    store
        .search(&q)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect()
}

const VECTOR: Weights = Weights {
    vector: 1.0,
    fts: 0.0,
};
const KEYWORDS: Weights = Weights {
    vector: 0.0,
    fts: 1.0,
};

/// A server with auth, a read-write token for it, and a directory for replica files.
fn server_and_dir() -> (Sqld, String, tempfile::TempDir) {
    let server = Sqld::start_with_auth();
    let token = server.token(r#"{"a":"rw"}"#);
    (server, token, tempfile::tempdir().unwrap())
}

/// A replica of `server` in `dir`.
async fn open_in(dir: &tempfile::TempDir, server: &Sqld, token: &str) -> MemoryStore {
    MemoryStore::open(
        memory::Target::Replica {
            path: &dir.path().join("replica.db"),
            url: &server.url(),
            token,
        },
        memory::OpenOptions::with_embedder(embedder()),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs sqld"]
async fn a_replica_reads_its_own_writes_and_syncs_the_primarys() {
    need(Need::Sqld);
    let (server, token, dir) = server_and_dir();
    let alice = user("alice");
    let replica = open_in(&dir, &server, &token).await;

    // Its own write: on the primary, and readable from the replica at once.
    let note = common::save_note(&replica, &alice, "The spare key is under the blue pot").await;
    assert_eq!(replica.get(&alice, &note.note_id).await.unwrap(), note);
    assert_eq!(
        texts_found(&replica, "spare key", KEYWORDS).await,
        ["The spare key is under the blue pot"]
    );
    let primary = MemoryStore::open(
        memory::Target::Remote {
            url: &server.url(),
            token: &token,
        },
        memory::OpenOptions::with_embedder(embedder()),
    )
    .await
    .unwrap();
    assert_eq!(primary.list_notes(&alice).await.unwrap().len(), 1);

    // Another host's write reaches the replica with the next sync (or the background one).
    common::save_note(&primary, &alice, "Piano lessons are on Thursdays").await;
    replica.sync().await.unwrap();
    assert_eq!(
        texts_found(&replica, "piano lessons thursdays", VECTOR)
            .await
            .first()
            .map(String::as_str),
        Some("Piano lessons are on Thursdays")
    );
    let stats = replica.upkeep().stats().await.unwrap();
    assert_eq!((stats.notes, stats.indexed_vectors), (2, stats.vectors));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs sqld"]
async fn without_its_primary_a_replica_reads_and_refuses_writes_clearly() {
    need(Need::Sqld);
    let mut server = Sqld::start_with_auth();
    let token = server.token(r#"{"a":"rw"}"#);
    let dir = tempfile::tempdir().unwrap();
    let alice = user("alice");
    let replica = MemoryStore::open(
        memory::Target::Replica {
            path: &dir.path().join("replica.db"),
            url: &server.url(),
            token: &token,
        },
        memory::OpenOptions::with_embedder(embedder()),
    )
    .await
    .unwrap();
    let kept = common::save_note(&replica, &alice, "The wifi password is on the fridge").await;

    server.stop();
    assert_eq!(replica.get(&alice, &kept.note_id).await.unwrap(), kept);
    assert_eq!(
        texts_found(&replica, "wifi password", KEYWORDS).await,
        ["The wifi password is on the fridge"]
    );
    let err = replica
        .save(
            &alice,
            None,
            "Written while the primary is away",
            NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::Remote {
                problem: RemoteProblem::Unreachable,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.to_string().contains('\n'), "{err}");
    let err = replica.sync().await.unwrap_err();
    assert!(matches!(err, MemoryError::Remote { .. }), "{err:?}");

    // Back again: the acknowledged note is on the primary, the refused one nowhere, and the
    // replica writes again.
    server.restart();
    let primary = MemoryStore::open(
        memory::Target::Remote {
            url: &server.url(),
            token: &token,
        },
        memory::OpenOptions::with_embedder(embedder()),
    )
    .await
    .unwrap();
    let on_primary = primary.list_notes(&alice).await.unwrap();
    assert_eq!(on_primary.len(), 1);
    assert_eq!(on_primary[0].note_id, kept.note_id);
    common::save_note(&replica, &alice, "Written after the primary came back").await;
    assert_eq!(replica.list_notes(&alice).await.unwrap().len(), 2);
    assert_eq!(primary.list_notes(&alice).await.unwrap().len(), 2);
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_replica_with_a_rejected_token_fails_at_open() {
    need(Need::Sqld);
    let server = Sqld::start_with_auth();
    let dir = tempfile::tempdir().unwrap();
    let err = MemoryStore::open(
        memory::Target::Replica {
            path: &dir.path().join("replica.db"),
            url: &server.url(),
            token: "not-a-jwt",
        },
        memory::OpenOptions::with_embedder(embedder()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::Remote {
                problem: RemoteProblem::Unauthorized,
                ..
            }
        ),
        "{err:?}"
    );
}

/// A replica's readers read its file through their own connections while the primary's frames
/// are written into it: during a stream of another host's saves, synced as fast as they come,
/// every listing is whole (each listed note reads back with its text), never goes backwards, and
/// no read fails; at the end the replica has every note.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs sqld"]
async fn replica_readers_stay_consistent_while_the_primarys_frames_arrive() {
    need(Need::Sqld);
    let (server, token, dir) = server_and_dir();
    let alice = user("alice");
    let replica = open_in(&dir, &server, &token).await;
    let primary = MemoryStore::open(
        memory::Target::Remote {
            url: &server.url(),
            token: &token,
        },
        memory::OpenOptions::with_embedder(embedder()),
    )
    .await
    .unwrap();
    const NOTES: usize = 60;
    let writer = {
        let (primary, alice) = (primary.clone(), alice.clone());
        tokio::spawn(async move {
            for i in 0..NOTES {
                let text = format!("note number {i} about topic{i}");
                common::save_note(&primary, &alice, &text).await;
            }
        })
    };
    let syncer = {
        let replica = replica.clone();
        tokio::spawn(async move {
            loop {
                replica.sync().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
    };
    let (mut seen, mut partial) = (0, 0);
    while !writer.is_finished() {
        let notes = replica.list_notes(&alice).await.unwrap();
        assert!(notes.len() >= seen, "{} after {seen}", notes.len());
        seen = notes.len();
        if (1..NOTES).contains(&seen) {
            partial += 1;
        }
        for note in notes.iter().rev().take(3) {
            let again = replica.get(&alice, &note.note_id).await.unwrap();
            assert_eq!(again.content, note.content);
        }
        texts_found(&replica, "note number topic", KEYWORDS).await;
    }
    writer.await.unwrap();
    syncer.abort();
    replica.sync().await.unwrap();
    assert_eq!(replica.list_notes(&alice).await.unwrap().len(), NOTES);
    assert!(partial > 1, "the reads ran while the frames arrived");
}
