//! How many HTTP requests a search costs a remote store, counted by a proxy between the store and a
//! real `sqld`: one (the change log's head, the best chunks' details and their notes' texts in one
//! batch), four when another client wrote since (the batch, the changed chunks, their rows, the
//! search again) — and the same hits when a server sends batches back without their rows, read
//! then statement by statement.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::proxy::Clients;
use common::user;
use memory::{HybridQuery, MemoryStore, NoteMetadata, SearchHit, Similar};
use test_support::{Need, need};
use types::{NoteId, SessionId, UserId};

const KEY: &str = "The greenhouse key hangs behind the shed door, on the left hook.";

async fn save(store: &MemoryStore, who: &UserId, text: &str, metadata: NoteMetadata) -> NoteId {
    store
        .save(who, None, text, metadata, Similar::Unchecked)
        .await
        .and_then(memory::Saved::into_note)
        .unwrap()
        .note_id
}

/// Saves the note the searches look for, tagged, and thirty others; gives back its id.
async fn fill(store: &MemoryStore, who: &UserId) -> NoteId {
    let tagged = NoteMetadata {
        tags: vec!["garden".to_owned()],
        ..NoteMetadata::default()
    };
    let kept = save(store, who, KEY, tagged).await;
    for i in 0..30 {
        let text = format!("Errand {i}: pick up the parcel and water the office plants.");
        save(store, who, &text, NoteMetadata::default()).await;
    }
    kept
}

/// A server and its clients (see [`Clients`]), Alice's notes saved through the proxied store;
/// the id of the one the searches look for.
async fn filled() -> (Clients, UserId, NoteId) {
    let c = Clients::start().await;
    let alice = user("alice");
    let key = fill(&c.store, &alice).await;
    (c, alice, key)
}

/// The top five hits of `who`'s notes for `text`.
async fn search(store: &MemoryStore, who: &UserId, text: &str) -> Vec<SearchHit> {
    let query = HybridQuery::new(vec![SessionId::user_memory(who)], text, 5);
    store.search(&query).await.unwrap()
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
    let (c, alice, key) = filled().await;
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
    let theirs = save(&c.other, &alice, code, NoteMetadata::default()).await;
    let before = c.proxy.count();
    let hits = search(&c.store, &alice, "greenhouse thermostat code").await;
    assert_eq!(
        c.proxy.count() - before,
        4,
        "a search after another client's save"
    );
    let hit = hits
        .iter()
        .find(|h| h.note_id.as_ref() == Some(&theirs))
        .unwrap_or_else(|| panic!("the other client's note is not among {hits:?}"));
    assert_eq!(hit.note_text.as_deref(), Some(code));

    // A note deleted by the other client is gone from the next search.
    c.other.delete(&alice, None, &theirs).await.unwrap();
    let hits = search(&c.store, &alice, "greenhouse thermostat code").await;
    assert!(
        hits.iter().all(|h| h.note_id.as_ref() != Some(&theirs)),
        "{hits:?}"
    );
    assert_found(&hits, &key);
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_server_that_sends_batches_back_without_rows_is_read_statement_by_statement() {
    need(Need::Sqld);
    let (c, alice, key) = filled().await;
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
async fn a_remote_note_or_page_read_is_one_request() {
    need(Need::Sqld);
    let (c, alice, key) = filled().await;
    let before = c.proxy.count();
    let note = c.store.get(&alice, &key).await.unwrap();
    assert_eq!(c.proxy.count() - before, 1, "a note read");
    assert_eq!(
        (note.content.as_str(), note.metadata.tags.as_slice()),
        (KEY, &["garden".to_owned()][..])
    );

    // The count and the page in one batch; the page's cursor leads on without a gap.
    let mut query = memory::ListQuery {
        limit: 20,
        ..memory::ListQuery::default()
    };
    let before = c.proxy.count();
    let first = c.store.list(&alice, &query).await.unwrap();
    assert_eq!(c.proxy.count() - before, 1, "a page");
    assert_eq!((first.notes.len(), first.total), (20, 31));
    query.cursor = first.next_cursor.clone();
    let second = c.store.list(&alice, &query).await.unwrap();
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

    // A category and tags go through the inlined placeholders too (bare `?`s, numbered in order).
    let tagged = memory::ListQuery {
        tags_any: vec!["garden".to_owned(), "it's".to_owned()],
        limit: 5,
        ..memory::ListQuery::default()
    };
    let page = c.store.list(&alice, &tagged).await.unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.notes.first().map(|n| &n.note_id), Some(&key));

    // A missing note is still one clear error.
    let missing = NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string()).unwrap();
    let err = c.store.get(&alice, &missing).await.unwrap_err();
    assert!(
        matches!(err, memory::MemoryError::NoteNotFound(_)),
        "{err:?}"
    );
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn the_contexts_of_a_searchs_conversation_hits_are_one_request() {
    need(Need::Sqld);
    let c = Clients::start().await;
    let (alice, bob) = (user("alice"), user("bob"));
    let chat = |name: &str| SessionId::parse(name).unwrap();
    for (who, name) in [(&alice, "trip"), (&alice, "garden"), (&bob, "bob-chat")] {
        for i in 1..=5 {
            let text = format!("{name} turn {i}, it's \"quoted\"");
            let message = match i % 2 {
                1 => types::Message::user(text),
                _ => types::Message::assistant(text),
            };
            c.store
                .sessions()
                .append_message(&chat(name), who, &message)
                .await
                .unwrap();
        }
    }
    let hits = [
        (chat("trip"), 3),
        (chat("bob-chat"), 2),
        (chat("garden"), 1),
        (chat("trip"), 42),
    ];
    let before = c.proxy.count();
    let got = c
        .store
        .conversation_contexts(&alice, &hits, 1)
        .await
        .unwrap();
    assert_eq!(c.proxy.count() - before, 1, "one request for every hit");
    let near = |i: usize| -> Vec<String> {
        let context = got[i].as_ref().unwrap();
        context.neighbours.iter().map(|n| n.text.clone()).collect()
    };
    assert_eq!(
        near(0),
        [
            "trip turn 2, it's \"quoted\"",
            "trip turn 4, it's \"quoted\""
        ]
    );
    assert_eq!(got[0].as_ref().unwrap().speaker, "user");
    assert!(got[1].is_none(), "bob's conversation is not alice's");
    assert_eq!(near(2), ["garden turn 2, it's \"quoted\""]);
    assert!(got[3].is_none(), "no such message");
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_remote_search_of_a_conversation_reads_the_replies_in_the_same_request() {
    need(Need::Sqld);
    let c = Clients::start().await;
    let alice = user("alice");
    let chat = SessionId::parse("season").unwrap();
    let turns = [
        types::Message::user("I walked the dog along the river this morning"),
        types::Message::assistant("Lovely. Did you finish the tax forms?"),
        types::Message::user("Not yet, tomorrow"),
        types::Message::user("Big news: I signed with a new basketball team today!"),
        types::Message::assistant("Congratulations! Which team did you sign with?"),
        types::Message::user("The Minnesota Wolves, starting in autumn."),
    ];
    for message in &turns {
        c.store
            .sessions()
            .append_message(&chat, &alice, message)
            .await
            .unwrap();
    }
    let query = HybridQuery::new(vec![chat.clone()], "Which team did I sign with?", 3);
    c.store.search(&query).await.unwrap();
    let before = c.proxy.count();
    let hits = c.store.search(&query).await.unwrap();
    assert_eq!(c.proxy.count() - before, 1, "a search with its replies");
    let question = hits
        .iter()
        .position(|h| h.event_seq == 5)
        .expect("the question");
    assert_eq!(
        hits.get(question + 1).map(|h| h.event_seq),
        Some(6),
        "the reply right after it: {hits:?}"
    );
}
