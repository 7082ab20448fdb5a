//! The memory tools' registry over a real libSQL file of one temporary workspace, for the tests
//! of the four memory tools (`memory_tools`, `memory_conversation`).

#![allow(
    clippy::panic,
    reason = "a fixture that cannot be built should fail the test"
)]

use std::sync::Arc;

use memory::{HashEmbedder, MemoryRetrieval, MemoryStore};
use serde_json::{Value, json};
use tools::{ToolOutcome, ToolRegistry, ToolSet};
use types::{MemoryDialect, SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths};

/// Alice's store in the workspace root `<dir>/ws`: `<dir>/ws/alice/.oxydra/memory.db`, a real
/// libSQL file, with the hash embedder (256 dimensions).
pub async fn alice_store(dir: &std::path::Path) -> MemoryStore {
    MemoryStore::open(
        memory::Target::File(&dir.join("ws/alice/.oxydra/memory.db")),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await
    .unwrap()
}

/// A store at `<tmp>/ws/alice/.oxydra/memory.db` and a registry of the memory tools over it.
pub struct Env {
    _dir: tempfile::TempDir,
    pub store: MemoryStore,
    pub registry: ToolRegistry,
    pub root: std::path::PathBuf,
}

pub async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = alice_store(dir.path()).await;
    let registry = registry_over(Some(Arc::new(store.clone())));
    let root = dir.path().join("ws");
    Env {
        _dir: dir,
        store,
        registry,
        root,
    }
}

pub fn registry_over(memory: Option<Arc<dyn MemoryRetrieval>>) -> ToolRegistry {
    let mut registry = ToolRegistry::default();
    for tool in ToolSet::new(memory)
        .memory_tools(MemoryDialect::Notes)
        .tools()
        .unwrap()
    {
        registry.register(tool).unwrap();
    }
    registry
}

pub fn ctx(root: &std::path::Path, user: &str, session: &str) -> ToolExecutionContext {
    let user = UserId::parse(user).unwrap();
    ToolExecutionContext::new(
        user.clone(),
        SessionId::parse(session).unwrap(),
        TurnId::parse("turn-1").unwrap(),
        WorkspacePaths::for_user(root, &user),
    )
}

impl Env {
    pub async fn call(&self, user: &str, session: &str, tool: &str, args: Value) -> ToolOutcome {
        self.registry
            .execute(tool, &args.to_string(), &ctx(&self.root, user, session))
            .await
    }

    pub async fn ok(&self, user: &str, tool: &str, args: Value) -> Value {
        let out = self.call(user, "chat-1", tool, args).await;
        assert!(out.ok, "{tool} failed: {}", out.output);
        serde_json::from_str(&out.output).unwrap_or_else(|_| panic!("not JSON: {}", out.output))
    }

    pub async fn save(&self, user: &str, content: &str) -> String {
        let v = self
            .ok(user, "memory_save", json!({ "content": content }))
            .await;
        v["note_id"].as_str().unwrap().to_owned()
    }

    pub async fn search(&self, user: &str, query: &str) -> Vec<Value> {
        let v = self
            .ok(user, "memory_search", json!({ "query": query }))
            .await;
        v["results"].as_array().unwrap().clone()
    }

    pub async fn note_count(&self, user: &str) -> usize {
        self.store
            .list_notes(&UserId::parse(user).unwrap())
            .await
            .unwrap()
            .len()
    }
}

pub fn texts(hits: &[Value]) -> Vec<&str> {
    hits.iter().map(|h| h["text"].as_str().unwrap()).collect()
}
