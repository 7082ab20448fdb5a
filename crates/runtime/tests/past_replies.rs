//! A fact the user gave only as an answer to the agent's question ("Which team did you sign
//! with?" — "The Minnesota Wolves.") is found in a later session by a search of past
//! conversations, right after the question it answers, though it shares no word with the query:
//! through `memory_search` in both wire formats of the scripted model, and through the user's own
//! search (the gateway's frame, the TUI's `/search`). Real libSQL files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::sync::Arc;

use crate::common;

use common::{ctx, open_store, provider, run};
use runtime::{AgentRuntime, TurnStatus};
use serde_json::{Value, json};
use test_support::{ScriptedLlm, ScriptedReply, ScriptedToolCall};
use types::{ProviderKind, RetrievalConfig, RuntimeConfig};

const KINDS: [ProviderKind; 2] = [ProviderKind::Openai, ProviderKind::Anthropic];

/// What the user says in the first session, with the agent's scripted replies.
const FIRST_SESSION: [(&str, &str); 7] = [
    (
        "The weather was grey all morning, then it cleared up",
        "Sounds like a good afternoon for a walk.",
    ),
    (
        "I repotted the basil and the mint on the balcony",
        "Herbs love a bigger pot.",
    ),
    (
        "My sister is visiting in the spring with her kids",
        "That will be lively!",
    ),
    (
        "We watched a documentary about octopuses last night",
        "They are remarkable animals.",
    ),
    (
        "Big news: I signed with a new basketball team today!",
        "Congratulations! Which team did you sign with?",
    ),
    (
        "The Minnesota Wolves.",
        "A fine team. Good luck this season.",
    ),
    (
        "The bakery on the corner sells rye bread on Fridays",
        "Worth remembering for the weekend.",
    ),
];

async fn agent(kind: ProviderKind, root: &std::path::Path) -> (AgentRuntime, ScriptedLlm) {
    let store = open_store(&root.join("alice/.oxydra/memory.db")).await;
    let registry = tools::ToolSet::new(Some(Arc::new(store.clone())))
        .retrieval(&RetrievalConfig::default())
        .memory_tools(types::MemoryDialect::Notes)
        .registry()
        .unwrap();
    let server = ScriptedLlm::start().await;
    let rt = common::runtime(
        provider(&server, kind),
        Arc::new(registry),
        RuntimeConfig::default(),
    )
    .with_memory(store);
    (rt, server)
}

async fn answer_found_after_its_question(kind: ProviderKind) {
    let dir = tempfile::tempdir().unwrap();
    let (rt, server) = agent(kind, dir.path()).await;
    for (i, (said, reply)) in FIRST_SESSION.iter().enumerate() {
        server.push(ScriptedReply::text(reply));
        let c = ctx(dir.path(), "alice", "chat-a", &format!("t{i}"));
        let (outcome, _) = run(&rt, &c, said).await;
        assert_eq!(outcome.unwrap().status, TurnStatus::Completed);
    }

    // A new session: the model searches past conversations for the team, three results.
    let search = ScriptedToolCall::new(
        "memory_search",
        json!({"query": "Which team did I sign with?", "scope": "conversations", "top_k": 3}),
    )
    .with_id("s1");
    server.push_all([
        ScriptedReply::tool_calls(vec![search]),
        ScriptedReply::text("The Minnesota Wolves."),
    ]);
    let c = ctx(dir.path(), "alice", "chat-b", "t9");
    let (outcome, _) = run(&rt, &c, "Which team did I join again?").await;
    assert_eq!(outcome.unwrap().status, TurnStatus::Completed);
    let last = server.last_request().unwrap();
    let out: Value = serde_json::from_str(&common::tool_result(&last, "s1").unwrap()).unwrap();
    let results = out["results"].as_array().unwrap();
    let text = |r: &Value| r["text"].as_str().unwrap_or_default().to_owned();
    let asked = results
        .iter()
        .position(|r| text(r).contains("Which team did you sign with?"))
        .unwrap_or_else(|| panic!("{kind:?}: the question: {out}"));
    let answer = &results
        .get(asked + 1)
        .unwrap_or_else(|| panic!("{kind:?}: nothing after the question: {out}"));
    assert!(text(answer).contains("Minnesota Wolves"), "{kind:?}: {out}");
    assert_eq!(
        (&answer["speaker"], &answer["session_id"]),
        (&json!("user"), &json!("chat-a"))
    );
    let context = answer["context"].as_array().unwrap();
    assert!(
        context
            .iter()
            .any(|t| t["speaker"] == "assistant"
                && text(t).contains("Which team did you sign with?")),
        "the turns around it show the question: {out}"
    );

    // The user's own search finds it the same way.
    let mine = rt
        .search_conversations(
            &ctx(dir.path(), "alice", "chat-c", "t10"),
            "Which team did I sign with?",
            3,
        )
        .await
        .unwrap()
        .hits;
    assert!(
        mine.iter().any(|h| h.text.contains("Minnesota Wolves")),
        "{kind:?}: {mine:?}"
    );
}

#[tokio::test]
async fn an_answer_to_the_agents_question_is_found_in_a_later_session() {
    for kind in KINDS {
        answer_found_after_its_question(kind).await;
    }
}
