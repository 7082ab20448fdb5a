//! The categorized dialect's `search_memories` returns what is about the query and not the rest
//! of the memory (issue 35, item 8): over a real libSQL file embedding with the shipped model, a
//! memory sharing a word with the query is found, unrelated memories are not, and a query about
//! nothing stored finds nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::sync::Arc;

use memory::{MemoryRetrieval, MemoryStore};
use serde_json::json;
use tools::{ToolRegistry, ToolSet};
use types::{MemoryDialect, SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths};

const NOTES: [(&str, &str); 6] = [
    ("preference", "Alice prefers an aisle seat on long flights"),
    ("fact", "The car needs new winter tyres before November"),
    (
        "fact",
        "Bob's birthday is on the 3rd of March; he likes board games",
    ),
    (
        "fact",
        "The wifi password is written on the back of the fridge calendar",
    ),
    ("fact", "Dentist appointment moved to Thursday at 9am"),
    ("preference", "Alice's favourite tea is a smoky oolong"),
];

async fn search(registry: &ToolRegistry, ctx: &ToolExecutionContext, query: &str) -> String {
    let out = registry
        .execute(
            "search_memories",
            &json!({ "query": query }).to_string(),
            ctx,
        )
        .await;
    assert!(out.ok, "{}", out.output);
    out.output
}

/// A real store embedding with the shipped model, the categorized dialect's tools over it, and
/// alice's context.
async fn categorized(dir: &std::path::Path) -> (MemoryStore, ToolRegistry, ToolExecutionContext) {
    let embedder = memory::embedding::BuiltinEmbedder::new(16).unwrap();
    let store = MemoryStore::open(
        memory::Target::File(&dir.join("ws/alice/.oxydra/memory.db")),
        memory::OpenOptions::with_embedder(Arc::new(embedder)),
    )
    .await
    .unwrap();
    let memory: Arc<dyn MemoryRetrieval> = Arc::new(store.clone());
    let mut registry = ToolRegistry::default();
    for tool in ToolSet::new(Some(memory))
        .memory_tools(MemoryDialect::Categorized)
        .tools()
        .unwrap()
    {
        registry.register(tool).unwrap();
    }
    let user = UserId::parse("alice").unwrap();
    let ctx = ToolExecutionContext::new(
        user.clone(),
        SessionId::parse("chat-1").unwrap(),
        TurnId::parse("turn-1").unwrap(),
        WorkspacePaths::for_user(&dir.join("ws"), &user),
    );
    (store, registry, ctx)
}

#[tokio::test]
async fn search_memories_leaves_out_memories_unrelated_to_the_query() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, registry, ctx) = categorized(dir.path()).await;
    for (category, content) in NOTES {
        let out = registry
            .execute(
                "store_memory",
                &json!({ "category": category, "content": content }).to_string(),
                &ctx,
            )
            .await;
        assert!(out.ok, "{}", out.output);
    }

    for (query, expected) in [
        (
            "seat",
            "Found 1 memory for 'seat':\n- [preference] Alice prefers an aisle seat on long flights",
        ),
        (
            "winter tyres",
            "Found 1 memory for 'winter tyres':\n- [fact] The car needs new winter tyres before November",
        ),
        (
            "recommend a hotel in Lisbon",
            "No memories found for 'recommend a hotel in Lisbon'.",
        ),
        // A related word of the query's (the builtin model's nearest words) counts as shared.
        (
            "tires",
            "Found 1 memory for 'tires':\n- [fact] The car needs new winter tyres before November",
        ),
        (
            "chair",
            "Found 1 memory for 'chair':\n- [preference] Alice prefers an aisle seat on long flights",
        ),
    ] {
        assert_eq!(search(&registry, &ctx, query).await, expected, "{query}");
    }
    // Both of Alice's memories share her name with the query; nothing else does.
    let alice = search(&registry, &ctx, "Alice").await;
    assert!(alice.starts_with("Found 2 memories"), "{alice}");
    assert!(
        alice.contains("aisle seat") && alice.contains("oolong"),
        "{alice}"
    );
}

/// Words about time rank the memories of that time first, as `memory_search` does (issue 38 §3).
#[tokio::test]
async fn a_time_in_the_query_ranks_memories_of_that_time_first() {
    let dir = tempfile::tempdir().unwrap();
    let (store, registry, ctx) = categorized(dir.path()).await;
    let now = chrono::Utc::now();
    let note = |content: &str, days_ago: i64| memory::ExportedNote {
        note_id: types::NoteId::from_uuid_str(&format!("00000000-0000-4000-8000-{days_ago:012}"))
            .unwrap(),
        content: content.into(),
        metadata: memory::NoteMetadata::default(),
        created_at: now - chrono::Duration::days(days_ago),
        updated_at: now - chrono::Duration::days(days_ago),
    };
    let old = "Dentist appointment for the user, dentist on Main street";
    let recent = "Dentist appointment booked for the user";
    store
        .import(
            &ctx.user_id,
            None,
            vec![note(old, 400), note(recent, 2)],
            memory::Similar::Unchecked,
            None,
        )
        .await
        .unwrap();
    let first = |out: &str| out.lines().nth(1).unwrap_or_default().to_owned();
    let plain = search(&registry, &ctx, "dentist appointment").await;
    assert!(first(&plain).ends_with(old), "{plain}");
    let this_week = search(&registry, &ctx, "dentist appointment in the past week").await;
    assert!(this_week.starts_with("Found 2 memories"), "{this_week}");
    assert!(first(&this_week).ends_with(recent), "{this_week}");
}
