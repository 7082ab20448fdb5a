//! Organised notes: categories, tags, expiry, filtered search in both legs, paged listing, and the
//! sweeper, on real database files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::collections::{BTreeSet, HashSet};

use chrono::{Duration, Utc};
use common::{Raw, fixture, user};
use memory::{
    Category, HybridQuery, ListQuery, MemoryStore, MetadataPatch, NoteMetadata, QueryFilters,
    Weights,
};
use types::{SessionId, UserId};

const LEGS: [Weights; 2] = [
    Weights {
        vector: 0.0,
        fts: 1.0,
    },
    Weights {
        vector: 1.0,
        fts: 0.0,
    },
];

fn meta(category: Option<Category>, tags: &[&str]) -> NoteMetadata {
    NoteMetadata {
        category,
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        ..NoteMetadata::default()
    }
}

async fn found(
    store: &MemoryStore,
    who: &UserId,
    text: &str,
    filters: QueryFilters,
) -> Vec<BTreeSet<String>> {
    let mut out = Vec::new();
    for weights in LEGS {
        let q = HybridQuery {
            weights,
            filters: filters.clone(),
            ..HybridQuery::new(vec![SessionId::user_memory(who)], text, 10)
        };
        let hits = store.search(&q).await.unwrap();
        out.push(hits.into_iter().map(|h| h.text).collect());
    }
    out
}

fn both(texts: &[&str]) -> Vec<BTreeSet<String>> {
    let set: BTreeSet<String> = texts.iter().map(|t| (*t).to_owned()).collect();
    vec![set.clone(), set]
}

#[tokio::test]
async fn category_and_tag_filters_apply_in_both_legs_and_never_cross_users() {
    let f = fixture().await;
    let (alice, bob) = (user("alice"), user("bob"));
    let s = &f.store;
    s.save(
        &alice,
        None,
        "API endpoint is example v1",
        meta(Some(Category::Fact), &["api", "work"]),
        memory::Similar::Unchecked,
    )
    .await
    .and_then(memory::Saved::into_note)
    .unwrap();
    s.save(
        &alice,
        None,
        "API users prefer examples",
        meta(Some(Category::Preference), &["api"]),
        memory::Similar::Unchecked,
    )
    .await
    .and_then(memory::Saved::into_note)
    .unwrap();
    s.save(
        &alice,
        None,
        "API calls fail on Mondays",
        meta(Some(Category::Pattern), &["work"]),
        memory::Similar::Unchecked,
    )
    .await
    .and_then(memory::Saved::into_note)
    .unwrap();
    s.save(
        &bob,
        None,
        "API token for bob",
        meta(Some(Category::Fact), &["api", "work"]),
        memory::Similar::Unchecked,
    )
    .await
    .and_then(memory::Saved::into_note)
    .unwrap();

    let by_category = QueryFilters {
        category: Some(Category::Fact),
        ..QueryFilters::default()
    };
    assert_eq!(
        found(s, &alice, "API", by_category.clone()).await,
        both(&["API endpoint is example v1"])
    );
    assert_eq!(
        found(s, &bob, "API", by_category).await,
        both(&["API token for bob"])
    );
    let all_tags = QueryFilters {
        tags_all: vec!["api".into(), "work".into()],
        ..QueryFilters::default()
    };
    assert_eq!(
        found(s, &alice, "API", all_tags).await,
        both(&["API endpoint is example v1"])
    );
    let any_tag = QueryFilters {
        tags_any: vec!["work".into()],
        category: Some(Category::Pattern),
        ..QueryFilters::default()
    };
    assert_eq!(
        found(s, &alice, "API", any_tag).await,
        both(&["API calls fail on Mondays"])
    );

    // Listing by category is per user too.
    let page = s
        .list(
            &bob,
            &ListQuery {
                category: Some(Category::Fact),
                limit: 10,
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.notes[0].content, "API token for bob");
}

#[tokio::test]
async fn paging_with_inserts_between_pages_has_no_duplicates_and_no_gaps() {
    let f = fixture().await;
    let alice = user("alice");
    let mut before = HashSet::new();
    for i in 0..23 {
        let n = f
            .store
            .save(
                &alice,
                None,
                &format!("note number {i}"),
                meta(Some(Category::Fact), &[]),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)
            .unwrap();
        before.insert(n.note_id.to_string());
    }
    let mut seen = Vec::new();
    let mut query = ListQuery {
        category: Some(Category::Fact),
        limit: 5,
        ..ListQuery::default()
    };
    let mut pages = 0;
    loop {
        let page = f.store.list(&alice, &query).await.unwrap();
        if pages == 0 {
            assert_eq!(page.total, 23);
        }
        pages += 1;
        let times: Vec<_> = page.notes.iter().map(|n| n.created_at).collect();
        assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
        seen.extend(page.notes.iter().map(|n| n.note_id.to_string()));
        // Someone saves a note between every two pages.
        f.store
            .save(
                &alice,
                None,
                &format!("inserted after page {pages}"),
                meta(Some(Category::Fact), &[]),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)
            .unwrap();
        match page.next_cursor {
            Some(c) => query.cursor = Some(c),
            None => break,
        }
    }
    let unique: HashSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates");
    assert_eq!(
        unique, before,
        "every note that existed at the first page, and only those"
    );
    assert_eq!(pages, 5);
    let bad = ListQuery {
        cursor: Some("nonsense".into()),
        ..ListQuery::default()
    };
    assert!(f.store.list(&alice, &bad).await.is_err());
}

#[tokio::test]
async fn expired_notes_are_never_returned_and_the_sweeper_deletes_them_whole() {
    let f = fixture().await;
    let alice = user("alice");
    let raw = Raw::open(&f.path).await;
    let expired = NoteMetadata {
        expires_at: Some(Utc::now() - Duration::seconds(1)),
        ..meta(Some(Category::Fact), &["trip"])
    };
    let later = NoteMetadata {
        expires_at: Some(Utc::now() + Duration::days(1)),
        ..meta(Some(Category::Fact), &["trip"])
    };
    let gone = f
        .store
        .save(
            &alice,
            None,
            "Alice is in Kyoto until Friday",
            expired,
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    let kept = f
        .store
        .save(
            &alice,
            None,
            "Alice is in Kyoto next month",
            later,
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();

    for filters in [
        QueryFilters::default(),
        QueryFilters {
            tags_any: vec!["trip".into()],
            ..QueryFilters::default()
        },
    ] {
        assert_eq!(
            found(&f.store, &alice, "Kyoto", filters).await,
            both(&["Alice is in Kyoto next month"])
        );
    }
    assert!(f.store.get(&alice, &gone.note_id).await.is_err());
    assert_eq!(
        f.store
            .get(&alice, &kept.note_id)
            .await
            .unwrap()
            .metadata
            .expires_at,
        kept.metadata.expires_at
    );
    let listed: Vec<_> = f
        .store
        .list_notes(&alice)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.note_id)
        .collect();
    assert_eq!(listed, vec![kept.note_id.clone()]);
    let page = f
        .store
        .list(
            &alice,
            &ListQuery {
                limit: 10,
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((page.total, page.notes.len()), (1, 1));
    let expired_list = f.store.upkeep().list_expired(&alice).await.unwrap();
    assert_eq!(expired_list.len(), 1);
    assert_eq!(expired_list[0].note_id, gone.note_id);

    let swept = f.store.upkeep().sweep_expired().await.unwrap();
    assert_eq!(swept, vec![gone.note_id.clone()]);
    let id = gone.note_id.to_string();
    assert_eq!(
        raw.count(
            "SELECT count(*) FROM notes WHERE note_id = ?1",
            [id.as_str()]
        )
        .await,
        0
    );
    assert_eq!(
        raw.count(
            "SELECT count(*) FROM chunks WHERE note_id = ?1",
            [id.as_str()]
        )
        .await,
        0
    );
    assert_eq!(
        raw.count(
            "SELECT count(*) FROM events WHERE note_id = ?1",
            [id.as_str()]
        )
        .await,
        0
    );
    assert_eq!(raw.chunks_holding("friday").await, 0);
    assert!(f.store.upkeep().sweep_expired().await.unwrap().is_empty());
    assert!(
        f.store
            .upkeep()
            .list_expired(&alice)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn updates_change_category_tags_and_expiry_and_keep_the_rest() {
    let f = fixture().await;
    let alice = user("alice");
    let note = f
        .store
        .save(
            &alice,
            None,
            "Alice drinks oolong",
            NoteMetadata {
                context: Some("said at breakfast".into()),
                confidence: Some(0.5),
                ..meta(Some(Category::Fact), &["tea"])
            },
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    let version = memory::edit_token(&note.content);
    let patch = MetadataPatch {
        category: Some(Category::Preference),
        tags: Some(vec!["drinks".into()]),
        ..MetadataPatch::default()
    };
    f.store
        .update(
            &alice,
            None,
            &note.note_id,
            "Alice prefers oolong",
            Some(&version),
            patch,
        )
        .await
        .map(|written| written.receipt)
        .unwrap();
    let now = f.store.get(&alice, &note.note_id).await.unwrap();
    assert_eq!(now.metadata.category, Some(Category::Preference));
    assert_eq!(now.metadata.tags, vec!["drinks".to_owned()]);
    assert_eq!(now.metadata.context.as_deref(), Some("said at breakfast"));
    assert_eq!(now.metadata.confidence, Some(0.5));
    let prefs = QueryFilters {
        category: Some(Category::Preference),
        tags_any: vec!["drinks".into()],
        ..QueryFilters::default()
    };
    assert_eq!(
        found(&f.store, &alice, "oolong", prefs).await,
        both(&["Alice prefers oolong"])
    );
    let facts = QueryFilters {
        category: Some(Category::Fact),
        ..QueryFilters::default()
    };
    assert_eq!(found(&f.store, &alice, "oolong", facts).await, both(&[]));

    // Expire it by update: hidden at once.
    let version = memory::edit_token(&now.content);
    let patch = MetadataPatch {
        expires_at: Some(Some(Utc::now() - Duration::seconds(1))),
        ..MetadataPatch::default()
    };
    f.store
        .update(
            &alice,
            None,
            &note.note_id,
            "Alice prefers oolong",
            Some(&version),
            patch,
        )
        .await
        .map(|written| written.receipt)
        .unwrap();
    assert_eq!(
        found(&f.store, &alice, "oolong", QueryFilters::default()).await,
        both(&[])
    );
    // Invalid metadata is refused, and nothing is written.
    let bad = NoteMetadata {
        confidence: Some(2.0),
        ..NoteMetadata::default()
    };
    assert!(
        f.store
            .save(&alice, None, "x", bad, memory::Similar::Unchecked)
            .await
            .and_then(memory::Saved::into_note)
            .is_err()
    );
    assert!(f.store.list_notes(&alice).await.unwrap().is_empty());
}

#[tokio::test]
async fn import_keeps_metadata_and_refuses_invalid_metadata_before_writing() {
    let f = fixture().await;
    let (alice, bob) = (user("alice"), user("bob"));
    let note = f
        .store
        .save(
            &alice,
            None,
            "Alice's API key rotates monthly",
            NoteMetadata {
                context: Some("ops".into()),
                confidence: Some(0.7),
                ..meta(Some(Category::Capability), &["ops"])
            },
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    let exported = f.store.export_notes(&alice).await.unwrap();
    assert_eq!(
        f.store
            .import(
                &bob,
                None,
                exported.clone(),
                memory::Similar::Unchecked,
                None
            )
            .await
            .map(|report| report.imported)
            .unwrap(),
        0,
        "same ids skipped"
    );
    let f2 = fixture().await;
    assert_eq!(
        f2.store
            .import(
                &bob,
                None,
                exported.clone(),
                memory::Similar::Unchecked,
                None
            )
            .await
            .map(|report| report.imported)
            .unwrap(),
        1
    );
    let copied = f2.store.get(&bob, &note.note_id).await.unwrap();
    assert_eq!(copied.metadata, note.metadata);
    let by_category = ListQuery {
        category: Some(Category::Capability),
        limit: 5,
        ..ListQuery::default()
    };
    assert_eq!(f2.store.list(&bob, &by_category).await.unwrap().total, 1);

    let mut bad = exported;
    bad[0].note_id = types::NoteId::from_uuid_str(&uuid_like()).unwrap();
    bad[0].metadata.confidence = Some(2.0);
    assert!(
        f2.store
            .import(&bob, None, bad, memory::Similar::Unchecked, None)
            .await
            .map(|report| report.imported)
            .is_err()
    );
    assert_eq!(f2.store.list_notes(&bob).await.unwrap().len(), 1);
}

fn uuid_like() -> String {
    "3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f".to_owned()
}
