//! How many HTTP requests a write costs a remote store, counted by a proxy between the store and a
//! real `sqld`: a save is one, an update or a delete two (a read, then one transactional batch) —
//! and an update whose note changes between its read and its batch changes nothing of its own:
//! the proxy holds the batch while another client rewrites the note, and the update then fails
//! its version check with the other client's text intact, as it would had it read after. A
//! write whose transaction the server ended (held past its timeout) runs again and lands once.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use crate::store::note_ids_found;
use common::proxy::{Clients, Proxy};
use common::user;
use memory::{CallKey, MemoryStore, MetadataPatch, NoteMetadata, Origin, Provenance, edit_token};
use test_support::{Need, Sqld, need};

/// A server and its clients, with Alice's note `text` saved through the proxied store.
async fn alice_with(text: &str, metadata: NoteMetadata) -> (Clients, types::UserId, memory::Note) {
    let clients = Clients::start().await;
    let alice = user("alice");
    let note = clients
        .store
        .save(&alice, None, text, metadata, memory::Similar::Unchecked)
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    (clients, alice, note)
}

/// Every text a note has had (its versions and the current one), sorted.
async fn texts_of(store: &MemoryStore, who: &types::UserId, id: &types::NoteId) -> Vec<String> {
    let history = store.history(who, id).await.unwrap();
    let mut texts: Vec<String> = history.versions.into_iter().map(|v| v.content).collect();
    texts.sort();
    texts
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_remote_update_or_delete_is_two_requests_and_a_save_one() {
    need(Need::Sqld);
    let server = Sqld::start_with_auth();
    let token = server.token(r#"{"a":"rw"}"#);
    let proxy = Proxy::start(&server.url()).await;
    let store = common::proxy::open(&proxy.url, &token).await;
    let alice = user("alice");
    let cost = async |before: usize| proxy.count() - before;

    let before = proxy.count();
    let note = common::save_note(&store, &alice, "The boiler code is 4417.").await;
    assert_eq!(cost(before).await, 1, "a save");

    let before = proxy.count();
    let updated = store
        .update(
            &alice,
            None,
            &note.note_id,
            "The boiler code is 5521.",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();
    assert_eq!(cost(before).await, 2, "an update");
    assert_eq!(updated.created_at, note.created_at);

    // A checked update made for a tool call, with a metadata patch: still two, and a retry of
    // the same call writes nothing and gets the first receipt.
    let call = CallKey::new("chat-1", "call_1", "memory_update", "{}");
    let patch = MetadataPatch {
        tags: Some(vec!["home".to_owned()]),
        ..MetadataPatch::default()
    };
    let text = "The boiler code is 'x'; DROP TABLE notes; -- 6630";
    let expected = edit_token(&updated.content);
    let before = proxy.count();
    let receipt = store
        .update(
            &alice,
            Some(&call),
            &note.note_id,
            text,
            Some(&expected),
            patch.clone(),
        )
        .await
        .map(|written| written.receipt)
        .unwrap();
    assert_eq!(cost(before).await, 2, "a checked, tagged update for a call");
    assert!(!receipt.replayed);
    let again = store
        .update(
            &alice,
            Some(&call),
            &note.note_id,
            text,
            Some(&expected),
            patch,
        )
        .await
        .map(|written| written.receipt)
        .unwrap();
    assert!(again.replayed, "{again:?}");
    assert_eq!(again.edit_token, receipt.edit_token);
    let stored = store.get(&alice, &note.note_id).await.unwrap();
    assert_eq!(stored.content, text);
    assert_eq!(stored.metadata.tags, ["home"]);
    assert_eq!(
        texts_of(&store, &alice, &note.note_id).await,
        [
            "The boiler code is 'x'; DROP TABLE notes; -- 6630",
            "The boiler code is 4417.",
            "The boiler code is 5521."
        ],
        "each replaced text kept once, beside the current one"
    );
    let found = note_ids_found(&store, "alice", "boiler 6630").await;
    assert_eq!(found, [note.note_id.to_string()]);

    // (The retry went the statement way, whose connection closes its stream with the next
    // request: a write in between takes that request.)
    common::save_note(&store, &alice, "The gate code is 1234.").await;

    // A delete for a call: two, a retry gets its receipt, and the tombstone restores the note.
    let call = CallKey::new("chat-1", "call_2", "memory_delete", "{}");
    let before = proxy.count();
    let gone = store
        .delete(&alice, Some(&call), &note.note_id)
        .await
        .unwrap();
    assert_eq!(cost(before).await, 2, "a delete for a call");
    assert!(!gone.replayed);
    let again = store
        .delete(&alice, Some(&call), &note.note_id)
        .await
        .unwrap();
    assert!(again.replayed, "{again:?}");
    assert!(note_ids_found(&store, "alice", "boiler").await.is_empty());
    assert!(store.get(&alice, &note.note_id).await.is_err());
    let back = store
        .restore(&alice, None, &note.note_id, None)
        .await
        .unwrap();
    assert_eq!(back.content, text);
    assert_eq!(back.metadata.tags, ["home"]);

    // Missing notes are still one clear error each, and change nothing.
    let missing = types::NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string()).unwrap();
    let err = store
        .update(
            &alice,
            None,
            &missing,
            "x",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap_err();
    assert!(
        matches!(err, memory::MemoryError::NoteNotFound(_)),
        "{err:?}"
    );
    let err = store
        .delete(&alice, None, &missing)
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(err, memory::MemoryError::NoteNotFound(_)),
        "{err:?}"
    );
    assert_eq!(store.list_notes(&alice).await.unwrap().len(), 2);
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn an_update_whose_note_changed_after_its_read_writes_nothing_of_its_own() {
    need(Need::Sqld);
    let (clients, alice, note) = alice_with("Alice's locker is 12.", NoteMetadata::default()).await;
    let Clients {
        _server,
        proxy,
        store,
        other,
    } = clients;
    let expected = edit_token(&note.content);

    // Hold the update's batch (after its read) while the other client rewrites the note.
    let held = proxy.hold("INSERT INTO note_versions");
    let (s, a, id, v) = (
        store.clone(),
        alice.clone(),
        note.note_id.clone(),
        expected.clone(),
    );
    let update = tokio::spawn(async move {
        s.update(
            &a,
            None,
            &id,
            "Alice's locker is 40.",
            Some(&v),
            MetadataPatch::default(),
        )
        .await
        .map(|written| written.receipt)
    });
    held.await;
    other
        .update(
            &alice,
            None,
            &note.note_id,
            "Alice's locker is 77.",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();
    proxy.release();
    let err = update.await.unwrap().unwrap_err();
    assert!(
        matches!(err, memory::MemoryError::VersionMismatch(_)),
        "{err:?}"
    );

    let stored = store.get(&alice, &note.note_id).await.unwrap();
    assert_eq!(stored.content, "Alice's locker is 77.");
    assert_eq!(
        texts_of(&store, &alice, &note.note_id).await,
        ["Alice's locker is 12.", "Alice's locker is 77."],
        "only the other client's update"
    );
    assert_eq!(
        note_ids_found(&store, "alice", "locker").await,
        [note.note_id.to_string()]
    );
    assert!(note_ids_found(&store, "alice", "40").await.is_empty());
    let stats = store.upkeep().stats().await.unwrap();
    assert_eq!(
        (stats.notes, stats.events, stats.chunks, stats.vectors),
        (1, 1, 1, 1),
        "nothing of the refused update left behind"
    );
}

/// A change made in place (the user confirming a note) between an update's read and its batch
/// is not undone: the batch, built from the row as read, is refused, and the update is made again
/// on the row as it now is.
#[tokio::test]
#[ignore = "needs sqld"]
async fn an_update_keeps_a_confirmation_made_after_its_read() {
    need(Need::Sqld);
    let planted = NoteMetadata {
        provenance: Some(Provenance::in_turn(Origin::Shell, "s1", "t1")),
        ..NoteMetadata::default()
    };
    let (clients, alice, note) = alice_with("Reports go to the team list.", planted).await;
    let Clients {
        _server,
        proxy,
        store,
        other,
    } = clients;

    let held = proxy.hold("INSERT INTO note_versions");
    let (s, a, id) = (store.clone(), alice.clone(), note.note_id.clone());
    let update = tokio::spawn(async move {
        s.update(
            &a,
            None,
            &id,
            "Reports go to the whole team list.",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
    });
    held.await;
    other.confirm(&alice, None, &note.note_id).await.unwrap();
    proxy.release();
    let updated = update.await.unwrap().unwrap();

    let stored = store.get(&alice, &note.note_id).await.unwrap();
    assert_eq!(stored.content, "Reports go to the whole team list.");
    let provenance = stored.metadata.provenance.unwrap();
    assert!(provenance.confirmed, "the confirmation was undone");
    assert_eq!(updated.metadata.provenance, Some(provenance));
    let stats = store.upkeep().stats().await.unwrap();
    assert_eq!((stats.notes, stats.events, stats.chunks), (1, 1, 1));
}

/// A delete whose note is rewritten between its read and its batch deletes the note as it now
/// is: nothing of the new text is left behind, and the tombstone restores the new text.
#[tokio::test]
#[ignore = "needs sqld"]
async fn a_delete_after_a_rewrite_leaves_nothing_behind() {
    need(Need::Sqld);
    let (clients, alice, note) =
        alice_with("The spare key is under the mat.", NoteMetadata::default()).await;
    let Clients {
        _server,
        proxy,
        store,
        other,
    } = clients;

    let held = proxy.hold("INTO deleted_notes");
    let (s, a, id) = (store.clone(), alice.clone(), note.note_id.clone());
    let delete = tokio::spawn(async move { s.delete(&a, None, &id).await.map(|_| ()) });
    held.await;
    other
        .update(
            &alice,
            None,
            &note.note_id,
            "The spare key is in the shed.",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();
    proxy.release();
    delete.await.unwrap().unwrap();

    let stats = store.upkeep().stats().await.unwrap();
    assert_eq!(
        (stats.notes, stats.events, stats.chunks, stats.vectors),
        (0, 0, 0, 0),
        "nothing of the rewritten note left behind"
    );
    assert!(note_ids_found(&store, "alice", "shed").await.is_empty());
    let back = store
        .restore(&alice, None, &note.note_id, None)
        .await
        .unwrap();
    assert_eq!(back.content, "The spare key is in the shed.");
}

/// Alice's keyed put through the proxied store, started and held by the proxy inside its open
/// transaction (at its `UPDATE notes SET mem_namespace`) until [`Proxy::release`].
async fn held_put(
    clients: &Clients,
    alice: &types::UserId,
) -> tokio::task::JoinHandle<Result<memory::KeyedWrite, memory::MemoryError>> {
    let held = clients.proxy.hold("UPDATE notes SET mem_namespace");
    let (store, who) = (clients.store.clone(), alice.clone());
    let put = tokio::spawn(async move {
        store
            .keys()
            .put_keyed(
                &who,
                None,
                "prefs",
                "colour",
                "Alice likes green",
                NoteMetadata::default(),
            )
            .await
    });
    held.await;
    put
}

/// sqld expires a Hrana stream left idle for some seconds, and the transaction open on it: a
/// keyed put whose statement the proxy holds for 20 s finds its stream gone (`STREAM_EXPIRED`,
/// measured at 18 s). Nothing of it was written; the store runs it again and it lands once.
#[tokio::test]
#[ignore = "needs sqld"]
async fn a_write_whose_stream_expired_runs_again() {
    need(Need::Sqld);
    let clients = Clients::start().await;
    let alice = user("alice");
    let put = held_put(&clients, &alice).await;
    tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    clients.proxy.release();
    let written = put.await.unwrap().unwrap();
    assert!(written.created, "{written:?}");
    let notes = clients.other.list_notes(&alice).await.unwrap();
    let texts: Vec<&str> = notes.iter().map(|n| n.content.as_str()).collect();
    assert_eq!(texts, ["Alice likes green"], "written once");
}

/// sqld ends a write transaction held open past its transaction timeout (5 s) once another
/// connection waits for the write lock, and rolls it back. A keyed put still goes statement by
/// statement in an open transaction: the proxy holds its statement past the limit while another
/// client writes, so the server ends the put's transaction under it. The put is not lost and does
/// not fail: the store runs it again, and both clients' notes are there.
#[tokio::test]
#[ignore = "needs sqld"]
async fn a_write_whose_transaction_the_server_ended_runs_again() {
    need(Need::Sqld);
    let clients = Clients::start().await;
    let (alice, bob) = (user("alice"), user("bob"));
    let put = held_put(&clients, &alice).await;
    // Waits for the write lock until the server takes it from the held put (its timeout).
    clients
        .other
        .keys()
        .put_keyed(
            &bob,
            None,
            "prefs",
            "colour",
            "Bob likes red",
            NoteMetadata::default(),
        )
        .await
        .unwrap();
    clients.proxy.release();
    let written = put.await.unwrap().unwrap();
    assert!(written.created, "{written:?}");
    let query = memory::KeyQuery {
        namespace: "prefs".into(),
        prefix: None,
        limit: 50,
        cursor: None,
    };
    for (who, text) in [(&alice, "Alice likes green"), (&bob, "Bob likes red")] {
        let keys = clients
            .store
            .keys()
            .list_keys(who, &query)
            .await
            .unwrap()
            .keys;
        assert_eq!(keys, ["colour"], "{who}");
        let notes = clients.other.list_notes(who).await.unwrap();
        let texts: Vec<&str> = notes.iter().map(|n| n.content.as_str()).collect();
        assert_eq!(texts, [text], "{who}: written once");
    }
}
