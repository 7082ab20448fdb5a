//! Anthropic Messages replies → [`StreamEvent`]s: the typed SSE events while streaming, the JSON
//! body otherwise.

use serde_json::Value;
use types::Usage;

use crate::sse::SseEvent;
use crate::stream::Decoder;
use crate::{FinishReason, ProviderError, StreamEvent};

#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    /// Content block index → tool call index, for `tool_use` blocks.
    tool_blocks: Vec<(u64, u32)>,
    next_tool: u32,
    usage: Usage,
    stop_reason: Option<FinishReason>,
    done: bool,
}

impl AnthropicDecoder {
    /// `content_block_start`: a tool call starts (its input whole, from servers that send it so),
    /// or a text block with text in it.
    fn block_start(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        let block = &v["content_block"];
        let block_index = v["index"].as_u64().unwrap_or(0);
        match block["type"].as_str() {
            Some("tool_use") => {
                let index = self.next_tool;
                self.next_tool += 1;
                self.tool_blocks.push((block_index, index));
                out.push(StreamEvent::ToolCallStart {
                    index,
                    id: block["id"].as_str().unwrap_or_default().to_owned(),
                    name: block["name"].as_str().unwrap_or_default().to_owned(),
                });
                // The real API streams the input as deltas and starts with `{}` here;
                // a non-empty input means a server sent it whole.
                if block["input"].as_object().is_some_and(|o| !o.is_empty()) {
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index,
                        fragment: block["input"].to_string(),
                    });
                }
            }
            Some("text") => push_text(out, block["text"].as_str()),
            _ => {}
        }
    }

    /// `content_block_delta`: more reply text, or more of a tool call's input.
    fn block_delta(&self, v: &Value, out: &mut Vec<StreamEvent>) {
        let delta = &v["delta"];
        match delta["type"].as_str() {
            Some("text_delta") => push_text(out, delta["text"].as_str()),
            Some("input_json_delta") => {
                let block_index = v["index"].as_u64().unwrap_or(0);
                let fragment = delta["partial_json"].as_str().unwrap_or_default();
                let tool = self.tool_blocks.iter().find(|(b, _)| *b == block_index);
                if let (Some((_, index)), false) = (tool, fragment.is_empty()) {
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index: *index,
                        fragment: fragment.to_owned(),
                    });
                }
            }
            _ => {} // thinking and signature deltas are not part of the reply
        }
    }

    /// `message_delta`: the stop reason and the usage so far.
    fn message_delta(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        if let Some(reason) = v["delta"]["stop_reason"].as_str() {
            self.stop_reason = Some(stop_reason(reason));
        }
        let u = &v["usage"];
        if u.get("input_tokens").is_some_and(Value::is_u64) {
            self.usage.prompt_tokens = input_tokens(u);
        }
        if let Some(output) = u["output_tokens"].as_u64() {
            self.usage.completion_tokens = output;
        }
        out.push(StreamEvent::Usage(self.usage));
    }
}

impl Decoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let v: Value = serde_json::from_str(&event.data).map_err(|e| {
            ProviderError::bad_response(format!(
                "stream event is not JSON ({e}): {:.200}",
                event.data
            ))
        })?;
        match v["type"].as_str().unwrap_or_default() {
            "message_start" => {
                let u = &v["message"]["usage"];
                self.usage.prompt_tokens = input_tokens(u);
                self.usage.completion_tokens = u["output_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" => self.block_start(&v, out),
            "content_block_delta" => self.block_delta(&v, out),
            "message_delta" => self.message_delta(&v, out),
            "message_stop" => {
                self.done = true;
                out.push(StreamEvent::Done {
                    finish_reason: self.stop_reason.take().unwrap_or(FinishReason::Stop),
                });
            }
            "error" => return Err(stream_error(&v["error"])),
            _ => {} // ping, content_block_stop, future event types
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn on_end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), String> {
        Err("the stream ended before `message_stop`".into())
    }
}

fn push_text(out: &mut Vec<StreamEvent>, text: Option<&str>) {
    if let Some(text) = text.filter(|t| !t.is_empty()) {
        out.push(StreamEvent::TextDelta(text.to_owned()));
    }
}

/// Prompt tokens: uncached input plus cache reads and writes.
fn input_tokens(u: &Value) -> u64 {
    [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ]
    .iter()
    .map(|k| u[*k].as_u64().unwrap_or(0))
    .sum()
}

/// A whole (non-streaming) reply as the events a stream would have carried.
pub(crate) fn events_from_json(reply: &Value) -> Result<Vec<StreamEvent>, ProviderError> {
    let content = reply["content"]
        .as_array()
        .ok_or_else(|| ProviderError::bad_response("the reply has no `content` array"))?;
    let mut out = Vec::new();
    let mut index = 0;
    for block in content {
        match block["type"].as_str() {
            Some("text") => push_text(&mut out, block["text"].as_str()),
            Some("tool_use") => {
                out.push(StreamEvent::ToolCallStart {
                    index,
                    id: block["id"].as_str().unwrap_or_default().to_owned(),
                    name: block["name"].as_str().unwrap_or_default().to_owned(),
                });
                // Some servers pass malformed arguments through as a string: keep it raw.
                let fragment = match &block["input"] {
                    Value::String(raw) => raw.clone(),
                    input => input.to_string(),
                };
                out.push(StreamEvent::ToolCallArgsDelta { index, fragment });
                index += 1;
            }
            _ => {}
        }
    }
    let u = &reply["usage"];
    if u.is_object() {
        out.push(StreamEvent::Usage(Usage {
            prompt_tokens: input_tokens(u),
            completion_tokens: u["output_tokens"].as_u64().unwrap_or(0),
        }));
    }
    let reason = reply["stop_reason"]
        .as_str()
        .map_or(FinishReason::Stop, stop_reason);
    out.push(StreamEvent::Done {
        finish_reason: reason,
    });
    Ok(out)
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// An `error` event sent after the stream began (e.g. `overloaded_error`).
fn stream_error(error: &Value) -> ProviderError {
    let detail = error["message"]
        .as_str()
        .map_or_else(|| error.to_string(), str::to_owned);
    match error["type"].as_str() {
        Some("overloaded_error") => ProviderError::Server {
            status: 529,
            detail,
        },
        Some("api_error") => ProviderError::Server {
            status: 500,
            detail,
        },
        Some("rate_limit_error") => ProviderError::RateLimited {
            retry_after: None,
            detail,
        },
        _ => ProviderError::bad_response(format!("error in stream: {detail}")),
    }
}
