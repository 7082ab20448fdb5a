//! What goes over the wire: request bodies and headers in each format, checked on the server side.

use crate::common;

use common::{fast, provider};
use provider::{ApiKey, ChatRequest, ProviderOptions, collect_response};
use serde_json::json;
use test_support::{ScriptedLlm, ScriptedReply};
use types::{Message, ToolCall, ToolSchema};

/// A conversation with every kind of message: system, user, assistant tool calls, two tool
/// results, assistant text, user follow-up.
fn conversation() -> ChatRequest {
    let call = |id: &str, path: &str| ToolCall {
        id: id.into(),
        name: "file_read".into(),
        arguments: json!({"path": path}).to_string(),
    };
    ChatRequest {
        system: Some("You are Oxydra.".into()),
        messages: vec![
            Message::user("read a and b"),
            Message::assistant_tool_calls(
                Some("Reading.".into()),
                vec![call("c1", "a"), call("c2", "b")],
            ),
            Message::tool_result("c1", "A!"),
            Message::tool_result("c2", "B!"),
            Message::assistant("Both read."),
            Message::user("thanks"),
        ],
        tools: vec![ToolSchema {
            name: "file_read".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_output_tokens: 300,
        force_tool: None,
    }
}

fn with_key(key: &str) -> ProviderOptions {
    ProviderOptions {
        api_key: Some(ApiKey::new(key)),
        ..fast()
    }
}

#[tokio::test]
async fn openai_request_body_and_headers() {
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::text("ok"));
    let config = types::ProviderConfig {
        api_key_env: Some("OXYDRA_TEST_KEY".into()),
        ..server.openai_config()
    };
    let p = provider::from_config_with(&config, with_key("sk-test-1")).unwrap();
    collect_response(p.stream(&conversation()).await.unwrap())
        .await
        .unwrap();

    let req = server.last_request().unwrap();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer sk-test-1"));
    let schema = &conversation().tools[0];
    assert_eq!(
        req.body,
        json!({
            "model": "scripted-model",
            "max_tokens": 300,
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [schema.to_openai()],
            "messages": [
                {"role": "system", "content": "You are Oxydra."},
                {"role": "user", "content": "read a and b"},
                {"role": "assistant", "content": "Reading.", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "file_read", "arguments": "{\"path\":\"a\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "file_read", "arguments": "{\"path\":\"b\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "A!"},
                {"role": "tool", "tool_call_id": "c2", "content": "B!"},
                {"role": "assistant", "content": "Both read."},
                {"role": "user", "content": "thanks"},
            ],
        })
    );
    assert_eq!(req.system_prompt().as_deref(), Some("You are Oxydra."));
    assert_eq!(req.last_tool_result().as_deref(), Some("B!"));
}

#[tokio::test]
async fn anthropic_request_body_and_headers() {
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::text("ok"));
    let config = types::ProviderConfig {
        api_key_env: Some("OXYDRA_TEST_KEY".into()),
        ..server.anthropic_config()
    };
    let p = provider::from_config_with(&config, with_key("sk-ant-1")).unwrap();
    p.complete(&conversation()).await.unwrap();

    let req = server.last_request().unwrap();
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-1"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("authorization"), None);
    let schema = &conversation().tools[0];
    assert_eq!(
        req.body,
        json!({
            "model": "scripted-model",
            "max_tokens": 300,
            "stream": false,
            "system": "You are Oxydra.",
            "tools": [schema.to_anthropic()],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "read a and b"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "c1", "name": "file_read", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "c2", "name": "file_read", "input": {"path": "b"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "A!"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "B!"},
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Both read."}]},
                {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
            ],
        })
    );
    assert_eq!(req.system_prompt().as_deref(), Some("You are Oxydra."));
    assert_eq!(req.last_tool_result().as_deref(), Some("B!"));
    assert_eq!(req.tool_names(), vec!["file_read".to_owned()]);
}

#[tokio::test]
async fn no_key_configured_sends_no_auth_header() {
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::text("ok"));
    let p = provider(&server.openai_config());
    p.complete(&common::ask("hi")).await.unwrap();
    assert_eq!(server.last_request().unwrap().header("authorization"), None);
}

#[tokio::test]
async fn responder_answers_from_the_request() {
    let server = ScriptedLlm::with_responder(|req| {
        ScriptedReply::text(&format!(
            "echo: {}",
            req.last_tool_result().unwrap_or_default()
        ))
    })
    .await;
    for kind in common::KINDS {
        let p = provider(&server.config(kind));
        let reply = p.complete(&conversation()).await.unwrap();
        assert_eq!(reply.message, Message::assistant("echo: B!"), "{kind:?}");
    }
}
