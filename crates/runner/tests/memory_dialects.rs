//! Both memory dialects end to end through the real binaries (process tier, real Landlock): the
//! scripted model over real HTTP calls the memory tools through the gateway and the agent, on the
//! user's real database — store with a category, list by category, search filtered, update the
//! category, and an expired note hidden — and `runner tools --json` shows each dialect's catalogue.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use chrono::{Duration, Utc};
use common::{Chat, Setup, StopOnDrop};
use memory::{ListQuery, MemoryStore, MetadataPatch, OpenOptions};
use serde_json::{Value, json};
use test_support::{Need, RecordedRequest, ScriptedLlm, ScriptedReply, ScriptedToolCall};
use types::UserId;

/// The scripted model: a user message `call <tool> <json arguments>` makes that call; once the
/// tool answered, the reply is `done: <tool result>`.
fn respond(req: &RecordedRequest) -> ScriptedReply {
    let text = req.last_user_text().unwrap_or_default();
    let answered = req
        .messages()
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .any(|m| m["role"] == "tool");
    if answered {
        return ScriptedReply::text(&format!(
            "done: {}",
            req.last_tool_result().unwrap_or_default()
        ));
    }
    match text.strip_prefix("call ").and_then(|r| r.split_once(' ')) {
        Some((tool, args)) => ScriptedReply::tool_calls(vec![ScriptedToolCall::raw(tool, args)]),
        None => ScriptedReply::text("hello"),
    }
}

async fn call(chat: &mut Chat, tool: &str, args: Value) -> (bool, String) {
    let turn = chat.turn(&format!("call {tool} {args}")).await;
    assert_eq!(turn.tools.len(), 1, "{turn:?}");
    assert_eq!(turn.tools[0].0, tool);
    let out = turn.message.strip_prefix("done: ").unwrap_or(&turn.message);
    (turn.tools[0].1, out.to_owned())
}

async fn ok(chat: &mut Chat, tool: &str, args: Value) -> String {
    let (ok, out) = call(chat, tool, args).await;
    assert!(ok, "{tool} failed: {out}");
    out
}

/// A second handle on the user's database (like `runner memory`), to expire a note.
async fn expire_all(setup: &Setup, user: &str) {
    let config = runner::load_agent_config(Some(&setup.dir.path().join("agent.toml"))).unwrap();
    let options = OpenOptions {
        legacy_dir: memory::LegacyDir::Skip,
        ..OpenOptions::default()
    };
    let store = MemoryStore::open(
        memory::Target::Config {
            config: &config.memory,
            user_root: &setup.ws(user).root,
        },
        options,
    )
    .await
    .unwrap();
    let user = UserId::parse(user).unwrap();
    let query = ListQuery {
        limit: 50,
        ..ListQuery::default()
    };
    for note in store.list(&user, &query).await.unwrap().notes {
        let version = memory::edit_token(&note.content);
        let patch = MetadataPatch {
            expires_at: Some(Some(Utc::now() - Duration::seconds(1))),
            ..MetadataPatch::default()
        };
        store
            .update(
                &user,
                None,
                &note.note_id,
                &note.content,
                Some(&version),
                patch,
            )
            .await
            .map(|written| written.receipt)
            .unwrap();
    }
}

fn catalogue(setup: &Setup) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["tools", "--json", "--agent-config"])
        .arg(setup.dir.path().join("agent.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .filter(|n| n.contains("memor"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn the_notes_dialect_organises_notes_end_to_end() {
    test_support::need(Need::Landlock);
    let server = ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    assert_eq!(
        catalogue(&setup),
        [
            "memory_search",
            "memory_save",
            "memory_update",
            "memory_delete"
        ]
    );
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;

    let saved = ok(&mut chat, "memory_save", json!({ "content": "Alice prefers green tea", "category": "preference", "tags": ["drinks"] })).await;
    let note_id = serde_json::from_str::<Value>(&saved).unwrap()["note_id"].clone();
    let found = ok(
        &mut chat,
        "memory_search",
        json!({ "query": "green tea", "category": "preference" }),
    )
    .await;
    let found: Value = serde_json::from_str(&found).unwrap();
    let hit = &found["results"][0];
    assert_eq!(
        (&hit["note_id"], &hit["category"], &hit["tags"]),
        (&note_id, &json!("preference"), &json!(["drinks"]))
    );
    ok(&mut chat, "memory_update", json!({ "note_id": note_id, "content": "Alice prefers green tea", "version": hit["version"], "category": "fact" })).await;
    let as_pref = ok(
        &mut chat,
        "memory_search",
        json!({ "query": "green tea", "category": "preference" }),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&as_pref).unwrap()["results"],
        json!([])
    );
    let as_fact = ok(
        &mut chat,
        "memory_search",
        json!({ "query": "green tea", "category": "fact", "tags": ["drinks"] }),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&as_fact).unwrap()["results"][0]["note_id"],
        note_id
    );

    expire_all(&setup, "alice").await;
    let gone = ok(&mut chat, "memory_search", json!({ "query": "green tea" })).await;
    assert_eq!(
        serde_json::from_str::<Value>(&gone).unwrap()["results"],
        json!([]),
        "{gone}"
    );
    setup.runner_ok(&["stop"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn the_categorized_dialect_works_end_to_end() {
    test_support::need(Need::Landlock);
    let server = ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let agent_toml = setup.dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&agent_toml).unwrap();
    text.push_str("[tools]\nmemory = \"categorized\"\n");
    std::fs::write(&agent_toml, text).unwrap();
    assert_eq!(
        catalogue(&setup),
        ["store_memory", "search_memories", "list_memories"]
    );
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;

    let stored = ok(&mut chat, "store_memory", json!({ "category": "fact", "content": "API endpoint is https://api.example.com/v1", "context": "API integration discussion" })).await;
    assert_eq!(
        stored,
        "Stored fact memory: API endpoint is https://api.example.com/v1"
    );
    let offered = server.last_request().unwrap().tool_names();
    assert!(offered.contains(&"list_memories".to_owned()), "{offered:?}");
    assert!(
        offered.iter().all(|n| !n.starts_with("memory_")),
        "{offered:?}"
    );
    let prompt = server
        .last_request()
        .unwrap()
        .system_prompt()
        .unwrap_or_default();
    assert!(
        prompt.contains("store_memory") && !prompt.contains("memory_save"),
        "{prompt}"
    );

    let (ok_bad, bad) = call(
        &mut chat,
        "store_memory",
        json!({ "category": "invalid_category", "content": "x" }),
    )
    .await;
    assert!(!ok_bad);
    assert!(
        bad.contains("Failed to store memory: Invalid category 'invalid_category'"),
        "{bad}"
    );
    ok(
        &mut chat,
        "store_memory",
        json!({ "category": "preference", "content": "User prefers detailed API examples" }),
    )
    .await;

    let listed = ok(&mut chat, "list_memories", json!({ "category": "fact" })).await;
    assert_eq!(
        listed,
        "My fact memories (1 total):\n- API endpoint is https://api.example.com/v1\n  Context: API integration discussion"
    );
    let found = ok(
        &mut chat,
        "search_memories",
        json!({ "query": "API", "limit": 5 }),
    )
    .await;
    assert!(found.starts_with("Found 2 memories for 'API':"), "{found}");
    assert!(found.contains("- [fact] API endpoint is https://api.example.com/v1\n  Context: API integration discussion"), "{found}");
    assert!(
        found.contains("- [preference] User prefers detailed API examples"),
        "{found}"
    );

    expire_all(&setup, "alice").await;
    assert_eq!(
        ok(&mut chat, "search_memories", json!({ "query": "API" })).await,
        "No memories found for 'API'."
    );
    assert_eq!(
        ok(&mut chat, "list_memories", json!({ "category": "fact" })).await,
        "My fact memories (0 total):"
    );
    setup.runner_ok(&["stop"]).await;
}
