//! Rendering a served reply in the two wire formats, as real servers do.

use serde_json::{Value, json};
use types::Usage;

/// A message reply with ids assigned and usage settled.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    pub text: Option<String>,
    /// `(id, name, raw arguments)`
    pub calls: Vec<(String, String, String)>,
    pub usage: Usage,
}

/// Splits `s` into up to `n` pieces of roughly equal length, on char boundaries.
pub(crate) fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let size = chars.len().div_ceil(n.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

pub(crate) mod openai {
    use super::*;

    fn chunk(model: &str, delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
    }

    fn finish_reason(m: &Served) -> &'static str {
        if m.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }

    fn usage(u: Usage) -> Value {
        json!({"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
               "total_tokens": u.total()})
    }

    pub(crate) fn stream(m: &Served, model: &str, include_usage: bool) -> Vec<String> {
        let mut out = vec![": scripted-llm\n\n".to_owned()];
        out.push(sse(
            None,
            &chunk(model, json!({"role": "assistant", "content": ""}), None),
        ));
        for piece in m.text.as_deref().map(|t| pieces(t, 3)).unwrap_or_default() {
            out.push(sse(None, &chunk(model, json!({"content": piece}), None)));
        }
        for (index, (id, name, args)) in m.calls.iter().enumerate() {
            let start = json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]});
            out.push(sse(None, &chunk(model, start, None)));
            for fragment in pieces(args, 4) {
                let delta =
                    json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]});
                out.push(sse(None, &chunk(model, delta, None)));
            }
        }
        out.push(sse(None, &chunk(model, json!({}), Some(finish_reason(m)))));
        if include_usage {
            let last = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
                "model": model, "choices": [], "usage": usage(m.usage)});
            out.push(sse(None, &last));
        }
        out.push("data: [DONE]\n\n".to_owned());
        out
    }

    pub(crate) fn json(m: &Served, model: &str) -> Value {
        let mut message = json!({"role": "assistant", "content": m.text});
        if !m.calls.is_empty() {
            message["tool_calls"] = m
                .calls
                .iter()
                .map(|(id, name, args)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
                })
                .collect();
        }
        json!({
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(m)}],
            "usage": usage(m.usage),
        })
    }

    pub(crate) fn error(status: u16, message: &str) -> Value {
        json!({"error": {"message": message, "type": "scripted_error", "code": status}})
    }
}

pub(crate) mod anthropic {
    use super::*;

    fn stop_reason(m: &Served) -> &'static str {
        if m.calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
    }

    /// A tool call's `input`: the parsed object, or (malformed arguments) the raw text as a string.
    fn input(args: &str) -> Value {
        serde_json::from_str::<Value>(args)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::String(args.to_owned()))
    }

    pub(crate) fn stream(m: &Served, model: &str) -> Vec<String> {
        let start = json!({"type": "message_start", "message": {
            "id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": m.usage.prompt_tokens, "output_tokens": 1}}});
        let mut out = vec![sse(Some("message_start"), &start)];
        out.push(sse(Some("ping"), &json!({"type": "ping"})));
        let mut block = 0;
        if let Some(text) = &m.text {
            out.push(sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start",
                "index": block, "content_block": {"type": "text", "text": ""}}),
            ));
            for piece in pieces(text, 3) {
                out.push(sse(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta",
                    "index": block, "delta": {"type": "text_delta", "text": piece}}),
                ));
            }
            out.push(sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": block}),
            ));
            block += 1;
        }
        for (id, name, args) in &m.calls {
            out.push(sse(Some("content_block_start"), &json!({"type": "content_block_start",
                "index": block, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
            for fragment in pieces(args, 4) {
                out.push(sse(Some("content_block_delta"), &json!({"type": "content_block_delta",
                    "index": block, "delta": {"type": "input_json_delta", "partial_json": fragment}})));
            }
            out.push(sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": block}),
            ));
            block += 1;
        }
        out.push(sse(
            Some("message_delta"),
            &json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(m), "stop_sequence": null},
            "usage": {"output_tokens": m.usage.completion_tokens}}),
        ));
        out.push(sse(Some("message_stop"), &json!({"type": "message_stop"})));
        out
    }

    pub(crate) fn json(m: &Served, model: &str) -> Value {
        let mut content: Vec<Value> = m
            .text
            .iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        content.extend(m.calls.iter().map(|(id, name, args)| {
            json!({"type": "tool_use", "id": id, "name": name, "input": input(args)})
        }));
        json!({
            "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason(m), "stop_sequence": null,
            "usage": {"input_tokens": m.usage.prompt_tokens, "output_tokens": m.usage.completion_tokens},
        })
    }

    pub(crate) fn error(status: u16, message: &str) -> Value {
        let kind = match status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            s if s >= 500 => "api_error",
            _ => "invalid_request_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": message}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_into_pieces() {
        assert_eq!(pieces("abcdefg", 3), vec!["abc", "def", "g"]);
        assert_eq!(pieces("ab", 3), vec!["a", "b"]);
        assert_eq!(pieces("", 3), Vec::<String>::new());
        assert_eq!(pieces("héllo", 2), vec!["hél", "lo"]);
    }
}
