//! Files of the `memory` tool and keyed notes (MCP `putMemory`) have the same lifecycle as any
//! note: an edit or a put keeps the text it replaces as a version, a delete is a tombstone, and a
//! restore brings the note back at its path or under its key — never over a file or key that a
//! newer note holds. On every backend (local, encrypted, remote, replica).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Backend, fixture_on, on_both_backends, user};
use memory::{KeyQuery, MemoryError, NoteMetadata, NoteState, PathExpect, PathPut};
use types::UserId;

on_both_backends!(
    a_deleted_file_is_restored_at_its_path,
    a_restore_never_takes_a_path_a_newer_file_holds,
    file_edits_and_key_puts_keep_versions,
    a_deleted_keyed_note_is_restored_under_its_key,
);

async fn write(f: &common::Fixture, who: &UserId, path: &str, text: &str) -> memory::PathFile {
    let expect = match f.store.files().read_file(who, path).await.unwrap() {
        Some(file) => PathExpect::EditToken(file.edit_token),
        None => PathExpect::Absent,
    };
    match f
        .store
        .files()
        .put_file(who, path, text, expect, None, None)
        .await
        .unwrap()
    {
        PathPut::Written(file) => file,
        other => panic!("{path} not written: {other:?}"),
    }
}

async fn files(f: &common::Fixture, who: &UserId) -> Vec<String> {
    let tree = f.store.files().file_tree(who, "/memories").await.unwrap();
    tree.into_iter().map(|e| e.path).collect()
}

async fn put(
    f: &common::Fixture,
    who: &UserId,
    namespace: &str,
    key: &str,
    text: &str,
) -> memory::KeyedWrite {
    f.store
        .keys()
        .put_keyed(who, None, namespace, key, text, NoteMetadata::default())
        .await
        .unwrap()
}

async fn keys(f: &common::Fixture, who: &UserId, namespace: &str) -> Vec<String> {
    let query = KeyQuery {
        namespace: namespace.into(),
        prefix: None,
        limit: 50,
        cursor: None,
    };
    f.store.keys().list_keys(who, &query).await.unwrap().keys
}

async fn a_deleted_file_is_restored_at_its_path(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let file = write(
        &f,
        &alice,
        "/memories/garden/roses.md",
        "Prune the roses in March",
    )
    .await;
    write(
        &f,
        &alice,
        "/memories/garden/tools.md",
        "The shears are in the shed",
    )
    .await;

    let n = f
        .store
        .files()
        .delete_path(&alice, "/memories/garden", None)
        .await
        .unwrap();
    assert_eq!(n, 2);
    assert!(files(&f, &alice).await.is_empty());
    assert!(matches!(
        f.store.get(&alice, &file.note_id).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    // Both files are tombstones, listed with the path they had.
    let deleted = f.store.list_deleted(&alice).await.unwrap();
    let mut paths: Vec<_> = deleted.iter().filter_map(|d| d.path.clone()).collect();
    paths.sort();
    assert_eq!(
        paths,
        ["/memories/garden/roses.md", "/memories/garden/tools.md"]
    );
    let history = f.store.history(&alice, &file.note_id).await.unwrap();
    assert!(matches!(history.state, NoteState::Deleted { .. }));

    let restored = f
        .store
        .restore(&alice, None, &file.note_id, None)
        .await
        .unwrap();
    assert_eq!(restored.content, "Prune the roses in March");
    let back = f
        .store
        .files()
        .read_file(&alice, "/memories/garden/roses.md")
        .await
        .unwrap()
        .expect("the file is back at its path");
    assert_eq!(
        (&back.note_id, &back.content),
        (&file.note_id, &file.content)
    );
    assert_eq!(files(&f, &alice).await, ["/memories/garden/roses.md"]);
    assert_eq!(f.store.list_deleted(&alice).await.unwrap().len(), 1);
}

async fn a_restore_never_takes_a_path_a_newer_file_holds(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let old = write(&f, &alice, "/memories/plan.md", "Old plan: sail to Crete").await;
    f.store
        .files()
        .delete_path(&alice, "/memories/plan.md", None)
        .await
        .unwrap();
    let new = write(&f, &alice, "/memories/plan.md", "New plan: hike in Wales").await;

    let err = f
        .store
        .restore(&alice, None, &old.note_id, None)
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, MemoryError::InvalidInput(_)) && message.contains("/memories/plan.md"),
        "{message}"
    );
    // Nothing changed: the newer file is intact, the old one is still a tombstone.
    let file = f
        .store
        .files()
        .read_file(&alice, "/memories/plan.md")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&file.note_id, &file.content), (&new.note_id, &new.content));
    assert!(matches!(
        f.store.get(&alice, &old.note_id).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    assert_eq!(f.store.list_deleted(&alice).await.unwrap().len(), 1);

    // Once the path is free again, the restore goes through.
    f.store
        .files()
        .move_path(&alice, "/memories/plan.md", "/memories/plan-wales.md", None)
        .await
        .unwrap();
    f.store
        .restore(&alice, None, &old.note_id, None)
        .await
        .unwrap();
    assert_eq!(
        files(&f, &alice).await,
        ["/memories/plan-wales.md", "/memories/plan.md"]
    );
}

async fn file_edits_and_key_puts_keep_versions(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let first = write(&f, &alice, "/memories/car.md", "The car is a blue Fiat").await;
    write(&f, &alice, "/memories/car.md", "The car is a red Volvo").await;
    // The same text again is no new version.
    write(&f, &alice, "/memories/car.md", "The car is a red Volvo").await;

    let history = f.store.history(&alice, &first.note_id).await.unwrap();
    let texts: Vec<_> = history
        .versions
        .iter()
        .map(|v| v.content.as_str())
        .collect();
    assert_eq!(texts, ["The car is a blue Fiat", "The car is a red Volvo"]);
    // Going back to the first version keeps the file at its path.
    f.store
        .restore(&alice, None, &first.note_id, Some(1))
        .await
        .unwrap();
    let file = f
        .store
        .files()
        .read_file(&alice, "/memories/car.md")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(file.content, "The car is a blue Fiat");

    let put = |text| put(&f, &alice, "agent.prefs", "theme", text);
    let keyed = put("\"dark\"").await;
    put("\"light\"").await;
    put("\"light\"").await;
    let history = f.store.history(&alice, &keyed.note_id).await.unwrap();
    let texts: Vec<_> = history
        .versions
        .iter()
        .map(|v| v.content.as_str())
        .collect();
    assert_eq!(texts, ["\"dark\"", "\"light\""]);
}

async fn a_deleted_keyed_note_is_restored_under_its_key(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let put = |text| put(&f, &alice, "session.notes", "todo", text);
    let first = put("buy stamps").await;
    f.store
        .delete(&alice, None, &first.note_id)
        .await
        .map(|_| ())
        .unwrap();
    assert!(keys(&f, &alice, "session.notes").await.is_empty());

    f.store
        .restore(&alice, None, &first.note_id, None)
        .await
        .unwrap();
    assert_eq!(keys(&f, &alice, "session.notes").await, ["todo"]);
    // The key is the restored note's again: a put replaces it instead of making a new note.
    let again = put("buy stamps and envelopes").await;
    assert_eq!(
        (again.note_id, again.created),
        (first.note_id.clone(), false)
    );

    // Deleted again, then the key is taken by a new note: the old one cannot take it back.
    f.store
        .delete(&alice, None, &first.note_id)
        .await
        .map(|_| ())
        .unwrap();
    let newer = put("post the letter").await;
    assert!(newer.created);
    let err = f
        .store
        .restore(&alice, None, &first.note_id, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("todo"), "{err}");
    assert_eq!(keys(&f, &alice, "session.notes").await, ["todo"]);
    assert_eq!(
        f.store.get(&alice, &newer.note_id).await.unwrap().content,
        "post the letter"
    );
}
