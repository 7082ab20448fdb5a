//! Token usage: the runtime records what each model call used (as both wire formats report it)
//! with the session in the user's store, and `getContext` reports it — the session's tokens and
//! their cost at the configured price, and the user's total over every session.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::sync::Arc;

use crate::common;

use common::{ctx, memory_registry, open_store, provider, run, runtime, tool_result};
use memory::MemoryRetrieval;
use runtime::TurnStatus;
use serde_json::{Value, json};
use test_support::{SCRIPTED_MODEL, ScriptedLlm, ScriptedReply, ScriptedToolCall};
use tools::{ToolRegistry, ToolSet};
use types::{ModelPrice, PricingConfig, ProviderKind, RuntimeConfig};

/// The MCP peer's tools over `memory`, pricing usage with `pricing`.
fn peer(memory: Arc<dyn MemoryRetrieval>, pricing: &PricingConfig) -> Vec<Arc<dyn tools::Tool>> {
    let set = ToolSet::new(Some(memory)).pricing(pricing).peer_mcp();
    set.tools().unwrap()
}

fn priced() -> PricingConfig {
    let price = ModelPrice {
        input_per_mtok: 3.0,
        output_per_mtok: 15.0,
    };
    PricingConfig::from([(SCRIPTED_MODEL.to_owned(), price)])
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-12)
}

async fn usage_reaches_get_context(kind: ProviderKind) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let store = open_store(&root.join("alice/.oxydra/memory.db")).await;
    let memory: Arc<dyn MemoryRetrieval> = Arc::new(store.clone());
    let registry = memory_registry(&store, peer(memory.clone(), &priced()));
    let server = ScriptedLlm::start().await;
    let rt = runtime(
        provider(&server, kind),
        Arc::clone(&registry),
        RuntimeConfig::default(),
    )
    .with_memory(store.clone());

    server.push(ScriptedReply::text("Hello.").with_usage(1200, 300));
    let (outcome, _) = run(&rt, &ctx(root, "alice", "chat-a", "t1"), "hi").await;
    assert_eq!(outcome.unwrap().status, TurnStatus::Completed);
    // The model asks for its context in the next turn: it sees the calls before this one.
    let ask = ScriptedToolCall::new("getContext", json!({})).with_id("c1");
    server.push_all([
        ScriptedReply::tool_calls(vec![ask]).with_usage(1500, 20),
        ScriptedReply::text("Done.").with_usage(1600, 40),
    ]);
    let (outcome, _) = run(&rt, &ctx(root, "alice", "chat-a", "t2"), "usage?").await;
    assert_eq!(outcome.unwrap().status, TurnStatus::Completed);
    let seen: Value =
        serde_json::from_str(&tool_result(&server.last_request().unwrap(), "c1").unwrap()).unwrap();
    let usage = &seen["memory_usage"];
    assert_eq!(usage["tokens_used"], 1200 + 300 + 1500 + 20, "{seen}");
    // (2700 input × $3 + 320 output × $15) per million tokens.
    assert!(close(&usage["usd_spent"], 0.0129), "{seen}");
    assert!(seen.get("usage_note").is_none(), "{seen}");

    // Another session of the same user counts for the agent, not for this session.
    server.push(ScriptedReply::text("Hi again.").with_usage(100, 10));
    run(&rt, &ctx(root, "alice", "chat-b", "t3"), "hello")
        .await
        .0
        .unwrap();
    let call = async |registry: &ToolRegistry, context_type: &str| -> Value {
        let args = json!({"context_type": context_type}).to_string();
        let c = ctx(root, "alice", "chat-a", "t4");
        let out = registry.execute("getContext", &args, &c).await;
        assert!(out.ok, "{}", out.output);
        serde_json::from_str(&out.output).unwrap()
    };
    let all = call(&registry, "all").await;
    assert_eq!(all["memory_usage"]["tokens_used"], 4660, "{all}");
    assert!(
        close(&all["memory_usage"]["usd_spent"], 0.0129 + 0.0054),
        "{all}"
    );
    assert_eq!(all["agent_memory_usage"]["tokens_used"], 4770, "{all}");

    // Without a price the tokens are still counted, and the note says why no money is.
    let unpriced = memory_registry(&store, peer(memory, &PricingConfig::new()));
    let session = call(&unpriced, "session").await;
    assert_eq!(
        session["memory_usage"],
        json!({"tokens_used": 4660, "usd_spent": 0.0})
    );
    let note = session["usage_note"].as_str().unwrap();
    assert!(
        note.contains(SCRIPTED_MODEL) && note.contains("[pricing]"),
        "{note}"
    );
}

#[tokio::test]
async fn openai_usage_is_recorded_and_priced() {
    usage_reaches_get_context(ProviderKind::Openai).await;
}

#[tokio::test]
async fn anthropic_usage_is_recorded_and_priced() {
    usage_reaches_get_context(ProviderKind::Anthropic).await;
}
