//! A vector scan too large to run inline, on a multi-threaded runtime as the gateway runs one: it
//! runs in place on the searching thread (`MemoryStore::vector_leg`), the keyword leg after it.
//! The hits must be exactly those of the same search where the scan runs on the blocking pool (a
//! current-thread runtime, the keyword leg meanwhile) — both legs fused, on either path.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::sync::Arc;

use chrono::{Duration, Utc};
use memory::{
    ExportedNote, HashEmbedder, HybridQuery, MemoryStore, NoteMetadata, OpenOptions, SearchHit,
    Similar, Target, Weights,
};
use types::{NoteId, SessionId};

use crate::common::user;

/// 4,096 dimensions × 1,100 notes: more components than a search scans inline (4 Mi).
const DIMS: usize = 4096;
const NOTES: usize = 1100;
const RARE: usize = 517;

fn ranked(hits: &[SearchHit]) -> Vec<(String, u64)> {
    hits.iter()
        .map(|h| (h.text.clone(), h.score.to_bits()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_scan_in_place_finds_what_the_blocking_pool_finds_with_both_legs() {
    let dir = tempfile::tempdir().unwrap();
    let options = OpenOptions::with_embedder(Arc::new(HashEmbedder::new(DIMS)));
    let store = MemoryStore::open(Target::File(&dir.path().join("memory.db")), options)
        .await
        .unwrap();
    let alice = user("alice");
    let base = Utc::now() - Duration::days(30);
    let notes: Vec<ExportedNote> = (0..NOTES)
        .map(|i| {
            let at = base + Duration::minutes(i as i64);
            let topic = ["harbour", "weather", "garden", "bicycle", "kitchen"][i % 5];
            // One note shares a rare word with the query and little else: the keyword leg's.
            let content = match i {
                RARE => "a quokka jamboree under violet lanterns".to_owned(),
                _ => format!("note {i}: the {topic} log says {} things", i % 7),
            };
            ExportedNote {
                note_id: NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string()).unwrap(),
                content,
                metadata: NoteMetadata::default(),
                created_at: at,
                updated_at: at,
            }
        })
        .collect();
    let report = store
        .import(&alice, None, notes, Similar::Unchecked, None)
        .await
        .unwrap();
    assert_eq!(report.imported, NOTES);

    let query = |weights| HybridQuery {
        weights,
        ..HybridQuery::new(
            vec![SessionId::user_memory(&alice)],
            "what does the garden log say about the quokka",
            10,
        )
    };
    // Keywords weighed as much as the vectors, so that the rare word decides.
    let hybrid = query(Weights {
        vector: 0.5,
        fts: 0.5,
    });
    let beside = store.search(&hybrid).await.unwrap();
    assert_eq!(beside.len(), 10);
    // The same search with the scan on the blocking pool and the keyword leg on the caller.
    let other = store.clone();
    let asked = hybrid.clone();
    let one_after = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(other.search(&asked)).unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(ranked(&beside), ranked(&one_after));
    // And the keyword leg took part: the note only it finds is among the hits.
    let vector_only = store
        .search(&query(Weights {
            vector: 1.0,
            fts: 0.0,
        }))
        .await
        .unwrap();
    let rare = |hits: &[SearchHit]| hits.iter().any(|h| h.text.contains("quokka"));
    assert!(rare(&beside), "{beside:?}");
    assert!(!rare(&vector_only), "{vector_only:?}");
}
