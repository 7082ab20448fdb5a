//! `memory_search` with an event as the anchor of a time ("before the trip"): the event is dated
//! by the user's own memory in the user's time zone (`[user] timezone`), what was saved on that
//! side ranks first, and the output says how the time was read; another user's memory is never
//! consulted. Real libSQL files through the registry the agent assembles.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::sync::Arc;

use memory::{ExportedNote, NoteMetadata};
use serde_json::{Value, json};
use tools::{ToolRegistry, ToolSet};
use types::{AgentConfig, NoteId, UserId};

use crate::common::memory_env::{ctx, env, texts};

fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&chrono::Utc)
}

/// The memory tools as the agent has them, for a user in Tokyo.
fn in_tokyo(store: memory::MemoryStore) -> ToolRegistry {
    let mut config = AgentConfig::default();
    config.user.timezone = Some("Asia/Tokyo".into());
    let mut registry = ToolRegistry::default();
    for tool in ToolSet::for_agent(&config, Some(Arc::new(store)))
        .tools()
        .unwrap()
    {
        registry.register(tool).unwrap();
    }
    registry
}

#[tokio::test]
async fn an_event_as_anchor_is_dated_by_the_users_memory_in_their_zone() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    let note = |n: u32, content: &str, when: &str| ExportedNote {
        note_id: NoteId::from_uuid_str(&format!("00000000-0000-4000-8000-00000000000{n}")).unwrap(),
        content: content.into(),
        metadata: NoteMetadata::default(),
        created_at: at(when),
        updated_at: at(when),
    };
    let notes = vec![
        // 05:00 on 3 March in Tokyo, still 2 March in UTC.
        note(1, "Trip to Lisbon with Ana", "2025-03-02T20:00:00Z"),
        note(
            2,
            "Packed sunscreen and a beach hat",
            "2025-03-01T10:00:00Z",
        ),
        note(
            3,
            "Packed sunscreen and ski goggles",
            "2025-03-20T10:00:00Z",
        ),
    ];
    env.store
        .import(&alice, None, notes, memory::Similar::Unchecked, None)
        .await
        .unwrap();
    let registry = in_tokyo(env.store.clone());
    let search = |user: &'static str, query: &'static str| {
        let registry = &registry;
        let root = env.root.clone();
        async move {
            let args = json!({ "query": query }).to_string();
            let out = registry
                .execute("memory_search", &args, &ctx(&root, user, "s1"))
                .await;
            assert!(out.ok, "{}", out.output);
            serde_json::from_str::<Value>(&out.output).unwrap()
        }
    };

    let before = search("alice", "sunscreen packed before the trip").await;
    let hits = before["results"].as_array().unwrap();
    assert_eq!(
        texts(hits)[0],
        "Packed sunscreen and a beach hat",
        "{before}"
    );
    let time = &before["time"];
    assert_eq!(time["phrase"], "before the trip", "{before}");
    assert_eq!(time["from"], Value::Null);
    assert_eq!(time["until"], "2025-03-03T00:00:00+09:00");
    assert_eq!(time["timezone"], "Asia/Tokyo");
    assert_eq!(
        time["read"],
        "read \"before the trip\" as before 3 March 2025 (when \"Trip to Lisbon with Ana\" was saved)"
    );

    let after = search("alice", "sunscreen packed after my trip").await;
    let hits = after["results"].as_array().unwrap();
    assert_eq!(
        texts(hits)[0],
        "Packed sunscreen and ski goggles",
        "{after}"
    );
    assert_eq!(
        after["time"]["from"], "2025-03-04T00:00:00+09:00",
        "{after}"
    );

    // No memory of a wedding: the words are searched as words, and no time is said.
    let none = search("alice", "sunscreen packed before the wedding").await;
    assert!(none.get("time").is_none(), "{none}");
    assert_eq!(none["results"].as_array().unwrap().len(), 2, "{none}");

    // Bob's memory has no trip; Alice's is never looked at.
    let bob = search("bob", "sunscreen packed before the trip").await;
    assert!(bob.get("time").is_none(), "{bob}");
}

/// Every result is dated in the user's time zone, the one "yesterday" or "on 3 March" is read
/// in: a note saved at 05:00 on 3 March in Tokyo and a message said there at 08:30 are of 3
/// March (in UTC both read as 2 March, and "when did I …" was answered a day early).
#[tokio::test]
async fn results_are_dated_in_the_users_zone() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    let trip = ExportedNote {
        note_id: NoteId::from_uuid_str("00000000-0000-4000-8000-000000000001").unwrap(),
        content: "Trip to Lisbon with Ana".into(),
        metadata: NoteMetadata::default(),
        created_at: at("2025-03-02T20:00:00Z"),
        updated_at: at("2025-03-02T20:00:00Z"),
    };
    env.store
        .import(&alice, None, vec![trip], memory::Similar::Unchecked, None)
        .await
        .unwrap();
    env.store
        .sessions()
        .append_message_at(
            &types::SessionId::parse("chat-old").unwrap(),
            &alice,
            &types::Message::user("The Lisbon trip tickets are booked"),
            Some(at("2025-03-02T23:30:00Z")),
        )
        .await
        .unwrap();
    let registry = in_tokyo(env.store.clone());
    let args = json!({ "query": "Lisbon trip", "scope": "all" }).to_string();
    let out = registry
        .execute("memory_search", &args, &ctx(&env.root, "alice", "s1"))
        .await;
    assert!(out.ok, "{}", out.output);
    let found: Value = serde_json::from_str(&out.output).unwrap();
    let mut dates: Vec<(&str, &str)> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let date = r.get("date").unwrap_or(&r["created_at"]);
            (r["source"].as_str().unwrap(), date.as_str().unwrap())
        })
        .collect();
    dates.sort_unstable();
    assert_eq!(
        dates,
        [
            ("conversation", "2025-03-03T08:30:00+09:00"),
            ("user_memory", "2025-03-03T05:00:00+09:00")
        ],
        "{found}"
    );
}
