//! Organised memory through the registry, over real libSQL files: the notes tools' optional
//! category, tags and expiry; the categorized dialect's schemas and texts against the peer
//! document (`spec/peer-categorized-memory-tools.md`); and one store under both dialects.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::sync::Arc;

use chrono::{Duration, Utc};
use memory::{Category, MemoryRetrieval, MemoryStore, NoteMetadata};
use serde_json::{Value, json};
use tools::{ToolOutcome, ToolRegistry, ToolSet};
use types::{MemoryDialect, SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths};

use crate::common::memory_env::alice_store;

struct Env {
    _dir: tempfile::TempDir,
    store: MemoryStore,
    registry: ToolRegistry,
    root: std::path::PathBuf,
}

/// Both dialects registered over one store (names do not overlap).
async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = alice_store(dir.path()).await;
    let memory: Arc<dyn MemoryRetrieval> = Arc::new(store.clone());
    let mut registry = ToolRegistry::default();
    for dialect in [MemoryDialect::Notes, MemoryDialect::Categorized] {
        let set = ToolSet::new(Some(memory.clone())).memory_tools(dialect);
        for tool in set.tools().unwrap() {
            registry.register(tool).unwrap();
        }
    }
    let root = dir.path().join("ws");
    Env {
        _dir: dir,
        store,
        registry,
        root,
    }
}

impl Env {
    async fn call(&self, user: &str, tool: &str, args: Value) -> ToolOutcome {
        let user = UserId::parse(user).unwrap();
        let ctx = ToolExecutionContext::new(
            user.clone(),
            SessionId::parse("chat-1").unwrap(),
            TurnId::parse("turn-1").unwrap(),
            WorkspacePaths::for_user(&self.root, &user),
        );
        self.registry.execute(tool, &args.to_string(), &ctx).await
    }

    async fn ok(&self, user: &str, tool: &str, args: Value) -> String {
        let out = self.call(user, tool, args).await;
        assert!(out.ok, "{tool} failed: {}", out.output);
        out.output
    }

    async fn json(&self, user: &str, tool: &str, args: Value) -> Value {
        serde_json::from_str(&self.ok(user, tool, args).await).unwrap()
    }
}

/// The peer document's `tools` array, verbatim.
fn peer_tools() -> Value {
    json!([
      { "name": "store_memory",
        "description": "Store important information in my long-term memory for future use.\nUse this tool to remember:\n- Facts: Concrete information about APIs, data formats, configurations, etc.\n- Patterns: Recurring behaviors or trends I've observed\n- Preferences: User preferences or system settings I've learned\n- Capabilities: My own abilities or limitations I've discovered\n\nThis memory persists across conversations and helps me improve over time.",
        "parameters": {
          "type": "object",
          "properties": {
            "category": {
              "type": "string",
              "enum": ["fact", "pattern", "preference", "capability"],
              "description": "Type of memory: fact (concrete info), pattern (observed behavior), preference (learned preference), capability (my ability/limitation)"
            },
            "content": { "type": "string", "description": "The information to remember. Be specific and concise." },
            "context": { "type": "string", "description": "Optional context about when/why this is important" },
            "confidence": {
              "type": "number", "minimum": 0.0, "maximum": 1.0, "default": 1.0,
              "description": "Confidence level in this memory (0.0 to 1.0)"
            }
          },
          "required": ["category", "content"]
        } },
      { "name": "search_memories",
        "description": "Search my long-term memory for information relevant to the current conversation.\nUse this tool when you need to recall:\n- Previous facts you've learned\n- Patterns you've observed\n- User preferences you've discovered\n- Your own capabilities or limitations\n\nThe search looks through all your stored memories to find relevant information.",
        "parameters": {
          "type": "object",
          "properties": {
            "query": { "type": "string", "description": "Search query to find relevant memories. Use keywords related to what you're looking for." },
            "limit": {
              "type": "integer", "minimum": 1, "maximum": 20, "default": 10,
              "description": "Maximum number of memories to retrieve"
            }
          },
          "required": ["query"]
        } },
      { "name": "list_memories",
        "description": "List my memories organized by category.\nUse this tool to browse what you've learned in different areas:\n- Facts: Concrete information you've stored\n- Patterns: Behavioral patterns you've observed\n- Preferences: User or system preferences you've learned\n- Capabilities: Your own abilities or limitations you've discovered\n\nThis helps you understand what knowledge you have available.",
        "parameters": {
          "type": "object",
          "properties": {
            "category": {
              "type": "string",
              "enum": ["fact", "pattern", "preference", "capability"],
              "description": "Category of memories to list (all categories when absent)"
            },
            "limit": {
              "type": "integer", "minimum": 1, "maximum": 50, "default": 20,
              "description": "Maximum number of memories to retrieve"
            }
          },
          "required": []
        } }
    ])
}

#[test]
fn the_categorized_dialect_offers_exactly_the_peer_schemas() {
    // The peer's schemas, but for list_memories' category: absent lists every category (issue 35).
    let tools = ToolSet::new(None)
        .memory_tools(MemoryDialect::Categorized)
        .tools()
        .unwrap();
    let offered: Vec<Value> = tools
        .iter()
        .map(|t| json!({ "name": t.name(), "description": t.description(), "parameters": t.parameters() }))
        .collect();
    assert_eq!(Value::Array(offered), peer_tools());
}

#[tokio::test]
async fn categorized_answers_use_the_peer_texts() {
    let env = env().await;
    let stored = env
        .ok(
            "alice",
            "store_memory",
            json!({ "category": "fact", "content": "API endpoint is https://api.example.com/v1",
                    "context": "API integration discussion" }),
        )
        .await;
    assert_eq!(
        stored,
        "Stored fact memory: API endpoint is https://api.example.com/v1"
    );
    let bad = env
        .call(
            "alice",
            "store_memory",
            json!({ "category": "invalid_category", "content": "x" }),
        )
        .await;
    assert!(!bad.ok);
    assert_eq!(
        bad.output,
        "Failed to store memory: Invalid category 'invalid_category'"
    );
    env.ok("alice", "store_memory", json!({ "category": "pattern", "content": "Users often ask about API authentication", "context": "User assistance patterns" })).await;
    env.ok(
        "alice",
        "store_memory",
        json!({ "category": "preference", "content": "User prefers detailed API examples" }),
    )
    .await;

    let found = env
        .ok("alice", "search_memories", json!({ "query": "API" }))
        .await;
    let mut lines = found.lines();
    assert_eq!(lines.next(), Some("Found 3 memories for 'API':"));
    let rest: Vec<&str> = lines.collect();
    for expected in [
        "- [fact] API endpoint is https://api.example.com/v1",
        "  Context: API integration discussion",
        "- [pattern] Users often ask about API authentication",
        "  Context: User assistance patterns",
        "- [preference] User prefers detailed API examples",
    ] {
        assert!(rest.contains(&expected), "{expected:?} in {found}");
    }
    // Each Context line follows its own memory.
    let at = rest.iter().position(|l| l.starts_with("- [fact]")).unwrap();
    assert_eq!(rest[at + 1], "  Context: API integration discussion");

    let listed = env
        .ok("alice", "list_memories", json!({ "category": "fact" }))
        .await;
    assert_eq!(
        listed,
        "My fact memories (1 total):\n- API endpoint is https://api.example.com/v1\n  Context: API integration discussion"
    );
    let limited = env
        .ok(
            "alice",
            "store_memory",
            json!({ "category": "fact", "content": "PostgreSQL default port is 5432" }),
        )
        .await;
    assert!(limited.starts_with("Stored fact memory:"));
    let one = env
        .ok(
            "alice",
            "list_memories",
            json!({ "category": "fact", "limit": 1 }),
        )
        .await;
    assert_eq!(
        one,
        "My fact memories (2 total):\n- PostgreSQL default port is 5432"
    );
    // Without a category: every category, each memory marked with its own.
    let all = env.ok("alice", "list_memories", json!({})).await;
    assert!(all.starts_with("My memories ("), "{all}");
    assert!(
        all.contains("\n- [fact] PostgreSQL default port is 5432"),
        "{all}"
    );
    let bad = env
        .call("alice", "list_memories", json!({ "category": "mood" }))
        .await;
    assert_eq!(
        bad.output,
        "Failed to list memories: Invalid category 'mood'"
    );
    // Bounds still hold: the peer's limit maximum.
    assert!(
        !env.call(
            "alice",
            "list_memories",
            json!({ "category": "fact", "limit": 51 })
        )
        .await
        .ok
    );
    // Nobody else sees them.
    assert_eq!(
        env.ok("bob", "list_memories", json!({ "category": "fact" }))
            .await,
        "My fact memories (0 total):"
    );
    assert_eq!(
        env.ok("bob", "search_memories", json!({ "query": "API" }))
            .await,
        "No memories found for 'API'."
    );
}

#[tokio::test]
async fn a_note_stored_through_one_dialect_is_found_through_the_other() {
    let env = env().await;
    env.ok("alice", "store_memory", json!({ "category": "preference", "content": "Alice prefers window seats", "confidence": 0.8 })).await;
    let found = env
        .json("alice", "memory_search", json!({ "query": "window seats" }))
        .await;
    let hit = &found["results"][0];
    assert_eq!(hit["text"], "Alice prefers window seats");
    assert_eq!(hit["category"], "preference");

    env.ok(
        "alice",
        "memory_save",
        json!({ "content": "Alice's cat is Whiskers", "category": "fact", "tags": ["pets"] }),
    )
    .await;
    let listed = env
        .ok("alice", "list_memories", json!({ "category": "fact" }))
        .await;
    assert_eq!(
        listed,
        "My fact memories (1 total):\n- Alice's cat is Whiskers"
    );
    let found = env
        .ok("alice", "search_memories", json!({ "query": "Whiskers" }))
        .await;
    assert!(
        found.contains("- [fact] Alice's cat is Whiskers"),
        "{found}"
    );
    // A note saved without a category shows as a plain note in the categorized dialect.
    env.ok(
        "alice",
        "memory_save",
        json!({ "content": "Alice plays the oboe" }),
    )
    .await;
    let found = env
        .ok("alice", "search_memories", json!({ "query": "oboe" }))
        .await;
    assert!(found.contains("- [note] Alice plays the oboe"), "{found}");
}

#[tokio::test]
async fn the_notes_tools_take_category_tags_and_expiry() {
    let env = env().await;
    let saved = env
        .json("alice", "memory_save", json!({ "content": "Alice is in Kyoto this week", "category": "fact", "tags": ["travel"], "expires_in": "7d" }))
        .await;
    let id = saved["note_id"].as_str().unwrap().to_owned();
    env.ok("alice", "memory_save", json!({ "content": "Alice likes Kyoto temples", "category": "preference", "tags": ["travel", "culture"] })).await;

    let facts = env
        .json(
            "alice",
            "memory_search",
            json!({ "query": "Kyoto", "category": "fact" }),
        )
        .await;
    let results = facts["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{facts}");
    assert_eq!(results[0]["category"], "fact");
    assert_eq!(results[0]["tags"], json!(["travel"]));
    let culture = env
        .json(
            "alice",
            "memory_search",
            json!({ "query": "Kyoto", "tags": ["culture"] }),
        )
        .await;
    assert_eq!(culture["results"].as_array().unwrap().len(), 1, "{culture}");
    let note = env
        .store
        .get_note(
            &UserId::parse("alice").unwrap(),
            &types::NoteId::parse(&id).unwrap(),
        )
        .await
        .unwrap();
    let expires = note.metadata.expires_at.unwrap();
    assert!(expires > Utc::now() + Duration::days(6) && expires <= Utc::now() + Duration::days(7));

    // Update the category: found under the new one only.
    let version = results[0]["version"].as_str().unwrap();
    env.ok("alice", "memory_update", json!({ "note_id": id, "content": "Alice is in Kyoto this week", "version": version, "category": "pattern" })).await;
    let facts = env
        .json(
            "alice",
            "memory_search",
            json!({ "query": "Kyoto", "category": "fact" }),
        )
        .await;
    assert_eq!(facts["results"], json!([]));
    let patterns = env
        .json(
            "alice",
            "memory_search",
            json!({ "query": "Kyoto", "category": "pattern" }),
        )
        .await;
    assert_eq!(
        patterns["results"][0]["tags"],
        json!(["travel"]),
        "tags kept"
    );

    // Bad values are refused with the field named; nothing is saved.
    for args in [
        json!({ "content": "x", "category": "mood" }),
        json!({ "content": "x", "expires_in": "soon" }),
        json!({ "content": "x", "expires_at": "2001-01-01T00:00:00Z" }),
        json!({ "content": "x", "tags": [""] }),
    ] {
        assert!(
            !env.call("alice", "memory_save", args.clone()).await.ok,
            "{args}"
        );
    }
    assert_eq!(
        env.store
            .list_notes(&UserId::parse("alice").unwrap())
            .await
            .unwrap()
            .len(),
        2
    );

    // An expired note is never returned, by either dialect.
    let alice = UserId::parse("alice").unwrap();
    let expired = NoteMetadata {
        category: Some(Category::Fact),
        expires_at: Some(Utc::now() - Duration::seconds(1)),
        ..NoteMetadata::default()
    };
    env.store
        .save(
            &alice,
            None,
            "Alice's Kyoto hotel is the Hanaya",
            expired,
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    let found = env
        .json("alice", "memory_search", json!({ "query": "Hanaya hotel" }))
        .await;
    assert!(!found.to_string().contains("is the Hanaya"), "{found}");
    let found = env
        .ok(
            "alice",
            "search_memories",
            json!({ "query": "Hanaya hotel" }),
        )
        .await;
    assert!(!found.contains("is the Hanaya"), "{found}");
    let listed = env
        .ok("alice", "list_memories", json!({ "category": "fact" }))
        .await;
    assert_eq!(listed, "My fact memories (0 total):");
}
