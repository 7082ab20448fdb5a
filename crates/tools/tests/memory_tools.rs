//! The four memory tools through the registry, over real libSQL files: Step 10 of the plan and
//! the review findings (F1 per-call context, F9, F10); `include_conversation` (F2, F5) is in
//! `memory_conversation`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::sync::Arc;

use serde_json::{Value, json};
use tools::{ToolOutcome, ToolSet};
use types::{AgentConfig, MemoryDialect, NoteId, SafetyTier, UserId};

use crate::common::memory_env::{ctx, env, registry_over, texts};

#[tokio::test]
async fn schemas_tiers_timeouts_and_descriptions_follow_the_plan() {
    let tools = ToolSet::new(None)
        .memory_tools(MemoryDialect::Notes)
        .tools()
        .unwrap();
    type Row<'a> = (String, SafetyTier, u64, Vec<&'a str>, Vec<&'a str>);
    let table: Vec<Row> = vec![
        (
            "memory_search".into(),
            SafetyTier::ReadOnly,
            15,
            vec![
                "query",
                "top_k",
                "include_conversation",
                "scope",
                "category",
                "tags",
            ],
            vec!["query"],
        ),
        (
            "memory_save".into(),
            SafetyTier::SideEffecting,
            10,
            vec![
                "content",
                "category",
                "tags",
                "expires_in",
                "expires_at",
                "source",
                "allow_similar",
            ],
            vec!["content"],
        ),
        (
            "memory_update".into(),
            SafetyTier::SideEffecting,
            10,
            vec![
                "note_id",
                "content",
                "version",
                "category",
                "tags",
                "expires_in",
                "expires_at",
            ],
            vec!["note_id", "content", "version"],
        ),
        (
            "memory_delete".into(),
            SafetyTier::SideEffecting,
            10,
            vec!["note_id"],
            vec!["note_id"],
        ),
    ];
    assert_eq!(tools.len(), table.len());
    for (tool, (name, tier, secs, props, required)) in tools.iter().zip(table) {
        assert_eq!(tool.name(), name);
        assert_eq!(tool.safety_tier(), tier, "{name}");
        assert_eq!(tool.timeout().as_secs(), secs, "{name}");
        let p = tool.parameters();
        let mut keys: Vec<&str> = p["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut want = props.clone();
        keys.sort_unstable();
        want.sort_unstable();
        assert_eq!(keys, want, "{name}");
        assert_eq!(p["required"], json!(required), "{name}");
        assert_eq!(p["additionalProperties"], json!(false), "{name}");
    }
    let search = &tools[0].parameters();
    assert_eq!(
        (
            search["properties"]["top_k"]["minimum"].clone(),
            search["properties"]["top_k"]["maximum"].clone()
        ),
        (json!(1), json!(20))
    );
    assert!(tools[0].description().contains("include_conversation"));
    assert!(
        tools[0]
            .description()
            .contains("cannot be updated or deleted"),
        "F9"
    );
    assert!(tools[1].description().contains("8 KiB"));
    assert_eq!(tools::MEMORY_SAVE_TOOL_NAME, "memory_save");
}

#[tokio::test]
async fn save_search_update_delete_roundtrip() {
    let env = env().await;
    let id = env.save("alice", "User's name is Shantanu").await;
    assert!(
        NoteId::parse(&id).is_ok(),
        "note id survives scrubbing: {id}"
    );

    let hits = env.search("alice", "Shantanu name").await;
    assert_eq!(hits[0]["note_id"], id.as_str());
    assert_eq!(hits[0]["text"], "User's name is Shantanu");
    assert_eq!(hits[0]["source"], "user_memory");
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
    // RFC 3339 in the user's zone (here the host's: no `[user] timezone`).
    let created = hits[0]["created_at"].as_str().unwrap();
    assert!(
        chrono::DateTime::parse_from_rfc3339(created).is_ok(),
        "{created}"
    );
    assert_eq!(hits[0]["created_at"], hits[0]["updated_at"]);

    let updated = env
        .ok(
            "alice",
            "memory_update",
            json!({ "note_id": id, "content": "User prefers to be called SG", "version": hits[0]["version"] }),
        )
        .await;
    assert_eq!(updated["note_id"], id.as_str());
    let hits = env.search("alice", "name").await;
    assert!(
        !texts(&hits).contains(&"User's name is Shantanu"),
        "old text is gone: {hits:?}"
    );
    let hits = env.search("alice", "called SG").await;
    assert_eq!(hits[0]["note_id"], id.as_str());
    assert_eq!(hits[0]["text"], "User prefers to be called SG");

    let deleted = env
        .ok("alice", "memory_delete", json!({ "note_id": id }))
        .await;
    assert_eq!(deleted["note_id"], id.as_str());
    assert_eq!(env.search("alice", "SG").await, Vec::<Value>::new());
    assert_eq!(env.note_count("alice").await, 0);
}

#[tokio::test]
async fn unknown_ids_and_bad_content_are_clear_errors_that_change_nothing() {
    let env = env().await;
    let kept = env.save("alice", "likes green tea").await;
    let missing = "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f";
    let check = |out: ToolOutcome, expect: &str| {
        assert!(!out.ok, "should fail: {}", out.output);
        assert!(
            out.output.contains(expect),
            "{:?} should mention {expect:?}",
            out.output
        );
        assert!(
            !out.output.contains("SELECT") && !out.output.contains("/tmp"),
            "{}",
            out.output
        );
    };
    check(
        env.call(
            "alice",
            "c",
            "memory_update",
            json!({ "note_id": missing, "content": "x", "version": "0" }),
        )
        .await,
        "was not found",
    );
    check(
        env.call("alice", "c", "memory_delete", json!({ "note_id": missing }))
            .await,
        "use memory_search",
    );
    check(
        env.call("alice", "c", "memory_delete", json!({ "note_id": "" }))
            .await,
        "note_id",
    );
    check(
        env.call("alice", "c", "memory_delete", json!({ "note_id": "abc" }))
            .await,
        "note-",
    );
    check(
        env.call("alice", "c", "memory_save", json!({ "content": "   " }))
            .await,
        "content",
    );
    check(
        env.call(
            "alice",
            "c",
            "memory_save",
            json!({ "content": "x".repeat(8 * 1024 + 1) }),
        )
        .await,
        "8192",
    );
    // 5000 characters pass the schema's length, but 10000 bytes exceed the byte limit.
    check(
        env.call(
            "alice",
            "c",
            "memory_save",
            json!({ "content": "é".repeat(5000) }),
        )
        .await,
        "8192 bytes",
    );
    check(
        env.call(
            "alice",
            "c",
            "memory_update",
            json!({ "note_id": kept, "content": "", "version": "0" }),
        )
        .await,
        "content",
    );
    check(
        env.call(
            "alice",
            "c",
            "memory_search",
            json!({ "query": "tea", "top_k": 21 }),
        )
        .await,
        "top_k",
    );
    check(
        env.call(
            "alice",
            "c",
            "memory_search",
            json!({ "query": "tea", "top_k": "five" }),
        )
        .await,
        "top_k",
    );
    // Another user cannot touch alice's note, even knowing its id.
    check(
        env.call("bob", "c", "memory_delete", json!({ "note_id": kept }))
            .await,
        "was not found",
    );
    assert_eq!(env.note_count("alice").await, 1);
    assert_eq!(
        env.search("alice", "green tea").await[0]["text"],
        "likes green tea"
    );
}

#[tokio::test]
async fn tools_without_memory_say_memory_is_not_configured() {
    let registry = registry_over(None);
    let root = tempfile::tempdir().unwrap();
    for (tool, args) in [
        ("memory_search", json!({ "query": "x" })),
        ("memory_save", json!({ "content": "x" })),
        (
            "memory_update",
            json!({ "note_id": "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f", "content": "x", "version": "0" }),
        ),
        (
            "memory_delete",
            json!({ "note_id": "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f" }),
        ),
    ] {
        let out = registry
            .execute(tool, &args.to_string(), &ctx(root.path(), "alice", "c"))
            .await;
        assert!(
            !out.ok && out.output.contains("memory is not configured"),
            "{tool}: {}",
            out.output
        );
    }
    // The agent's own set has no memory tools at all without a store.
    let agent = ToolSet::for_agent(&AgentConfig::default(), None);
    let empty = agent.registry().unwrap();
    assert!(
        !empty.names().iter().any(|n| n.starts_with("memory")),
        "{:?}",
        empty.names()
    );
}

#[tokio::test]
async fn users_never_see_each_others_notes() {
    let env = env().await;
    env.save("alice", "alice's locker code is 4512").await;
    env.save("bob", "bob's locker code is 9981").await;
    assert_eq!(
        texts(&env.search("alice", "locker code").await),
        vec!["alice's locker code is 4512"]
    );
    assert_eq!(
        texts(&env.search("bob", "locker code").await),
        vec!["bob's locker code is 9981"]
    );
    assert_eq!(
        env.search("carol", "locker code").await,
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn a_long_note_is_one_result() {
    let env = env().await;
    let long: String = (0..60)
        .map(|i| format!("Sentence {i} about the quarterly planning offsite in Lisbon. "))
        .collect();
    assert!(long.len() > 3000);
    let id = env.save("alice", &long).await;
    let hits = env
        .ok(
            "alice",
            "memory_search",
            json!({ "query": "quarterly planning offsite Lisbon", "top_k": 20 }),
        )
        .await;
    let hits = hits["results"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "F10: one entry per note");
    assert_eq!(hits[0]["note_id"], id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_across_users_and_sessions_stay_in_their_namespace() {
    let env = Arc::new(env().await);
    let mut tasks = Vec::new();
    for i in 0..240 {
        let env = Arc::clone(&env);
        tasks.push(tokio::spawn(async move {
            let user = if i % 2 == 0 { "alice" } else { "bob" };
            let session = format!("chat-{}", i % 6);
            let token = format!("tok{i}x");
            let out = env
                .call(
                    user,
                    &session,
                    "memory_save",
                    json!({ "content": format!("{user} fact {token}") }),
                )
                .await;
            assert!(out.ok, "{}", out.output);
            let found = env
                .call(
                    user,
                    &session,
                    "memory_search",
                    json!({ "query": token, "include_conversation": true }),
                )
                .await;
            assert!(found.ok, "{}", found.output);
            let found: Value = serde_json::from_str(&found.output).unwrap();
            let hits = found["results"].as_array().unwrap();
            assert_eq!(
                hits.first().map(|h| h["text"].clone()),
                Some(json!(format!("{user} fact {token}"))),
                "{found}"
            );
            assert!(
                hits.iter()
                    .all(|h| h["text"].as_str().unwrap().starts_with(user)),
                "{hits:?}"
            );
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(env.note_count("alice").await, 120);
    assert_eq!(env.note_count("bob").await, 120);
    for note in env
        .store
        .list_notes(&UserId::parse("alice").unwrap())
        .await
        .unwrap()
    {
        assert!(note.content.starts_with("alice fact"), "{}", note.content);
    }
}
