//! Note dates are the user's: every view of a note the runtime gives (list, search, read, history,
//! deleted) writes its times with the offset of the user's zone (`[user] timezone`), and recalled
//! notes reach the model with the user's date — a note saved at 21:30 in Los Angeles is dated
//! that day, not the next (UTC's). Real libSQL file, scripted model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use crate::search_time::alices_runtime;
use chrono::{DateTime, Utc};
use common::{ctx, run};
use memory::{ExportedNote, NoteMetadata};
use test_support::ScriptedReply;
use types::{NoteId, UserId};

#[tokio::test]
async fn note_times_are_in_the_users_zone() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, store, server) = alices_runtime(dir.path(), chrono_tz::America::Los_Angeles).await;
    let alice = UserId::parse("alice").unwrap();
    // 05:30 UTC on 2 March is 21:30 on 1 March in Los Angeles (PST, -08:00).
    let at: DateTime<Utc> = "2025-03-02T05:30:00Z".parse().unwrap();
    let id = NoteId::from_uuid_str("00000000-0000-4000-8000-000000000001").unwrap();
    let note = |id: &NoteId, content: &str| ExportedNote {
        note_id: id.clone(),
        content: content.into(),
        metadata: NoteMetadata::default(),
        created_at: at,
        updated_at: at,
    };
    let gone = NoteId::from_uuid_str("00000000-0000-4000-8000-000000000002").unwrap();
    store
        .import(
            &alice,
            None,
            vec![
                note(&id, "Alice booked the ferry to Catalina"),
                note(&gone, "Alice's old gym locker is number 12"),
            ],
            memory::Similar::Unchecked,
            None,
        )
        .await
        .unwrap();
    let c = ctx(dir.path(), "alice", "chat-1", "t1");
    let local = "2025-03-01T21:30:00.000-08:00";

    let listed = rt.list_notes(&c, None, None, 10).await.unwrap();
    assert!(
        listed
            .notes
            .iter()
            .all(|n| n.created_at == local && n.updated_at == local)
    );
    let found = rt.search_notes(&c, "ferry to Catalina", 5).await.unwrap();
    assert_eq!(found.hits[0].created_at, local);
    assert_eq!(rt.note(&c, &id).await.unwrap().updated_at, local);
    let history = rt.note_history(&c, &id).await.unwrap();
    assert_eq!(history.versions[0].saved_at, local);
    rt.delete_note(&c, &gone).await.unwrap();
    let deleted = rt.deleted_notes(&c).await.unwrap();
    assert_eq!(deleted[0].note.created_at, local);
    assert!(deleted[0].deleted_at.ends_with("-08:00") || deleted[0].deleted_at.ends_with("-07:00"));

    // Recalled for the model with the user's date.
    server.push_all([ScriptedReply::text("On the 1st.")]);
    run(
        &rt,
        &ctx(dir.path(), "alice", "chat-2", "t2"),
        "When did I book the ferry to Catalina?",
    )
    .await
    .0
    .unwrap();
    let users = server.last_request().unwrap().user_texts().join("\n");
    assert!(users.contains(r#""saved":"2025-03-01""#), "{users}");
}
