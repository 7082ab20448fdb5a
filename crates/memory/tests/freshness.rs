//! One store, fresh everywhere: writes through a second store on the same file (as the runner's
//! `memory` CLI makes them while the agent runs) are seen, ranked by their vectors, by the next
//! search of the first store, without reopening it. Each runs on a local file and on a real
//! remote server (`sqld`), where the second store stands for another host's agent or CLI: it
//! shares nothing with the first but the server.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use chrono::Utc;
use memory::{
    Category, ExportedNote, HybridQuery, MemoryStore, MetadataPatch, NoteMetadata, QueryFilters,
    Weights,
};
use types::{NoteId, SessionId};

use crate::common::{Backend, fixture_on, on_both_backends, user};

/// The note texts of a vector-only search, after checking that a keyword-only search finds the
/// same best note (both legs search in-process indexes that must follow every writer). An
/// embedded replica first pulls the primary's changes (it does so every few seconds anyway; a
/// no-op for other stores).
async fn by_vector(store: &MemoryStore, query: &str) -> Vec<String> {
    store.sync().await.unwrap();
    let by_vector = by_leg(store, query, 1.0, 0.0).await;
    let by_keyword = by_keyword(store, query).await;
    if let Some(best) = by_keyword.first() {
        assert_eq!(
            Some(best),
            by_vector.first(),
            "keyword leg {by_keyword:?}, vector leg {by_vector:?}"
        );
    }
    by_vector
}

/// The note texts of a keyword-only search (after a replica's sync, as [`by_vector`]).
async fn by_keyword(store: &MemoryStore, query: &str) -> Vec<String> {
    store.sync().await.unwrap();
    by_leg(store, query, 0.0, 1.0).await
}

async fn by_leg(store: &MemoryStore, query: &str, vector: f64, fts: f64) -> Vec<String> {
    let mut q = HybridQuery::new(vec![SessionId::user_memory(&user("alice"))], query, 5);
    q.weights = Weights { vector, fts };
    store
        .search(&q)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect()
}

async fn indexed_matches_stored(store: &MemoryStore) {
    let stats = store.upkeep().stats().await.unwrap();
    assert_eq!(stats.indexed_vectors, stats.vectors, "{stats:?}");
}

on_both_backends!(
    every_kind_of_write_by_another_store_is_seen_by_the_next_search,
    a_reader_behind_the_pruned_log_reloads_everything,
    the_log_records_every_chunk_change_in_the_writers_transaction,
    metadata_written_by_another_store_filters_the_next_vector_search,
);

async fn every_kind_of_write_by_another_store_is_seen_by_the_next_search(backend: Backend) {
    let f = fixture_on(backend).await;
    let agent = &f.store;
    let alice = user("alice");
    crate::common::save_note(agent, &alice, "Tomatoes need full sun and deep watering").await;
    assert_eq!(
        by_vector(agent, "tomatoes sun").await,
        ["Tomatoes need full sun and deep watering"]
    );

    // The "CLI": a second store on the same file, opened while the agent's is open.
    let cli = f.reopen().await;
    let saved =
        crate::common::save_note(&cli, &alice, "Favourite tram line is the number seven").await;
    let found = by_vector(agent, "favourite tram line").await;
    assert_eq!(
        by_keyword(agent, "favourite tram line").await,
        ["Favourite tram line is the number seven"]
    );
    assert_eq!(
        found.first().map(String::as_str),
        Some("Favourite tram line is the number seven"),
        "save: {found:?}"
    );
    indexed_matches_stored(agent).await;

    cli.update(
        &alice,
        None,
        &saved.note_id,
        "Favourite ferry crosses the harbour at dawn",
        None,
        memory::MetadataPatch::default(),
    )
    .await
    .and_then(memory::Written::into_note)
    .unwrap();
    let found = by_vector(agent, "ferry harbour dawn").await;
    assert_eq!(
        by_keyword(agent, "ferry harbour dawn").await,
        ["Favourite ferry crosses the harbour at dawn"]
    );
    assert_eq!(
        found.first().map(String::as_str),
        Some("Favourite ferry crosses the harbour at dawn"),
        "update: {found:?}"
    );
    indexed_matches_stored(agent).await;

    cli.delete(&alice, None, &saved.note_id)
        .await
        .map(|_| ())
        .unwrap();
    assert!(by_keyword(agent, "ferry harbour dawn").await.is_empty());
    assert_eq!(
        by_vector(agent, "ferry harbour dawn")
            .await
            .iter()
            .filter(|t| t.contains("ferry"))
            .count(),
        0
    );
    indexed_matches_stored(agent).await;

    let now = Utc::now();
    let imported = ExportedNote {
        note_id: NoteId::from_uuid_str("3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f").unwrap(),
        content: "Imported: allergic to peanuts and cashews".to_owned(),
        metadata: NoteMetadata::default(),
        created_at: now,
        updated_at: now,
    };
    cli.import(
        &alice,
        None,
        vec![imported],
        memory::Similar::Unchecked,
        None,
    )
    .await
    .map(|report| report.imported)
    .unwrap();
    let found = by_vector(agent, "peanuts cashews allergy").await;
    assert_eq!(
        by_keyword(agent, "peanuts cashews allergy").await,
        ["Imported: allergic to peanuts and cashews"]
    );
    assert_eq!(
        found.first().map(String::as_str),
        Some("Imported: allergic to peanuts and cashews"),
        "import: {found:?}"
    );
    indexed_matches_stored(agent).await;

    cli.upkeep().reindex(|_, _| {}).await.unwrap();
    let found = by_vector(agent, "peanuts cashews allergy").await;
    assert_eq!(
        by_keyword(agent, "peanuts cashews allergy").await,
        ["Imported: allergic to peanuts and cashews"]
    );
    assert_eq!(
        found.first().map(String::as_str),
        Some("Imported: allergic to peanuts and cashews"),
        "reindex: {found:?}"
    );
    indexed_matches_stored(agent).await;
}

async fn a_reader_behind_the_pruned_log_reloads_everything(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    by_vector(&f.store, "anything").await;
    let cli = f.reopen().await;
    crate::common::save_note(&cli, &alice, "Prefers window seats on trains").await;
    crate::common::save_note(&cli, &alice, "Birthday is on the ninth of May").await;
    // As if the log had been pruned past what the agent applied.
    let raw = f.raw().await;
    raw.conn
        .execute(
            "DELETE FROM index_changes WHERE seq < (SELECT max(seq) FROM index_changes)",
            (),
        )
        .await
        .unwrap();
    let found = by_vector(&f.store, "window seats trains").await;
    assert_eq!(
        by_keyword(&f.store, "window seats trains").await,
        ["Prefers window seats on trains"]
    );
    assert_eq!(
        found.first().map(String::as_str),
        Some("Prefers window seats on trains")
    );
    indexed_matches_stored(&f.store).await;
}

async fn the_log_records_every_chunk_change_in_the_writers_transaction(backend: Backend) {
    let f = fixture_on(backend).await;
    let raw = f.raw().await;
    let alice = user("alice");
    let before = raw.count("SELECT count(*) FROM index_changes", ()).await;
    let note = crate::common::save_note(&f.store, &alice, "one chunk").await;
    // The chunk and its vector.
    let after_save = raw.count("SELECT count(*) FROM index_changes", ()).await;
    assert_eq!(after_save - before, 2);
    f.store
        .delete(&alice, None, &note.note_id)
        .await
        .map(|_| ())
        .unwrap();
    // The vector (deleted first), then the chunk.
    assert_eq!(
        raw.count("SELECT count(*) FROM index_changes", ()).await - after_save,
        2
    );
}

/// The note texts of a vector-only search with `filters`.
async fn by_vector_filtered(
    store: &MemoryStore,
    query: &str,
    filters: QueryFilters,
) -> Vec<String> {
    store.sync().await.unwrap();
    let mut q = HybridQuery::new(vec![SessionId::user_memory(&user("alice"))], query, 5);
    q.weights = Weights {
        vector: 1.0,
        fts: 0.0,
    };
    q.filters = filters;
    let hits = store.search(&q).await.unwrap();
    hits.into_iter().map(|h| h.text).collect()
}

/// The vector leg filters on facets kept in the in-memory index: they must arrive with the
/// vectors through the catch-up (another store's save and metadata update) and the load at open.
async fn metadata_written_by_another_store_filters_the_next_vector_search(backend: Backend) {
    let f = fixture_on(backend).await;
    let agent = &f.store;
    let alice = user("alice");
    let category = |c| QueryFilters {
        category: Some(c),
        ..QueryFilters::default()
    };
    let tagged = |t: &str| QueryFilters {
        tags_any: vec![t.to_owned()],
        ..QueryFilters::default()
    };
    // Warm the agent's index before the other store writes.
    assert!(by_vector(agent, "oolong").await.is_empty());
    let cli = f.reopen().await;
    let text = "Alice drinks oolong tea every morning";
    let note = cli
        .save(
            &alice,
            None,
            text,
            NoteMetadata {
                category: Some(Category::Fact),
                tags: vec!["tea".into()],
                ..NoteMetadata::default()
            },
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    assert_eq!(
        by_vector_filtered(agent, "oolong tea", category(Category::Fact)).await,
        [text],
        "the other store's save, by category"
    );
    assert_eq!(
        by_vector_filtered(agent, "oolong tea", tagged("tea")).await,
        [text],
        "the other store's save, by tag"
    );
    let found = by_vector_filtered(agent, "oolong tea", category(Category::Preference)).await;
    assert!(found.is_empty(), "another category: {found:?}");

    let patch = MetadataPatch {
        category: Some(Category::Preference),
        tags: Some(vec!["drinks".into()]),
        ..MetadataPatch::default()
    };
    let version = memory::edit_token(&note.content);
    cli.update(&alice, None, &note.note_id, text, Some(&version), patch)
        .await
        .map(|written| written.receipt)
        .unwrap();
    for (which, store) in [
        ("the agent", agent),
        ("a reopened store", &f.reopen().await),
    ] {
        let found = by_vector_filtered(store, "oolong tea", category(Category::Fact)).await;
        assert!(found.is_empty(), "{which}, old category: {found:?}");
        let found = by_vector_filtered(store, "oolong tea", tagged("tea")).await;
        assert!(found.is_empty(), "{which}, old tag: {found:?}");
        assert_eq!(
            by_vector_filtered(store, "oolong tea", category(Category::Preference)).await,
            [text],
            "{which}, new category"
        );
        assert_eq!(
            by_vector_filtered(store, "oolong tea", tagged("drinks")).await,
            [text],
            "{which}, new tag"
        );
    }
}
