//! [`ChatRequest`] → OpenAI Chat Completions request body.

use serde_json::{Value, json};
use types::{Message, Role};

use crate::ChatRequest;

/// Which field carries the output limit: `max_completion_tokens` (api.openai.com, required by its
/// reasoning models) or `max_tokens` (what other compatible servers understand).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenField {
    MaxTokens,
    MaxCompletionTokens,
}

impl TokenField {
    pub fn for_base_url(base_url: &str) -> Self {
        if base_url.contains("://api.openai.com") {
            TokenField::MaxCompletionTokens
        } else {
            TokenField::MaxTokens
        }
    }

    fn key(self) -> &'static str {
        match self {
            TokenField::MaxTokens => "max_tokens",
            TokenField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

pub(crate) fn body(req: &ChatRequest, model: &str, token_field: TokenField, stream: bool) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if let Some(system) = &req.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(req.messages.iter().map(message));
    let mut body = json!({
        "model": model,
        "messages": messages,
        token_field.key(): req.max_output_tokens,
        "stream": stream,
    });
    if !req.tools.is_empty() {
        body["tools"] = req.tools.iter().map(|t| t.to_openai()).collect();
    }
    if let Some(name) = &req.force_tool {
        body["tool_choice"] = json!({"type": "function", "function": {"name": name}});
    }
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn message(m: &Message) -> Value {
    match m.role {
        Role::Assistant if !m.tool_calls.is_empty() => json!({
            "role": "assistant",
            "content": m.content,
            "tool_calls": m.tool_calls.iter().map(|c| json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })).collect::<Vec<_>>(),
        }),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.as_deref().unwrap_or_default(),
            "content": m.content.as_deref().unwrap_or_default(),
        }),
        role => json!({"role": role.as_str(), "content": m.content.as_deref().unwrap_or_default()}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use types::{ToolCall, ToolSchema};

    #[test]
    fn maps_messages_and_tools() {
        let req = ChatRequest {
            system: Some("be brief".into()),
            messages: vec![
                Message::user("hi"),
                Message::assistant_tool_calls(
                    None,
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "f".into(),
                        arguments: "{}".into(),
                    }],
                ),
                Message::tool_result("c1", "ok"),
                Message::assistant("done"),
            ],
            tools: vec![ToolSchema {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({}),
            }],
            max_output_tokens: 99,
            force_tool: None,
        };
        assert_eq!(
            body(&req, "m", TokenField::MaxTokens, true),
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                    {"role": "assistant", "content": "done"},
                ],
                "max_tokens": 99,
                "stream": true,
                "stream_options": {"include_usage": true},
                "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}],
            })
        );
    }

    #[test]
    fn a_forced_tool_is_the_tool_choice() {
        let req = ChatRequest {
            force_tool: Some("record_memories".into()),
            ..ChatRequest::default()
        };
        assert_eq!(
            body(&req, "m", TokenField::MaxTokens, false)["tool_choice"],
            json!({"type": "function", "function": {"name": "record_memories"}})
        );
        assert!(
            body(&ChatRequest::default(), "m", TokenField::MaxTokens, false)
                .get("tool_choice")
                .is_none()
        );
    }

    #[test]
    fn token_field_by_host() {
        assert_eq!(
            TokenField::for_base_url("https://api.openai.com/v1"),
            TokenField::MaxCompletionTokens
        );
        assert_eq!(
            TokenField::for_base_url("http://127.0.0.1:11434/v1"),
            TokenField::MaxTokens
        );
    }
}
