//! The memory tools inside the turn loop (review finding F3), over the scripted server and a real
//! libSQL file: the plan's save → search → update → delete roundtrip across two sessions of one
//! user, driven by the model's tool calls, in both wire formats; recall; restart.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{call, ctx, memory_registry, open_store, provider, run, runtime, tool_result};
use runtime::{TurnEvent, TurnStatus};
use serde_json::{Value, json};
use test_support::{ScriptedLlm, ScriptedReply};
use types::{Message, ProviderKind, RuntimeConfig, SessionId};

const MEMORY_TOOLS: [&str; 4] = [
    "memory_delete",
    "memory_save",
    "memory_search",
    "memory_update",
];

/// The search results the model saw: `(note_id, text)` per hit.
fn hits(result: &str) -> Vec<(String, String)> {
    let page: Value = serde_json::from_str(result).expect("search result is a JSON object");
    let rows = page["results"].as_array().expect("with a results array");
    rows.iter()
        .map(|r| {
            (
                r["note_id"].as_str().unwrap_or_default().to_owned(),
                r["text"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

async fn roundtrip(kind: ProviderKind) {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir.path().join("alice/.oxydra/memory.db")).await;
    let server = ScriptedLlm::start().await;
    let rt = runtime(
        provider(&server, kind),
        memory_registry(&store, vec![]),
        RuntimeConfig::default(),
    )
    .with_memory(store.clone());
    let root = dir.path();

    // Session A: the model saves a note.
    server.push_all([
        call(
            "c1",
            "memory_save",
            json!({"content": "User's name is Shantanu"}),
        ),
        ScriptedReply::text("Nice to meet you, Shantanu."),
    ]);
    let (outcome, _) = run(&rt, &ctx(root, "alice", "chat-a", "t1"), "Hi, I'm Shantanu").await;
    assert_eq!(outcome.unwrap().status, TurnStatus::Completed);
    let saved: Value =
        serde_json::from_str(&tool_result(&server.last_request().unwrap(), "c1").unwrap()).unwrap();
    let note_id = saved["note_id"]
        .as_str()
        .expect("save returns a note_id")
        .to_owned();
    assert!(saved["message"].as_str().unwrap().starts_with("Saved."));

    // Session B, same user: search finds it (and recall already showed it, as quoted data).
    server.push_all([
        call("c2", "memory_search", json!({"query": "user's name"})),
        ScriptedReply::text("You are Shantanu."),
    ]);
    let b = |turn| ctx(root, "alice", "chat-b", turn);
    let (outcome, _) = run(&rt, &b("t2"), "What is my name?").await;
    assert_eq!(outcome.unwrap().message, "You are Shantanu.");
    let requests = server.requests();
    let first_of_b = &requests[requests.len() - 2];
    let system = first_of_b.system_prompt().unwrap();
    assert!(
        !system.contains("Shantanu"),
        "recalled notes are not part of the instructions: {system}"
    );
    let users = first_of_b.user_texts().join("\n");
    assert!(
        users.contains(&format!(r#""note_id":"{note_id}""#))
            && users.contains(r#""text":"User's name is Shantanu""#),
        "recalled note quoted before the user's message: {users}"
    );
    assert!(
        first_of_b
            .messages()
            .iter()
            .all(|m| !m.to_string().contains("Hi, I'm Shantanu")),
        "session B does not see session A's messages"
    );
    let found = hits(&tool_result(&server.last_request().unwrap(), "c2").unwrap());
    assert_eq!(
        found,
        vec![(note_id.clone(), "User's name is Shantanu".to_owned())]
    );

    // Update by note_id; the search shows only the new text.
    server.push_all([
        call(
            "c3",
            "memory_update",
            json!({
                "note_id": note_id,
                "content": "User prefers to be called SG",
                "version": memory::edit_token("User's name is Shantanu"),
            }),
        ),
        ScriptedReply::text("Got it, SG."),
        call(
            "c4",
            "memory_search",
            json!({"query": "what is the user called"}),
        ),
        ScriptedReply::text("You like to be called SG."),
    ]);
    run(&rt, &b("t3"), "Please call me SG instead")
        .await
        .0
        .unwrap();
    let updated: Value =
        serde_json::from_str(&tool_result(&server.last_request().unwrap(), "c3").unwrap()).unwrap();
    assert_eq!(updated["note_id"], json!(note_id));
    run(&rt, &b("t4"), "What do you call me?").await.0.unwrap();
    let found = hits(&tool_result(&server.last_request().unwrap(), "c4").unwrap());
    assert_eq!(
        found,
        vec![(note_id.clone(), "User prefers to be called SG".to_owned())]
    );

    // Delete; the search finds nothing.
    server.push_all([
        call("c5", "memory_delete", json!({"note_id": note_id})),
        ScriptedReply::text("Forgotten."),
        call("c6", "memory_search", json!({"query": "called SG"})),
        ScriptedReply::text("I don't know what to call you."),
    ]);
    run(&rt, &b("t5"), "Forget what I asked to be called")
        .await
        .0
        .unwrap();
    let deleted = tool_result(&server.last_request().unwrap(), "c5").unwrap();
    assert!(deleted.contains("Deleted."), "{deleted}");
    run(&rt, &b("t6"), "What do you call me?").await.0.unwrap();
    let found = hits(&tool_result(&server.last_request().unwrap(), "c6").unwrap());
    assert_eq!(found, vec![]);

    // Every request offered the four memory tools.
    for request in server.requests() {
        let names = request.tool_names();
        for tool in MEMORY_TOOLS {
            assert!(names.iter().any(|n| n == tool), "{tool} offered: {names:?}");
        }
    }
    // The memory guide is in the built-in prompt.
    assert!(rt.system_prompt().contains("memory_search"));
}

#[tokio::test]
async fn memory_roundtrip_across_sessions_openai() {
    roundtrip(ProviderKind::Openai).await;
}

#[tokio::test]
async fn memory_roundtrip_across_sessions_anthropic() {
    roundtrip(ProviderKind::Anthropic).await;
}

#[tokio::test]
async fn memory_tool_schemas_reach_the_provider_in_both_formats() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&dir.path().join("m.db")).await;
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::text("hello"));
        let rt = runtime(
            provider(&server, kind),
            memory_registry(&store, vec![]),
            RuntimeConfig::default(),
        )
        .with_memory(store);
        run(&rt, &ctx(dir.path(), "alice", "s", "t"), "hi")
            .await
            .0
            .unwrap();
        let request = server.last_request().unwrap();
        assert_eq!(
            request.tool_names(),
            MEMORY_TOOLS.map(String::from).to_vec()
        );
        let tools = request.body["tools"].as_array().unwrap();
        let search = tools
            .iter()
            .find(|t| t["name"] == "memory_search" || t["function"]["name"] == "memory_search")
            .unwrap();
        let schema = match kind {
            ProviderKind::Openai => &search["function"]["parameters"],
            ProviderKind::Anthropic => &search["input_schema"],
        };
        assert_eq!(schema["required"], json!(["query"]), "{kind:?}: {search}");
    }
}

#[tokio::test]
async fn restart_resumes_the_conversation_from_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("alice/.oxydra/memory.db");
    let server = ScriptedLlm::start().await;
    let c = ctx(dir.path(), "alice", "chat", "t1");
    {
        let store = open_store(&db).await;
        let rt = runtime(
            provider(&server, ProviderKind::Openai),
            memory_registry(&store, vec![]),
            RuntimeConfig::default(),
        )
        .with_memory(store);
        server.push_all([
            call(
                "c1",
                "memory_save",
                json!({"content": "User likes green tea"}),
            ),
            ScriptedReply::text("Noted: green tea."),
        ]);
        run(&rt, &c, "I like green tea").await.0.unwrap();
    }
    // A new runtime over the same file continues the conversation.
    let store = open_store(&db).await;
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        memory_registry(&store, vec![]),
        RuntimeConfig::default(),
    )
    .with_memory(store.clone());
    server.push(ScriptedReply::text("Green tea."));
    let (outcome, events) = run(
        &rt,
        &ctx(dir.path(), "alice", "chat", "t2"),
        "What do I like?",
    )
    .await;
    assert_eq!(outcome.unwrap().message, "Green tea.");
    assert!(matches!(
        events.last(),
        Some(TurnEvent::TurnCompleted { .. })
    ));
    let sent = server.last_request().unwrap();
    let roles: Vec<&str> = sent
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    common::assert_well_formed_openai(&sent);
    assert_eq!(sent.last_user_text().as_deref(), Some("What do I like?"));

    // What is stored: every message of both turns, in order.
    let session = SessionId::parse("chat").unwrap();
    let stored = rt.history(&session, 100).await.unwrap();
    assert_eq!(stored.len(), 6);
    assert_eq!(stored[0], Message::user("I like green tea"));
    assert_eq!(stored[5], Message::assistant("Green tea."));
}

#[tokio::test]
async fn without_memory_the_agent_still_chats_with_history_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        common::registry(vec![]),
        RuntimeConfig::default(),
    );
    assert!(
        !rt.system_prompt().contains("memory_search"),
        "no memory guide without memory tools"
    );
    server.push_all([
        ScriptedReply::text("Hello!"),
        ScriptedReply::text("You said hi."),
    ]);
    run(&rt, &ctx(dir.path(), "bob", "s1", "t1"), "hi")
        .await
        .0
        .unwrap();
    run(&rt, &ctx(dir.path(), "bob", "s1", "t2"), "what did I say?")
        .await
        .0
        .unwrap();
    let sent = server.last_request().unwrap();
    let roles: Vec<&str> = sent
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    // Another user cannot continue bob's session.
    let err = run(&rt, &ctx(dir.path(), "eve", "s1", "t3"), "hi")
        .await
        .0
        .unwrap_err();
    assert_eq!(err.to_string(), "session s1 belongs to another user");
}

/// The runtime gives each call its id: a call the model sends again under the same id (a retry
/// after a lost reply) is answered with the first result and never saves a second note.
#[tokio::test]
async fn a_call_sent_again_with_the_same_id_saves_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir.path().join("alice/.oxydra/memory.db")).await;
    let server = ScriptedLlm::start().await;
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        memory_registry(&store, vec![]),
        RuntimeConfig::default(),
    )
    .with_memory(store.clone());
    let save = || {
        call(
            "call_retry",
            "memory_save",
            json!({"content": "Favourite tea is genmaicha"}),
        )
    };
    server.push_all([save(), ScriptedReply::text("Saved.")]);
    let c = |turn| ctx(dir.path(), "alice", "chat-a", turn);
    run(&rt, &c("t1"), "Remember my tea").await.0.unwrap();
    let first: Value =
        serde_json::from_str(&tool_result(&server.last_request().unwrap(), "call_retry").unwrap())
            .unwrap();
    server.push_all([save(), ScriptedReply::text("Saved again?")]);
    run(&rt, &c("t2"), "Did you save it?").await.0.unwrap();
    // The newest tool result of the last request (both answers carry the same call id).
    let last = server.last_request().unwrap();
    let messages = last.messages();
    let newest = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap();
    let second: Value = serde_json::from_str(newest).unwrap();
    assert_eq!(second["note_id"], first["note_id"]);
    assert!(
        second["message"]
            .as_str()
            .unwrap()
            .contains("earlier attempt"),
        "{second}"
    );
    let alice = types::UserId::parse("alice").unwrap();
    assert_eq!(store.list_notes(&alice).await.unwrap().len(), 1);
}
