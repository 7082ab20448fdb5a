//! How many HTTP requests a search costs a remote store, counted by a proxy between the store and a
//! real `sqld`: one (the change log's head, the best chunks' details and their notes' texts in one
//! batch), a few more when another client wrote since — and the same hits when a server sends
//! batches back without their rows, read then statement by statement. A checked save (the
//! `memory_save` tool's) reads what it needs before writing in one request too.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::proxy::Clients;
use common::user;
use memory::{
    CallKey, HybridQuery, ListQuery, MemoryStore, NoteMetadata, SaveOutcome, SearchHit, Similar,
};
use test_support::{Need, need};
use types::{NoteId, SessionId, UserId};

const KEY: &str = "The greenhouse key hangs behind the shed door, on the left hook.";

/// Saves the note the searches look for, tagged, and thirty others; gives back its id.
async fn fill(store: &MemoryStore, who: &UserId) -> NoteId {
    let tagged = NoteMetadata {
        tags: vec!["garden".to_owned()],
        ..NoteMetadata::default()
    };
    let kept = store.store_note(who, KEY, tagged).await.unwrap();
    for i in 0..30 {
        let text = format!("Errand {i}: pick up the parcel and water the office plants.");
        store
            .store_note(who, &text, NoteMetadata::default())
            .await
            .unwrap();
    }
    kept.note_id
}

/// The top five hits of `who`'s notes for `text`.
async fn search(store: &MemoryStore, who: &UserId, text: &str) -> Vec<SearchHit> {
    let query = HybridQuery::new(vec![SessionId::user_memory(who)], text, 5);
    store.hybrid_query(&query).await.unwrap()
}

/// The hit carries the note's whole text and metadata, as a local store's does.
fn assert_found(hits: &[SearchHit], id: &NoteId) {
    let hit = hits
        .iter()
        .find(|h| h.note_id.as_ref() == Some(id))
        .unwrap_or_else(|| panic!("{id} not among {hits:?}"));
    assert_eq!(hit.note_text.as_deref(), Some(KEY));
    assert_eq!(hit.tags, ["garden"]);
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_remote_search_is_one_request_and_sees_another_clients_writes() {
    need(Need::Sqld);
    let c = Clients::start().await;
    let alice = user("alice");
    let key = fill(&c.store, &alice).await;
    // The first search applies this store's own saves, which it learns from the change log.
    let hits = search(&c.store, &alice, "greenhouse key").await;
    assert_found(&hits, &key);

    let before = c.proxy.count();
    let hits = search(&c.store, &alice, "greenhouse key hook").await;
    assert_eq!(c.proxy.count() - before, 1, "a search");
    assert_eq!(hits.first().and_then(|h| h.note_id.as_ref()), Some(&key));
    assert_found(&hits, &key);

    // Another client saves: the next search finds the log moved on in its batch, reads the
    // change (the chunks it names, then their rows) and searches again.
    let code = "The greenhouse thermostat code is 2231.";
    let theirs = c
        .other
        .store_note(&alice, code, NoteMetadata::default())
        .await
        .unwrap();
    let before = c.proxy.count();
    let hits = search(&c.store, &alice, "greenhouse thermostat code").await;
    assert_eq!(
        c.proxy.count() - before,
        4,
        "a search after another client's save"
    );
    let hit = hits
        .iter()
        .find(|h| h.note_id.as_ref() == Some(&theirs.note_id))
        .unwrap_or_else(|| panic!("the other client's note is not among {hits:?}"));
    assert_eq!(hit.note_text.as_deref(), Some(code));

    // A note deleted by the other client is gone from the next search.
    c.other.delete_note(&alice, &theirs.note_id).await.unwrap();
    let hits = search(&c.store, &alice, "greenhouse thermostat code").await;
    assert!(
        hits.iter()
            .all(|h| h.note_id.as_ref() != Some(&theirs.note_id)),
        "{hits:?}"
    );
    assert_found(&hits, &key);
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_server_that_sends_batches_back_without_rows_is_read_statement_by_statement() {
    need(Need::Sqld);
    let c = Clients::start().await;
    let alice = user("alice");
    let key = fill(&c.store, &alice).await;
    // The batch's first statement, which always yields a row, now yields none: what a server
    // honouring libsql's `want_rows: false` on batch statements would send back for every read.
    // (libsql sends each statement of a batch re-printed, `;` ended, with `want_rows: false`.)
    let tail = r#"","sql_id":null,"args":[],"named_args":[],"want_rows":false"#;
    c.proxy.rewrite(
        &format!(r#""sql":"SELECT 1;{tail}"#),
        &format!(r#""sql":"SELECT 1 WHERE 0;{tail}"#),
    );
    let hits = search(&c.store, &alice, "greenhouse key").await;
    assert_found(&hits, &key);

    let before = c.proxy.count();
    let hits = search(&c.store, &alice, "greenhouse key hook").await;
    assert_found(&hits, &key);
    // The log's head, the details, the texts: each a described query, two requests; and the
    // reader job's stream closed, a request sent as a job ends (so one may land in the next count).
    let cost = c.proxy.count() - before;
    assert!(
        (6..=7).contains(&cost),
        "a search read statement by statement: {cost}"
    );
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_checked_save_reads_in_one_request() {
    need(Need::Sqld);
    let c = Clients::start().await;
    let alice = user("alice");
    let tea = "Alice drinks green tea every morning";
    let call = CallKey::new("chat-1", "call_1", "memory_save", "{}");
    let save = async |call: Option<&CallKey>, text: &str| {
        let before = c.proxy.count();
        let outcome = c
            .store
            .store_note_checked(&alice, call, text, NoteMetadata::default(), Similar::Refuse)
            .await
            .unwrap();
        (outcome, c.proxy.count() - before)
    };

    // The receipt, the log's head and an exact duplicate read in one request; then the save.
    let (outcome, cost) = save(Some(&call), tea).await;
    let SaveOutcome::Saved(first) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(!first.replayed);
    assert_eq!(cost, 2, "a checked save");

    // A retried call gets its receipt from the first read.
    let (outcome, cost) = save(Some(&call), tea).await;
    assert_eq!(
        outcome,
        SaveOutcome::Saved(memory::WriteReceipt {
            replayed: true,
            ..first.clone()
        })
    );
    assert_eq!(cost, 1, "a retried call");

    // The same text written differently is found by the first read too.
    let (outcome, cost) = save(None, "  alice drinks GREEN tea, every morning! ").await;
    assert_eq!(
        outcome,
        SaveOutcome::Duplicate {
            note_id: first.note_id.clone(),
            version: memory::note_version(tea),
        }
    );
    assert_eq!(cost, 1, "an exact duplicate");

    // A near-duplicate: the index must hold the first save, which it learns from the change log
    // (the chunks named, their rows), then one read of the similar notes' texts.
    let near = "Alice drinks green tea every single morning";
    let (outcome, cost) = save(None, near).await;
    let SaveOutcome::Similar(notes) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(notes.len(), 1);
    assert_eq!(
        (notes[0].note_id.clone(), notes[0].preview.as_str()),
        (first.note_id.clone(), tea)
    );
    assert_eq!(cost, 4, "a near-duplicate after a save");
    let (_, cost) = save(None, near).await;
    assert_eq!(cost, 2, "a near-duplicate");

    // Something new: one read, one save; and it reads back.
    let (outcome, cost) = save(None, "The flight to Oslo leaves at nine").await;
    let SaveOutcome::Saved(oslo) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(cost, 2, "a new note");
    let stored = c.other.get_note(&alice, &oslo.note_id).await.unwrap();
    assert_eq!(stored.content, "The flight to Oslo leaves at nine");
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn reading_a_note_or_a_page_of_notes_is_one_request() {
    need(Need::Sqld);
    let c = Clients::start().await;
    let alice = user("alice");
    let key = fill(&c.store, &alice).await;

    let before = c.proxy.count();
    let note = c.store.get_note(&alice, &key).await.unwrap();
    assert_eq!(c.proxy.count() - before, 1, "a note");
    assert_eq!(
        (note.content.as_str(), note.metadata.tags.as_slice()),
        (KEY, &["garden".to_owned()][..])
    );
    // Another user's id reads as not found, as locally.
    let err = c.store.get_note(&user("bob"), &key).await.unwrap_err();
    assert!(
        matches!(err, memory::MemoryError::NoteNotFound(_)),
        "{err:?}"
    );

    let query = ListQuery {
        category: None,
        tags_any: Vec::new(),
        limit: 20,
        cursor: None,
    };
    let before = c.proxy.count();
    let first = c.store.list_notes_page(&alice, &query).await.unwrap();
    assert_eq!(c.proxy.count() - before, 1, "a page of notes");
    assert_eq!((first.notes.len(), first.total), (20, 31));
    let rest = ListQuery {
        cursor: first.next_cursor.clone(),
        ..query
    };
    let second = c.store.list_notes_page(&alice, &rest).await.unwrap();
    assert_eq!(
        (second.notes.len(), second.total, second.next_cursor),
        (11, 31, None)
    );
    let mut ids: Vec<_> = first
        .notes
        .iter()
        .chain(&second.notes)
        .map(|n| n.note_id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 31);
    assert!(ids.contains(&key));
}
