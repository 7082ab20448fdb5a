//! Opening from the index snapshot (`<store>.index`): the same answers as a rebuild from every
//! row, whatever was written after the snapshot and by whom; a damaged, truncated, replaced or
//! unmatched snapshot is rebuilt, never trusted — whichever of its sections is damaged, of another
//! version or byte order, or another store's file; an encrypted store writes none.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::{Path, PathBuf};

use memory::{Category, Embedder, HashEmbedder, HybridQuery, MemoryStore, MetadataPatch, Weights};
use memory_index::flat::{BYTE_ORDER, Record, SectionWriter};
use types::{NoteId, SessionId};

use crate::common::{Backend, DIMS, Fixture, fixture, fixture_on, user};

const QUERIES: &[&str] = &[
    "tea in the morning",
    "flight to Lisbon",
    "birthday party",
    "python code",
    "window seats",
    "note 17",
    "coffee at night",
];

fn snapshot_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".index");
    PathBuf::from(name)
}

/// Texts and scores of each query, by each leg alone and fused.
async fn answers(store: &MemoryStore) -> Vec<Vec<(String, String)>> {
    let mut out = Vec::new();
    for query in QUERIES {
        for (vector, fts) in [(1.0, 0.0), (0.0, 1.0), (0.5, 0.5)] {
            let mut q = HybridQuery::new(vec![SessionId::user_memory(&user("alice"))], *query, 8);
            q.weights = Weights { vector, fts };
            let hits = store.search(&q).await.unwrap();
            out.push(
                hits.into_iter()
                    .map(|h| (h.text, format!("{:.5}", h.score)))
                    .collect(),
            );
        }
    }
    let stats = store.upkeep().stats().await.unwrap();
    assert_eq!(stats.indexed_vectors, stats.vectors, "{stats:?}");
    out
}

async fn save(store: &MemoryStore, text: &str) -> NoteId {
    crate::common::save_note(store, &user("alice"), text)
        .await
        .note_id
}

async fn token(f: &Fixture) -> Option<String> {
    f.raw()
        .await
        .strings("SELECT value FROM store_meta WHERE key = 'index_snapshot'")
        .await
        .into_iter()
        .next()
}

/// Notes of every kind, a snapshot of them, then more writes by this store and by another.
async fn written_around_a_snapshot(f: &Fixture) -> Vec<NoteId> {
    let mut ids = Vec::new();
    for i in 0..40 {
        ids.push(
            save(
                &f.store,
                &format!("note {i}: tea in the morning, flight {i} to Lisbon"),
            )
            .await,
        );
    }
    ids.push(save(&f.store, "Prefers window seats on trains").await);
    let patch = MetadataPatch {
        category: Some(Category::Preference),
        tags: Some(vec!["travel".to_owned()]),
        ..MetadataPatch::default()
    };
    let text = "note 3: tea in the morning, flight 3 to Lisbon, aisle seat";
    f.store
        .update(&user("alice"), None, &ids[3], text, None, patch)
        .await
        .unwrap();
    f.store.upkeep().write_index_snapshot().await;
    assert!(snapshot_of(&f.path).exists());
    // After the snapshot: this store saves and deletes, another store (as the CLI would) saves,
    // rewrites and deletes.
    ids.push(save(&f.store, "Birthday party on the ninth of May").await);
    f.store.delete(&user("alice"), None, &ids[0]).await.unwrap();
    let other = f.reopen().await;
    save(&other, "Writes Python code for the payments team").await;
    other.delete(&user("alice"), None, &ids[5]).await.unwrap();
    other
        .update(
            &user("alice"),
            None,
            &ids[7],
            "note 7: coffee at night, train to Porto",
            None,
            MetadataPatch::default(),
        )
        .await
        .unwrap();
    other.close().await;
    ids
}

/// A store opened again after the snapshot file is removed: the rebuild to compare with (it
/// writes a new snapshot).
async fn rebuilt(f: &Fixture) -> Vec<Vec<(String, String)>> {
    std::fs::remove_file(snapshot_of(&f.path)).unwrap();
    let store = f.reopen().await;
    let expected = answers(&store).await;
    store.close().await;
    assert!(snapshot_of(&f.path).exists());
    expected
}

#[tokio::test]
async fn an_open_from_the_snapshot_answers_as_a_rebuild_with_later_writes_applied() {
    let f = fixture().await;
    written_around_a_snapshot(&f).await;
    let written = token(&f).await.expect("a snapshot token");
    let from_snapshot = f.reopen().await;
    assert_eq!(
        token(&f).await.as_ref(),
        Some(&written),
        "loaded, not rebuilt"
    );
    let got = answers(&from_snapshot).await;
    assert!(
        got.iter()
            .flatten()
            .any(|(t, _)| t.starts_with("Writes Python")),
        "{got:?}"
    );
    assert!(
        !got.iter().flatten().any(|(t, _)| t.starts_with("note 5:")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .flatten()
            .any(|(t, _)| t.starts_with("note 7: coffee")),
        "{got:?}"
    );
    from_snapshot.close().await;
    assert_eq!(got, rebuilt(&f).await);
}

#[tokio::test]
async fn a_damaged_truncated_replaced_or_unmatched_snapshot_is_rebuilt() {
    let f = fixture().await;
    written_around_a_snapshot(&f).await;
    let expected = rebuilt(&f).await;
    let snapshot = snapshot_of(&f.path);
    type Damage = fn(&[u8]) -> Vec<u8>;
    let cases: [(&str, Damage); 5] = [
        ("a flipped byte", |b| {
            let mut v = b.to_vec();
            let middle = v.len() / 2;
            v[middle] ^= 0x20;
            v
        }),
        ("truncated", |b| b[..b.len() - 9].to_vec()),
        ("a few bytes", |b| b[..5].to_vec()),
        ("empty", |_| Vec::new()),
        ("trailing bytes", |b| [b, &[0]].concat()),
    ];
    for (what, damage) in cases {
        // The current file (each rebuild writes one) is trusted as it is...
        let current = std::fs::read(&snapshot).unwrap();
        let before = token(&f).await;
        let store = f.reopen().await;
        assert_eq!(
            token(&f).await,
            before,
            "{what}: an intact snapshot is loaded"
        );
        store.close().await;
        // ... and rebuilt once damaged.
        let bytes = damage(&current);
        std::fs::write(&snapshot, &bytes).unwrap();
        let store = f.reopen().await;
        assert_ne!(token(&f).await, before, "{what}: rebuilt and written again");
        assert_eq!(answers(&store).await, expected, "{what}");
        store.close().await;
        assert_ne!(
            std::fs::read(&snapshot).unwrap(),
            bytes,
            "{what}: written again"
        );
    }
    // A snapshot from before the last one: its token is no longer the store's.
    let older = std::fs::read(&snapshot).unwrap();
    f.store.upkeep().write_index_snapshot().await;
    std::fs::write(&snapshot, &older).unwrap();
    let before = token(&f).await;
    let store = f.reopen().await;
    assert_ne!(token(&f).await, before, "an older snapshot is rebuilt");
    assert_eq!(answers(&store).await, expected, "an older snapshot");
    store.close().await;
    // The log pruned past the snapshot: the changes in between are lost to it.
    f.store.upkeep().write_index_snapshot().await;
    save(&f.store, "One more note after the snapshot").await;
    save(&f.store, "And another one after the snapshot").await;
    let raw = f.raw().await;
    raw.conn
        .execute(
            "DELETE FROM index_changes WHERE seq < (SELECT max(seq) FROM index_changes)",
            (),
        )
        .await
        .unwrap();
    let before = token(&f).await;
    let store = f.reopen().await;
    assert_ne!(token(&f).await, before, "rebuilt after the log was pruned");
    let found = answers(&store).await;
    store.close().await;
    assert_eq!(found, rebuilt(&f).await);
}

/// Where each section of a snapshot starts and ends (length, payload, CRC).
fn sections(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        out.push(at..at + 8 + len + 4);
        at += 8 + len + 4;
    }
    assert_eq!(at, bytes.len());
    out
}

/// The snapshot with its header section replaced by one of these fields (its CRC right).
fn with_header(bytes: &[u8], magic: &str, order: u32, token: &str) -> Vec<u8> {
    let first = sections(bytes)[0].clone();
    let mut out = Vec::new();
    Record::default()
        .text(magic)
        .u64(u64::from(order))
        .text(HashEmbedder::new(DIMS).model_id())
        .u64(DIMS as u64)
        .u64(0)
        .text(token)
        .write(&mut SectionWriter::new(&mut out))
        .unwrap();
    out.extend_from_slice(&bytes[first.end..]);
    out
}

/// Opens with `bytes` as the snapshot: it must be rebuilt (a new token), answer as `expected`,
/// and be written again.
async fn rebuilt_from(f: &Fixture, what: &str, bytes: &[u8], expected: &[Vec<(String, String)>]) {
    let snapshot = snapshot_of(&f.path);
    std::fs::write(&snapshot, bytes).unwrap();
    let before = token(f).await;
    let store = f.reopen().await;
    assert_ne!(token(f).await, before, "{what}: rebuilt and written again");
    assert_eq!(answers(&store).await, expected, "{what}");
    store.close().await;
    assert_ne!(
        std::fs::read(&snapshot).unwrap(),
        bytes,
        "{what}: written again"
    );
}

#[tokio::test]
async fn a_flip_in_any_section_another_version_or_another_stores_file_is_rebuilt() {
    let f = fixture().await;
    written_around_a_snapshot(&f).await;
    let expected = rebuilt(&f).await;
    let snapshot = snapshot_of(&f.path);
    let current = std::fs::read(&snapshot).unwrap();
    let ranges = sections(&current);
    assert!(ranges.len() > 20, "{} sections", ranges.len());
    // A header rewritten with the same fields is trusted (the tests below change one field).
    let token_now = token(&f).await.unwrap();
    let same = with_header(&current, "OXYIDX07", BYTE_ORDER, &token_now);
    std::fs::write(&snapshot, &same).unwrap();
    let store = f.reopen().await;
    assert_eq!(
        token(&f).await.as_ref(),
        Some(&token_now),
        "an intact header"
    );
    store.close().await;
    for (name, bytes) in [
        (
            "another version",
            with_header(&current, "OXYIDX06", BYTE_ORDER, &token_now),
        ),
        (
            "the other byte order",
            with_header(&current, "OXYIDX07", BYTE_ORDER.swap_bytes(), &token_now),
        ),
        (
            "stored text's terms with the names it addresses",
            with_header(&current, "OXYIDX05", BYTE_ORDER, &token_now),
        ),
        (
            "the first pass's shares measured by the plain Hamming distance",
            with_header(&current, "OXYIDX04", BYTE_ORDER, &token_now),
        ),
        (
            "the layout before the pooled keyword lists",
            with_header(&current, "OXYIDX03", BYTE_ORDER, &token_now),
        ),
        (
            "the layout before one dictionary for all sessions",
            with_header(&current, "OXYIDX02", BYTE_ORDER, &token_now),
        ),
        (
            "the first version",
            [b"OXYIDX01".as_slice(), &current[8..]].concat(),
        ),
    ] {
        rebuilt_from(&f, name, &bytes, &expected).await;
    }
    // A byte flipped in each section (its length, its payload or its CRC) in turn.
    for i in 0..ranges.len() {
        let mut bytes = std::fs::read(&snapshot).unwrap();
        let range = sections(&bytes)[i].clone();
        let at = match i % 3 {
            0 => range.start + 1,
            1 => range.start + (range.end - range.start) / 2,
            _ => range.end - 1,
        };
        bytes[at] ^= 0x04;
        rebuilt_from(&f, &format!("section {i}, byte {at}"), &bytes, &expected).await;
    }
    // Another store's snapshot, current and intact, in this store's place.
    let other = fixture().await;
    save(&other.store, "Prefers window seats on trains").await;
    other.store.upkeep().write_index_snapshot().await;
    let theirs = std::fs::read(snapshot_of(&other.path)).unwrap();
    rebuilt_from(&f, "another store's file", &theirs, &expected).await;
}

#[tokio::test]
async fn a_chunk_that_lost_its_vector_is_embedded_again_at_open() {
    let f = fixture().await;
    written_around_a_snapshot(&f).await;
    let expected = rebuilt(&f).await;
    let raw = f.raw().await;
    raw.conn
        .execute(
            "DELETE FROM chunk_vectors WHERE chunk_id = (SELECT max(chunk_id) FROM chunks)",
            (),
        )
        .await
        .unwrap();
    drop(raw);
    // The snapshot and the log agree on one row fewer than there are chunks: the open looks for
    // the chunk without a vector, embeds it and answers as before.
    let store = f.reopen().await;
    let stats = store.upkeep().stats().await.unwrap();
    assert_eq!(
        (stats.vectors, stats.indexed_vectors),
        (stats.chunks, stats.chunks),
        "{stats:?}"
    );
    assert_eq!(answers(&store).await, expected);
    store.close().await;
}

#[tokio::test]
async fn an_encrypted_store_writes_no_snapshot() {
    let f = fixture_on(Backend::Encrypted).await;
    save(&f.store, "The vault code is in the blue folder").await;
    f.store.upkeep().write_index_snapshot().await;
    let store = f.reopen().await;
    assert!(!snapshot_of(&f.path).exists());
    let entries: Vec<String> = std::fs::read_dir(f.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(entries.iter().all(|e| !e.contains("index")), "{entries:?}");
    store.close().await;
}
