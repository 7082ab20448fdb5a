//! The MCP peer's tools (`listMemory`, `getContext`, `putMemory`) through the registry over a
//! real libSQL file: the ADR's schemas, keyed values as notes (search finds them, a put replaces
//! in place, ttl is the note's expiry), paging, bad input refused with nothing changed, users
//! kept apart, and the session's tool history.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::sync::Arc;

use chrono::{Duration, Utc};
use memory::{HashEmbedder, KeyQuery, MemoryRetrieval, MemoryStore, NoteMetadata};
use serde_json::{Value, json};
use tools::{ToolRegistry, ToolSet};
use types::{
    MemoryDialect, Message, ModelPrice, PricingConfig, SessionId, ToolCall, TurnId, Usage, UserId,
};

use crate::common::context;

struct Env {
    dir: tempfile::TempDir,
    store: MemoryStore,
    registry: ToolRegistry,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::open(
        memory::Target::File(&dir.path().join(".oxydra/memory.db")),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await
    .unwrap();
    let memory: Arc<dyn MemoryRetrieval> = Arc::new(store.clone());
    let mut registry = ToolRegistry::default();
    let price = ModelPrice {
        input_per_mtok: 2.0,
        output_per_mtok: 10.0,
    };
    let pricing = PricingConfig::from([("priced-model".to_owned(), price)]);
    let set = ToolSet::new(Some(memory)).pricing(&pricing);
    for tool in set
        .memory_tools(MemoryDialect::Notes)
        .peer_mcp()
        .tools()
        .unwrap()
    {
        registry.register(tool).unwrap();
    }
    Env {
        dir,
        store,
        registry,
    }
}

impl Env {
    /// A call as `user`: `Ok(json)` or `Err(message)`.
    async fn call(&self, user: &str, tool: &str, args: Value) -> Result<Value, String> {
        let ctx = context(user, self.dir.path());
        let out = self.registry.execute(tool, &args.to_string(), &ctx).await;
        if out.ok {
            Ok(serde_json::from_str(&out.output).unwrap())
        } else {
            Err(out.output)
        }
    }

    async fn keys(&self, user: &str, namespace: &str) -> Vec<String> {
        let query = KeyQuery {
            namespace: namespace.into(),
            limit: 100,
            ..KeyQuery::default()
        };
        let user = UserId::parse(user).unwrap();
        self.store.list_keys(&user, &query).await.unwrap().keys
    }
}

#[tokio::test]
async fn the_tools_offer_exactly_the_adr_input_schemas() {
    let env = env().await;
    let schema = |name: &str| env.registry.get(name).unwrap().parameters();
    assert_eq!(
        schema("listMemory"),
        json!({
            "type": "object",
            "properties": {
                "namespace": {"type": "string", "description": "Memory namespace to list"},
                "prefix": {"type": "string", "description": "Key prefix filter (optional)"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50, "description": "Maximum number of keys to return"},
                "cursor": {"type": "string", "description": "Pagination cursor (optional)"}
            },
            "required": ["namespace"]
        })
    );
    assert_eq!(
        schema("getContext"),
        json!({
            "type": "object",
            "properties": {
                "context_type": {"type": "string", "enum": ["session", "agent", "task", "all"], "default": "all", "description": "Type of context to retrieve"},
                "include_history": {"type": "boolean", "default": false, "description": "Include historical context"}
            }
        })
    );
    assert_eq!(
        schema("putMemory"),
        json!({
            "type": "object",
            "properties": {
                "namespace": {"type": "string", "description": "Memory namespace"},
                "key": {"type": "string", "description": "Memory key"},
                "value": {"description": "Value to store (any JSON-serializable data)"},
                "ttl_seconds": {"type": "integer", "minimum": 0, "description": "Time-to-live in seconds (optional)"}
            },
            "required": ["namespace", "key", "value"]
        })
    );
    let output = |name: &str| env.registry.get(name).unwrap().output_schema();
    assert_eq!(
        output("listMemory").unwrap()["properties"]["keys"],
        json!({"type": "array", "items": {"type": "string"}, "description": "List of memory keys"})
    );
    assert_eq!(
        output("getContext").unwrap()["properties"]["memory_usage"],
        json!({"type": "object", "properties": {"tokens_used": {"type": "integer"}, "usd_spent": {"type": "number"}}})
    );
}

#[tokio::test]
async fn a_put_value_is_a_note_that_search_finds_and_a_second_put_replaces() {
    let env = env().await;
    let put = |value: Value| json!({"namespace": "agent.notes", "key": "city", "value": value});
    let first = env
        .call("alice", "putMemory", put(json!("Lisbon")))
        .await
        .unwrap();
    assert_eq!(
        (&first["success"], &first["created"]),
        (&json!(true), &json!(true))
    );
    let second = env
        .call("alice", "putMemory", put(json!({"name": "Porto"})))
        .await
        .unwrap();
    assert_eq!(
        (&second["note_id"], &second["created"]),
        (&first["note_id"], &json!(false))
    );
    let found = env
        .call("alice", "memory_search", json!({"query": "Porto"}))
        .await
        .unwrap();
    let hit = &found["results"][0];
    assert_eq!(
        (&hit["note_id"], &hit["text"]),
        (&first["note_id"], &json!("city: {\"name\":\"Porto\"}"))
    );
    let texts = found["results"].to_string();
    assert!(!texts.contains("Lisbon"), "{texts}");
}

#[tokio::test]
async fn list_pages_by_key_with_prefix_and_total() {
    let env = env().await;
    for key in ["b", "a", "c", "ab"] {
        env.call(
            "alice",
            "putMemory",
            json!({"namespace": "session.x", "key": key, "value": key}),
        )
        .await
        .unwrap();
    }
    env.call(
        "alice",
        "putMemory",
        json!({"namespace": "other", "key": "z", "value": 1}),
    )
    .await
    .unwrap();
    let page = env
        .call(
            "alice",
            "listMemory",
            json!({"namespace": "session.x", "limit": 2}),
        )
        .await
        .unwrap();
    assert_eq!(
        (&page["keys"], &page["total"]),
        (&json!(["a", "ab"]), &json!(4))
    );
    let next = env
        .call(
            "alice",
            "listMemory",
            json!({"namespace": "session.x", "limit": 2, "cursor": page["cursor"]}),
        )
        .await
        .unwrap();
    assert_eq!(next, json!({"keys": ["b", "c"], "total": 4}));
    let prefixed = env
        .call(
            "alice",
            "listMemory",
            json!({"namespace": "session.x", "prefix": "a"}),
        )
        .await
        .unwrap();
    assert_eq!(prefixed["keys"], json!(["a", "ab"]));
}

#[tokio::test]
async fn ttl_is_the_notes_expiry_and_an_expired_key_is_gone_and_can_be_put_again() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    let past = NoteMetadata {
        expires_at: Some(Utc::now() - Duration::seconds(1)),
        ..NoteMetadata::default()
    };
    env.store
        .put_keyed(&alice, None, "agent.tmp", "old", "old: 1", past)
        .await
        .unwrap();
    assert_eq!(env.keys("alice", "agent.tmp").await, Vec::<String>::new());
    let again = env
        .call(
            "alice",
            "putMemory",
            json!({"namespace": "agent.tmp", "key": "old", "value": 2, "ttl_seconds": 60}),
        )
        .await
        .unwrap();
    assert_eq!(again["created"], true);
    assert_eq!(env.keys("alice", "agent.tmp").await, ["old"]);
    let note_id = types::NoteId::parse(again["note_id"].as_str().unwrap()).unwrap();
    let note = env.store.get_note(&alice, &note_id).await.unwrap();
    let expires = note.metadata.expires_at.unwrap();
    let left = expires - Utc::now();
    assert!(
        left > Duration::seconds(0) && left <= Duration::seconds(60),
        "{expires}"
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_and_change_nothing() {
    let env = env().await;
    let cases = [
        (
            "putMemory",
            json!({"namespace": "../bob", "key": "k", "value": 1}),
            "namespace",
        ),
        (
            "putMemory",
            json!({"namespace": "", "key": "k", "value": 1}),
            "namespace",
        ),
        (
            "putMemory",
            json!({"namespace": "a", "key": "", "value": 1}),
            "key",
        ),
        ("putMemory", json!({"namespace": "a", "key": "k"}), "value"),
        (
            "putMemory",
            json!({"namespace": "a", "key": "k", "value": 1, "ttl_seconds": -1}),
            "ttl_seconds",
        ),
        (
            "putMemory",
            json!({"namespace": "a", "key": "k", "value": "x".repeat(9000)}),
            "value",
        ),
        (
            "putMemory",
            json!({"namespace": "a", "key": "k", "value": 1, "user": "bob"}),
            "user",
        ),
        ("listMemory", json!({"namespace": "a", "limit": 0}), "limit"),
        (
            "listMemory",
            json!({"namespace": "a", "limit": 101}),
            "limit",
        ),
        (
            "listMemory",
            json!({"namespace": "a", "cursor": "bogus"}),
            "cursor",
        ),
        (
            "getContext",
            json!({"context_type": "everything"}),
            "context_type",
        ),
    ];
    for (tool, args, word) in cases {
        let err = env.call("alice", tool, args.clone()).await.unwrap_err();
        assert!(err.contains(word), "{tool} {args}: {err}");
        assert!(!err.contains("SELECT") && !err.contains(".db"), "{err}");
    }
    assert_eq!(env.keys("alice", "a").await, Vec::<String>::new());
}

#[tokio::test]
async fn another_user_never_sees_or_changes_a_users_keys() {
    let env = env().await;
    let put = json!({"namespace": "agent.notes", "key": "drink", "value": "alice only"});
    env.call("alice", "putMemory", put).await.unwrap();
    let bob = env
        .call("bob", "listMemory", json!({"namespace": "agent.notes"}))
        .await
        .unwrap();
    assert_eq!(bob, json!({"keys": [], "total": 0}));
    let put = json!({"namespace": "agent.notes", "key": "drink", "value": "bob's"});
    let bobs = env.call("bob", "putMemory", put).await.unwrap();
    assert_eq!(bobs["created"], true);
    let found = env
        .call("alice", "memory_search", json!({"query": "drink"}))
        .await
        .unwrap();
    assert_eq!(found["results"][0]["text"], "drink: alice only");
    assert_eq!(found["results"].as_array().unwrap().len(), 1, "{found}");
}

#[tokio::test]
async fn get_context_reports_the_session_and_its_tool_calls() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    let session = SessionId::parse("session-1").unwrap();
    let call = |id: &str, name: &str| {
        Message::assistant_tool_calls(
            None,
            vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: "{}".into(),
            }],
        )
    };
    let answer = |id: &str, text: &str| Message::tool_result(id, text);
    for m in [
        Message::user("hi"),
        call("c1", "memory_search"),
        answer("c1", "{\"results\":[]}"),
        call("c2", "file_read"),
        answer("c2", "error: no such file"),
    ] {
        env.store
            .sessions()
            .append_message(&session, &alice, &m)
            .await
            .unwrap();
    }
    // Two model calls in this session (one model priced, one not) and one in another session.
    let turn = TurnId::parse("turn-0").unwrap();
    let other = SessionId::parse("session-2").unwrap();
    for (session, model, prompt, completion) in [
        (&session, "priced-model", 1000, 200),
        (&session, "local-model", 500, 50),
        (&other, "priced-model", 10, 1),
    ] {
        let place = memory::CallPlace {
            user: &alice,
            session,
            turn: &turn,
        };
        let usage = Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
        };
        env.store
            .usage()
            .record_usage(place, model, usage)
            .await
            .unwrap();
    }
    let started = env.store.session_info(&session).await.unwrap().created_at;
    let all = env
        .call("alice", "getContext", json!({"include_history": true}))
        .await
        .unwrap();
    assert_eq!(
        (&all["session_id"], &all["agent_id"], &all["task_id"]),
        (&json!("session-1"), &json!("alice"), &json!("turn-1"))
    );
    let start: chrono::DateTime<Utc> = all["start_time"].as_str().unwrap().parse().unwrap();
    assert!((start - started).num_milliseconds().abs() <= 1, "{all}");
    // 1000 × $2 + 200 × $10 per million; the local model's 550 tokens count, unpriced.
    assert_eq!(all["memory_usage"]["tokens_used"], 1750, "{all}");
    let usd = all["memory_usage"]["usd_spent"].as_f64().unwrap();
    assert!((usd - 0.004).abs() < 1e-12, "{all}");
    assert!(
        all["usage_note"].as_str().unwrap().contains("local-model"),
        "{all}"
    );
    let history: Vec<(String, bool)> = all["tool_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["tool_name"].as_str().unwrap().to_owned(),
                h["success"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        history,
        [
            ("memory_search".to_owned(), true),
            ("file_read".to_owned(), false)
        ]
    );
    let agent = env
        .call("alice", "getContext", json!({"context_type": "agent"}))
        .await
        .unwrap();
    assert_eq!(agent["agent_id"], "alice");
    assert_eq!(agent["agent_memory_usage"]["tokens_used"], 1761, "{agent}");
    assert!(agent.get("memory_usage").is_none(), "{agent}");
    // Another user's context never shows alice's session history.
    let bob = env
        .call("bob", "getContext", json!({"include_history": true}))
        .await
        .unwrap();
    assert_eq!(bob["tool_history"], json!([]));
    assert_eq!(
        bob["memory_usage"],
        json!({"tokens_used": 0, "usd_spent": 0.0})
    );
}
