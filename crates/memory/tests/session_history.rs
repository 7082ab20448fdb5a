//! A conversation's session in the store: its messages in order, paged history, what gets
//! indexed (user and assistant text only), ownership (another user's session or memory is
//! refused), titles and listing; and the summary's compare-and-swap (a stale or future epoch
//! loses), on a real database file.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Raw, fixture, session, user};
use memory::MemoryError;
use types::{Message, SessionId};

#[tokio::test]
async fn sessions_history_titles_and_ownership() {
    let f = fixture().await;
    let (alice, bob) = (user("alice"), user("bob"));
    let chat = session("chat-1");
    let messages = [
        Message::system("You are helpful."),
        Message::user("Hello, I am planning a trip to Lisbon."),
        Message::assistant("Lisbon is lovely in spring."),
        Message::tool_result("call_1", "weather: sunny"),
    ];
    for (i, m) in messages.iter().enumerate() {
        let seq = f
            .store
            .sessions()
            .append_message(&chat, &alice, m)
            .await
            .unwrap();
        assert_eq!(seq, i as u64 + 1);
    }
    let all = f.store.sessions().history(&chat, None, 10).await.unwrap();
    assert_eq!(
        all.iter().map(|e| e.message.clone()).collect::<Vec<_>>(),
        messages
    );
    let page = f.store.sessions().history(&chat, Some(4), 2).await.unwrap();
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);

    // Only user and assistant text is indexed.
    let raw = Raw::open(&f.path).await;
    assert_eq!(raw.count("SELECT count(*) FROM chunks", ()).await, 2);
    assert_eq!(raw.chunks_holding("sunny").await, 0);

    // A session belongs to its creator.
    let err = f
        .store
        .sessions()
        .append_message(&chat, &bob, &Message::user("hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, MemoryError::SessionOwnedByOtherUser(_)),
        "{err:?}"
    );
    let err = f
        .store
        .sessions()
        .append_message(
            &SessionId::user_memory(&alice),
            &bob,
            &Message::user("sneaky"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, MemoryError::SessionOwnedByOtherUser(_)),
        "{err:?}"
    );

    f.store
        .sessions()
        .set_session_title(&chat, "Lisbon trip")
        .await
        .unwrap();
    let info = f.store.sessions().session_info(&chat).await.unwrap();
    assert_eq!(info.title.as_deref(), Some("Lisbon trip"));
    assert_eq!(
        (info.user_id.as_str(), info.events, info.kind),
        ("alice", 4, memory::SessionKind::Conversation)
    );
    assert!(info.last_active_at >= info.created_at);
    common::save_note(&f.store, &alice, "Alice likes trams.").await;
    let listed = f.store.sessions().list_sessions(&alice).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|s| s.session_id.as_str())
            .collect::<Vec<_>>(),
        ["memory:alice", "chat-1"]
    );
    assert!(
        f.store
            .sessions()
            .list_sessions(&bob)
            .await
            .unwrap()
            .is_empty()
    );
    let missing = session("nope");
    assert!(
        f.store
            .sessions()
            .session_info(&missing)
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        f.store
            .sessions()
            .set_session_title(&missing, "x")
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test]
async fn summary_compare_and_swap() {
    let f = fixture().await;
    let chat = session("chat-1");
    assert_eq!(f.store.sessions().summary(&chat).await.unwrap(), None);
    assert!(
        f.store
            .sessions()
            .swap_summary(&chat, 0, "first", 5)
            .await
            .unwrap()
    );
    assert!(
        !f.store
            .sessions()
            .swap_summary(&chat, 0, "racing first", 6)
            .await
            .unwrap()
    );
    let state = f.store.sessions().summary(&chat).await.unwrap().unwrap();
    assert_eq!(
        (state.epoch, state.summary.as_str(), state.upto_seq),
        (1, "first", 5)
    );
    assert!(
        f.store
            .sessions()
            .swap_summary(&chat, 1, "second", 9)
            .await
            .unwrap()
    );
    assert!(
        !f.store
            .sessions()
            .swap_summary(&chat, 1, "stale", 10)
            .await
            .unwrap()
    );
    assert!(
        !f.store
            .sessions()
            .swap_summary(&chat, 7, "future", 10)
            .await
            .unwrap()
    );
    let state = f.store.sessions().summary(&chat).await.unwrap().unwrap();
    assert_eq!(
        (state.epoch, state.summary.as_str(), state.upto_seq),
        (2, "second", 9)
    );
}
