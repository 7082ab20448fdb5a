//! `tools/call` over `/mcp` as an attacker or a careless client sends it, over raw HTTP against a
//! real gateway serving two users, each with a real libSQL store: params that do not fit the
//! MCP schema are answered "invalid params" saying what to fix (not "method not found", nor an
//! HTTP `415` for params that are not an object), and
//! one user's token reaches neither the other's MCP session nor, by id, the other's notes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use gateway::{Gateway, GatewayConfig, RunningGateway};
use serde_json::{Value, json};
use test_support::ScriptedLlm;

use crate::common::token_of;
use crate::mcp_bounds::{call, initialize, mcp_agent, ping, post};

/// Alice's and Bob's agents, each with `/mcp`, on one gateway: (gateway, alice's token, bob's).
async fn two_users(dir: &std::path::Path) -> (RunningGateway, String, String) {
    let server = ScriptedLlm::start().await;
    let mut gw = Gateway::new(GatewayConfig::default());
    for user in ["alice", "bob"] {
        let agent = mcp_agent(dir, user, &server, mcp::McpLimits::default()).await;
        gw.add_user(agent).unwrap();
    }
    let gw = gw.start().await.unwrap();
    (gw, token_of(dir, "alice"), token_of(dir, "bob"))
}

/// The JSON-RPC answer to a `tools/call` with these `params`.
async fn tools_call(gw: &RunningGateway, token: &str, session: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params});
    let answer = post(gw, token, session, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()
}

#[tokio::test]
async fn malformed_tools_call_params_say_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, alice, _) = two_users(dir.path()).await;
    let session = initialize(&gw, &alice).await;
    let cases = [
        (
            json!({"name": "memory_search", "arguments": [1, 2]}),
            "`arguments`",
        ),
        (
            json!({"name": "memory_search", "arguments": "query"}),
            "`arguments`",
        ),
        (json!({"name": 5, "arguments": {}}), "`name`"),
        (json!({"arguments": {"query": "x"}}), "`name`"),
    ];
    for (params, names) in cases {
        let answer = tools_call(&gw, &alice, &session, params.clone()).await;
        let error = &answer["error"];
        assert_eq!(error["code"], json!(-32602), "{params}: {answer}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains(names) && message.contains("tools/list"),
            "{params}: {message}"
        );
    }
    // Params that are not an object at all (JSON-RPC allows an array; MCP names its params).
    for params in [
        json!(["memory_search", {"query": "x"}]),
        json!("memory_search"),
    ] {
        let answer = tools_call(&gw, &alice, &session, params.clone()).await;
        assert_eq!(
            (&answer["id"], &answer["error"]["code"]),
            (&json!(9), &json!(-32602)),
            "{params}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("`params`"), "{params}: {message}");
    }
    // Well-formed params with a wrong argument stay a tool error the client's model can read.
    let result = call(&gw, &alice, &session, "memory_search", json!({"query": 5})).await;
    assert_eq!(result["isError"], json!(true), "{result}");
    // An unknown method is still "method not found".
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/destroy", "params": {}});
    let answer = post(&gw, &alice, &session, &body).await.json();
    assert_eq!(answer["error"]["code"], json!(-32601), "{answer}");
    gw.shutdown().await;
}

#[tokio::test]
async fn one_users_token_reaches_nothing_of_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, alice, bob) = two_users(dir.path()).await;
    let (alice_session, bob_session) = (initialize(&gw, &alice).await, initialize(&gw, &bob).await);
    let saved = call(
        &gw,
        &alice,
        &alice_session,
        "memory_save",
        json!({"content": "Alice's locker code is pineapple"}),
    )
    .await;
    let saved: Value = serde_json::from_str(saved["content"][0]["text"].as_str().unwrap()).unwrap();
    let (id, version) = (saved["note_id"].clone(), saved["version"].clone());
    // Bob's token with Alice's session: no such session for Bob.
    assert_eq!(ping(&gw, &bob, &alice_session).await, 404);
    // Bob's own session, with the id of Alice's note: not found, and nothing changes.
    for (tool, args) in [
        (
            "memory_update",
            json!({"note_id": id, "version": version, "content": "pwned"}),
        ),
        ("memory_delete", json!({"note_id": id})),
    ] {
        let result = call(&gw, &bob, &bob_session, tool, args).await;
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(result["isError"], json!(true), "{tool}: {result}");
        assert!(text.contains("was not found"), "{tool}: {text}");
    }
    let found = call(
        &gw,
        &bob,
        &bob_session,
        "memory_search",
        json!({"query": "pineapple locker code"}),
    )
    .await;
    assert_eq!(found["content"][0]["text"], json!("{\"results\":[]}"));
    let hers = call(
        &gw,
        &alice,
        &alice_session,
        "memory_search",
        json!({"query": "pineapple locker code"}),
    )
    .await;
    let hers: Value = serde_json::from_str(hers["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        hers["results"][0]["text"],
        json!("Alice's locker code is pineapple")
    );
    gw.shutdown().await;
}

/// `memory_search` over `/mcp` takes the `scope` its listed schema offers: each user's token
/// finds that user's past conversations (never the other's), and a scope outside the schema's
/// is a tool error naming the allowed ones.
#[tokio::test]
async fn memory_search_over_mcp_searches_the_callers_past_conversations() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, alice, bob) = two_users(dir.path()).await;
    for (user, said) in [
        ("alice", "Our dog Biscuit loves the beach"),
        ("bob", "Our dog Rex loves the beach"),
    ] {
        let store = crate::common::open_store(dir.path(), user).await;
        store
            .sessions()
            .append_message_at(
                &types::SessionId::parse(&format!("chat-{user}")).unwrap(),
                &types::UserId::parse(user).unwrap(),
                &types::Message::user(said),
                None,
            )
            .await
            .unwrap();
    }
    let args = json!({"query": "dog loves the beach", "scope": "conversations"});
    for (token, session, chat, said) in [
        (
            &alice,
            "chat-alice",
            "alice",
            "Our dog Biscuit loves the beach",
        ),
        (&bob, "chat-bob", "bob", "Our dog Rex loves the beach"),
    ] {
        let mcp_session = initialize(&gw, token).await;
        let listed = post(
            &gw,
            token,
            &mcp_session,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await
        .json();
        let search = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "memory_search")
            .unwrap();
        assert_eq!(
            search["inputSchema"]["properties"]["scope"]["enum"],
            json!(["notes", "conversations", "all"]),
            "{chat}"
        );
        let result = call(&gw, token, &mcp_session, "memory_search", args.clone()).await;
        assert_eq!(result["isError"], json!(false), "{chat}: {result}");
        let found: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        let hits: Vec<(&str, &str)> = found["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["session_id"].as_str().unwrap(),
                    h["text"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(hits, [(session, said)], "{chat}: {found}");
        let wrong = call(
            &gw,
            token,
            &mcp_session,
            "memory_search",
            json!({"query": "dog", "scope": "everything"}),
        )
        .await;
        assert_eq!(wrong["isError"], json!(true), "{chat}: {wrong}");
        let text = wrong["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("\"conversations\""), "{text}");
    }
    gw.shutdown().await;
}
