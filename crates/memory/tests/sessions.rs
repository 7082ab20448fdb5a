//! Sessions created before their first message: durable, owned, titled.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::sync::Arc;

use common::{DIMS, fixture, session, user};
use memory::{HashEmbedder, MemoryError, MemoryStore, SessionKind};
use types::Message;

#[tokio::test]
async fn a_created_session_is_stored_empty_titled_and_survives_a_reopen() {
    let f = fixture().await;
    let (alice, s) = (user("alice"), session("s-1"));
    let info = f
        .store
        .sessions()
        .create_session(&s, &alice, Some("  Trip planning "))
        .await
        .unwrap();
    assert_eq!(
        (info.title.as_deref(), info.kind, info.events, &info.user_id),
        (Some("Trip planning"), SessionKind::Conversation, 0, &alice)
    );
    // Creating it again is harmless; without a title the title stays.
    let again = f
        .store
        .sessions()
        .create_session(&s, &alice, None)
        .await
        .unwrap();
    assert_eq!(
        (again.title.as_deref(), again.created_at),
        (Some("Trip planning"), info.created_at)
    );
    // Another user can neither create nor write into it.
    let bob = user("bob");
    assert!(matches!(
        f.store.sessions().create_session(&s, &bob, None).await,
        Err(MemoryError::SessionOwnedByOtherUser(_))
    ));
    assert!(
        f.store
            .sessions()
            .append_message(&s, &bob, &Message::user("hi"))
            .await
            .is_err()
    );
    drop(f.store);

    let store = MemoryStore::open(
        memory::Target::File(&f.path),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(DIMS))),
    )
    .await
    .unwrap();
    let listed = store.sessions().list_sessions(&alice).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].session_id.as_str(), listed[0].title.as_deref()),
        ("s-1", Some("Trip planning"))
    );
    assert!(
        store
            .sessions()
            .list_sessions(&bob)
            .await
            .unwrap()
            .is_empty()
    );
    // The first message goes into the created session with sequence 1.
    assert_eq!(
        store
            .sessions()
            .append_message(&s, &alice, &Message::user("hello"))
            .await
            .unwrap(),
        1
    );
}
