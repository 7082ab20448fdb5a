//! [`ChatRequest`] → Anthropic Messages request body.
//!
//! System text goes to the top-level `system`; assistant tool calls become `tool_use` blocks; tool
//! results become `tool_result` blocks in a user message. Consecutive messages of the same side
//! are merged, so several tool results (and any user text after them) form one user message.

use serde_json::{Value, json};
use types::{Message, Role};

use crate::ChatRequest;

/// The tool Anthropic's models know natively: the files dialect's `memory` tool is declared as
/// `{"type": "memory_20250818", "name": "memory"}`; its `tool_use` blocks are ordinary tool calls.
pub const NATIVE_MEMORY_TOOL: &str = "memory";
pub const NATIVE_MEMORY_TYPE: &str = "memory_20250818";

pub(crate) fn body(req: &ChatRequest, model: &str, stream: bool, native_memory: bool) -> Value {
    let mut system: Vec<&str> = req.system.iter().map(String::as_str).collect();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in &req.messages {
        if m.role == Role::System {
            system.extend(m.content.as_deref());
            continue;
        }
        let (role, blocks) = blocks(m);
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_output_tokens,
        "messages": messages,
        "stream": stream,
    });
    let system: Vec<&str> = system.into_iter().filter(|s| !s.is_empty()).collect();
    if !system.is_empty() {
        body["system"] = Value::String(system.join("\n\n"));
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                if native_memory && t.name == NATIVE_MEMORY_TOOL {
                    json!({"type": NATIVE_MEMORY_TYPE, "name": NATIVE_MEMORY_TOOL})
                } else {
                    t.to_anthropic()
                }
            })
            .collect();
    }
    if let Some(name) = &req.force_tool {
        body["tool_choice"] = json!({"type": "tool", "name": name});
    }
    body
}

fn blocks(m: &Message) -> (&'static str, Vec<Value>) {
    let text = m.content.as_deref().filter(|t| !t.is_empty());
    match m.role {
        Role::Tool => (
            "user",
            vec![json!({
                "type": "tool_result",
                "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(),
                "content": m.content.as_deref().unwrap_or_default(),
            })],
        ),
        Role::Assistant => {
            let mut blocks: Vec<Value> = text.map(text_block).into_iter().collect();
            blocks.extend(m.tool_calls.iter().map(|c| {
                json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input(&c.arguments)})
            }));
            ("assistant", blocks)
        }
        Role::User | Role::System => ("user", text.map(text_block).into_iter().collect()),
    }
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// `tool_use.input` must be an object; arguments that are not a JSON object (the model produced
/// malformed JSON, which the tool result already told it) are sent as `{}`.
fn input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            tracing::debug!("tool call arguments are not a JSON object; sending {{}} to Anthropic");
            json!({})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use types::ToolCall;

    #[test]
    fn maps_messages() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "f".into(),
            arguments: r#"{"a":1}"#.into(),
        };
        let req = ChatRequest {
            system: Some("be brief".into()),
            messages: vec![
                Message::system("more rules"),
                Message::user("hi"),
                Message::assistant_tool_calls(
                    Some("let me look".into()),
                    vec![call("t1"), call("t2")],
                ),
                Message::tool_result("t1", "one"),
                Message::tool_result("t2", "two"),
                Message::assistant("done"),
            ],
            tools: Vec::new(),
            max_output_tokens: 50,
            force_tool: None,
        };
        assert_eq!(
            body(&req, "claude", false, /*native_memory*/ true),
            json!({
                "model": "claude",
                "max_tokens": 50,
                "stream": false,
                "system": "be brief\n\nmore rules",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "let me look"},
                        {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
                        {"type": "tool_use", "id": "t2", "name": "f", "input": {"a": 1}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
                        {"type": "tool_result", "tool_use_id": "t2", "content": "two"},
                    ]},
                    {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
                ],
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
            body(&req, "claude", false, false)["tool_choice"],
            json!({"type": "tool", "name": "record_memories"})
        );
        assert!(
            body(&ChatRequest::default(), "claude", false, false)
                .get("tool_choice")
                .is_none()
        );
    }

    #[test]
    fn malformed_arguments_become_an_empty_object() {
        assert_eq!(input("{\"a\": "), json!({}));
        assert_eq!(input("[1]"), json!({}));
    }
}
