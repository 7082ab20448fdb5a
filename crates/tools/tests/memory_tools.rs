//! The four memory tools through the registry, over real libSQL files: Step 10 of the plan and
//! the review findings (F1 per-call context, F2 include_conversation, F5 skipped leg, F9, F10).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::sync::Arc;

use async_trait::async_trait;
use memory::{
    CallKey, HashEmbedder, HybridQuery, MemoryError, MemoryRetrieval, MemoryStore, Note,
    NoteMetadata, SearchHit, WriteReceipt,
};
use serde_json::{Value, json};
use tools::{ToolOutcome, ToolRegistry, memory_tools, register_memory_tools};
use types::{
    Message, NoteId, RetrievalConfig, SafetyTier, SessionId, ToolExecutionContext, TurnId, UserId,
    WorkspacePaths,
};

struct Env {
    _dir: tempfile::TempDir,
    store: MemoryStore,
    registry: ToolRegistry,
    root: std::path::PathBuf,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::open_local(
        &dir.path().join("ws/alice/.oxydra/memory.db"),
        Arc::new(HashEmbedder::new(256)),
    )
    .await
    .unwrap();
    let registry = registry_over(Some(Arc::new(store.clone())));
    let root = dir.path().join("ws");
    Env {
        _dir: dir,
        store,
        registry,
        root,
    }
}

fn registry_over(memory: Option<Arc<dyn MemoryRetrieval>>) -> ToolRegistry {
    let mut registry = ToolRegistry::default();
    for tool in memory_tools(memory, &RetrievalConfig::default()) {
        registry.register(tool).unwrap();
    }
    registry
}

fn ctx(root: &std::path::Path, user: &str, session: &str) -> ToolExecutionContext {
    let user = UserId::parse(user).unwrap();
    ToolExecutionContext::new(
        user.clone(),
        SessionId::parse(session).unwrap(),
        TurnId::parse("turn-1").unwrap(),
        WorkspacePaths::for_user(root, &user),
    )
}

impl Env {
    async fn call(&self, user: &str, session: &str, tool: &str, args: Value) -> ToolOutcome {
        self.registry
            .execute(tool, &args.to_string(), &ctx(&self.root, user, session))
            .await
    }

    async fn ok(&self, user: &str, tool: &str, args: Value) -> Value {
        let out = self.call(user, "chat-1", tool, args).await;
        assert!(out.ok, "{tool} failed: {}", out.output);
        serde_json::from_str(&out.output).unwrap_or_else(|_| panic!("not JSON: {}", out.output))
    }

    async fn save(&self, user: &str, content: &str) -> String {
        let v = self
            .ok(user, "memory_save", json!({ "content": content }))
            .await;
        v["note_id"].as_str().unwrap().to_owned()
    }

    async fn search(&self, user: &str, query: &str) -> Vec<Value> {
        let v = self
            .ok(user, "memory_search", json!({ "query": query }))
            .await;
        v["results"].as_array().unwrap().clone()
    }

    async fn note_count(&self, user: &str) -> usize {
        self.store
            .list_notes(&UserId::parse(user).unwrap())
            .await
            .unwrap()
            .len()
    }
}

fn texts(hits: &[Value]) -> Vec<&str> {
    hits.iter().map(|h| h["text"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn schemas_tiers_timeouts_and_descriptions_follow_the_plan() {
    let tools = memory_tools(None, &RetrievalConfig::default());
    type Row<'a> = (String, SafetyTier, u64, Vec<&'a str>, Vec<&'a str>);
    let table: Vec<Row> = vec![
        (
            "memory_search".into(),
            SafetyTier::ReadOnly,
            15,
            vec!["query", "top_k", "include_conversation", "category", "tags"],
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
    assert!(hits[0]["created_at"].as_str().unwrap().ends_with('Z'));
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
    let mut empty = ToolRegistry::default();
    assert_eq!(
        register_memory_tools(&mut empty, None, &RetrievalConfig::default()).unwrap(),
        0
    );
    assert!(empty.names().is_empty());
}

#[tokio::test]
async fn include_conversation_merges_labels_and_dedups() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    let id = env.save("alice", "The user's cat is called Miso").await;
    let chat = SessionId::parse("chat-1").unwrap();
    env.store
        .append_message(
            &chat,
            &alice,
            &Message::user("my cat Miso loves tuna treats"),
        )
        .await
        .unwrap();
    // Said in chat and saved as a note: returned once, as the note.
    env.store
        .append_message(
            &chat,
            &alice,
            &Message::user("The user's cat is called Miso"),
        )
        .await
        .unwrap();
    // Another session's message is not part of this turn's conversation.
    let other = SessionId::parse("chat-2").unwrap();
    env.store
        .append_message(
            &other,
            &alice,
            &Message::user("Miso the cat visited the vet"),
        )
        .await
        .unwrap();

    let only_notes = env.search("alice", "Miso cat").await;
    assert_eq!(only_notes.len(), 1);
    assert_eq!(only_notes[0]["source"], "user_memory");

    let merged = env
        .ok(
            "alice",
            "memory_search",
            json!({ "query": "Miso cat tuna", "include_conversation": true }),
        )
        .await;
    let merged = merged["results"].as_array().unwrap();
    let sources: Vec<(&str, &Value)> = merged
        .iter()
        .map(|h| (h["source"].as_str().unwrap(), &h["note_id"]))
        .collect();
    assert_eq!(merged.len(), 2, "{merged:?}");
    assert!(sources.contains(&("user_memory", &json!(id))));
    assert!(sources.contains(&("conversation", &Value::Null)));
    assert!(!texts(merged).contains(&"Miso the cat visited the vet"));
    let scores: Vec<f64> = merged
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "ranked by one score: {scores:?}"
    );
}

/// A store whose multi-session queries fail (the conversation leg), to prove notes still return.
#[derive(Debug)]
struct FailingConversation(MemoryStore);

#[async_trait]
impl MemoryRetrieval for FailingConversation {
    async fn store_note_once(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        c: &str,
        m: NoteMetadata,
    ) -> Result<WriteReceipt, MemoryError> {
        self.0.store_note_once(u, k, c, m).await
    }
    async fn delete_note_once(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        n: &NoteId,
    ) -> Result<WriteReceipt, MemoryError> {
        self.0.delete_note_once(u, k, n).await
    }
    async fn get_note(&self, u: &UserId, n: &NoteId) -> Result<Note, MemoryError> {
        self.0.get_note(u, n).await
    }
    async fn update_note_patched(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        n: &NoteId,
        c: &str,
        v: &str,
        p: memory::MetadataPatch,
    ) -> Result<WriteReceipt, MemoryError> {
        self.0.update_note_patched(u, k, n, c, v, p).await
    }
    async fn list_notes_page(
        &self,
        u: &UserId,
        q: &memory::ListQuery,
    ) -> Result<memory::NotePage, MemoryError> {
        self.0.list_notes_page(u, q).await
    }
    async fn hybrid_query(&self, q: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError> {
        if q.sessions.iter().any(|s| !s.is_user_memory()) {
            return Err(MemoryError::WorkerStopped);
        }
        self.0.hybrid_query(q).await
    }
    async fn put_keyed(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        ns: &str,
        key: &str,
        c: &str,
        m: NoteMetadata,
    ) -> Result<memory::KeyedWrite, MemoryError> {
        self.0.put_keyed(u, k, ns, key, c, m).await
    }
    async fn list_keys(
        &self,
        u: &UserId,
        q: &memory::KeyQuery,
    ) -> Result<memory::KeyPage, MemoryError> {
        self.0.list_keys(u, q).await
    }
    async fn session_info(&self, s: &types::SessionId) -> Result<memory::SessionInfo, MemoryError> {
        self.0.session_info(s).await
    }
    async fn recent_events(
        &self,
        s: &types::SessionId,
        limit: usize,
    ) -> Result<Vec<memory::StoredEvent>, MemoryError> {
        self.0.history(s, None, limit).await
    }
}

#[tokio::test]
async fn a_failed_conversation_leg_still_returns_notes_and_says_so() {
    let env = env().await;
    env.save("alice", "prefers window seats on flights").await;
    let registry = registry_over(Some(Arc::new(FailingConversation(env.store.clone()))));
    let out = registry
        .execute(
            "memory_search",
            &json!({ "query": "window seats", "include_conversation": true }).to_string(),
            &ctx(&env.root, "alice", "chat-1"),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    let out: Value = serde_json::from_str(&out.output).unwrap();
    let hits = out["results"].as_array().unwrap();
    let note = out["note"].as_str().unwrap();
    assert_eq!(texts(hits), vec!["prefers window seats on flights"]);
    assert!(
        note.contains("conversation") && note.contains("skipped"),
        "{note}"
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
