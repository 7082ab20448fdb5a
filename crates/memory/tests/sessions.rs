//! Sessions created before their first message: durable, owned, titled; the conversations a
//! search of past conversations lists and the turns it reads around its hits.

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

#[tokio::test]
async fn conversations_are_listed_by_owner_and_hits_read_together_with_their_turns() {
    let f = fixture().await;
    let (alice, bob) = (user("alice"), user("bob"));
    let turns = [
        "plan the trip",
        "which dates?",
        "May 3 to 9",
        "noted: May 3 to 9",
        "bye",
    ];
    for chat in ["a-1", "a-2"] {
        for (i, text) in turns.iter().enumerate() {
            let message = match i % 2 {
                0 => Message::user(format!("{chat}: {text}")),
                _ => Message::assistant(format!("{chat}: {text}")),
            };
            f.store
                .sessions()
                .append_message(&session(chat), &alice, &message)
                .await
                .unwrap();
        }
    }
    f.store
        .sessions()
        .set_session_title(&session("a-2"), "Trip")
        .await
        .unwrap();
    f.store
        .sessions()
        .append_message(&session("b-1"), &bob, &Message::user("bob's secret"))
        .await
        .unwrap();
    let mut listed = f.store.conversation_sessions(&alice).await.unwrap();
    listed.sort();
    assert_eq!(
        listed,
        [session("a-1"), session("a-2")],
        "alice's only, no notes"
    );

    // One read for several hits: each with its own turns; another user's message gets none.
    let hits = [
        (session("a-2"), 3),
        (session("b-1"), 1),
        (session("a-1"), 1),
        (session("a-2"), 99),
    ];
    let got = f
        .store
        .conversation_contexts(&alice, &hits, 1)
        .await
        .unwrap();
    assert_eq!(got.len(), 4);
    let trip = got[0].as_ref().expect("a-2 #3");
    assert_eq!(
        (trip.title.as_deref(), trip.speaker.as_str()),
        (Some("Trip"), "user")
    );
    let near: Vec<(u64, &str)> = trip
        .neighbours
        .iter()
        .map(|n| (n.seq, n.text.as_str()))
        .collect();
    assert_eq!(
        near,
        [(2, "a-2: which dates?"), (4, "a-2: noted: May 3 to 9")]
    );
    assert!(got[1].is_none(), "bob's session is not alice's");
    let first = got[2].as_ref().expect("a-1 #1");
    assert_eq!(
        (first.title.as_deref(), first.neighbours.len()),
        (None, 1),
        "the first turn has one neighbour"
    );
    assert!(got[3].is_none(), "no such message");
    assert!(matches!(
        f.store
            .conversation_context(&alice, &session("b-1"), 1, 1)
            .await,
        Err(MemoryError::SessionNotFound(_))
    ));
}

#[tokio::test]
async fn a_hits_neighbours_are_the_nearest_spoken_turns_across_tool_calls() {
    let f = fixture().await;
    let alice = user("alice");
    let chat = session("tools");
    let call = types::ToolCall {
        id: "c1".into(),
        name: "web_search".into(),
        arguments: "{}".into(),
    };
    let events = [
        Message::user("first"),                                  // 1
        Message::assistant("second"),                            // 2
        Message::user("what is the weather?"),                   // 3
        Message::assistant_tool_calls(None, vec![call.clone()]), // 4
        Message::tool_result("c1", "sunny, 21 C"),               // 5
        Message::assistant_tool_calls(None, vec![call]),         // 6
        Message::tool_result("c1", "no rain"),                   // 7
        Message::assistant("sunny and dry"),                     // 8
        Message::user("thanks"),                                 // 9
        Message::assistant("any time"),                          // 10
        Message::user("last"),                                   // 11
    ];
    for message in &events {
        f.store
            .sessions()
            .append_message(&chat, &alice, message)
            .await
            .unwrap();
    }
    let hits = [(chat.clone(), 8), (chat.clone(), 5), (chat.clone(), 1)];
    let got = f
        .store
        .conversation_contexts(&alice, &hits, 2)
        .await
        .unwrap();
    let near = |i: usize| -> Vec<(u64, String)> {
        let context = got[i].as_ref().expect("a spoken message");
        context
            .neighbours
            .iter()
            .map(|n| (n.seq, n.text.clone()))
            .collect()
    };
    assert_eq!(got[0].as_ref().unwrap().speaker, "assistant");
    assert_eq!(
        near(0),
        [
            (2, "second".to_owned()),
            (3, "what is the weather?".to_owned()),
            (9, "thanks".to_owned()),
            (10, "any time".to_owned()),
        ],
        "two spoken turns each side, tool calls and results skipped"
    );
    assert!(got[1].is_none(), "a tool result is not a spoken message");
    assert_eq!(
        near(2),
        [
            (2, "second".to_owned()),
            (3, "what is the weather?".to_owned())
        ],
        "nothing before the first turn"
    );

    // Twelve tool results after a turn: beyond the widest read (4 × radius + 1 events), the
    // turn still has its context, without the turn that follows them.
    let busy = session("busy");
    let mut turns = vec![Message::user("start"), Message::assistant("on it")];
    turns.extend((0..12).map(|i| Message::tool_result("c1", format!("result {i}"))));
    turns.push(Message::assistant("done"));
    for message in &turns {
        f.store
            .sessions()
            .append_message(&busy, &alice, message)
            .await
            .unwrap();
    }
    let got = f
        .store
        .conversation_contexts(&alice, &[(busy, 2)], 2)
        .await
        .unwrap();
    let context = got[0].as_ref().expect("the turn's context");
    let near: Vec<u64> = context.neighbours.iter().map(|n| n.seq).collect();
    assert_eq!(near, [1], "\"done\" (15) lies beyond the widest read");
}
