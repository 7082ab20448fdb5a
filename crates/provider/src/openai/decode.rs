//! OpenAI Chat Completions replies → [`StreamEvent`]s: SSE chunks while streaming, the JSON body
//! otherwise.

use serde_json::Value;
use types::Usage;

use crate::sse::SseEvent;
use crate::stream::Decoder;
use crate::{FinishReason, ProviderError, StreamEvent};

#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    /// Ids of the tool calls started so far, by index.
    started: Vec<(u32, String)>,
    last_index: Option<u32>,
    finish_reason: Option<FinishReason>,
    done: bool,
}

impl Decoder for OpenAiDecoder {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            out.push(StreamEvent::Done {
                finish_reason: self.finish_reason.take().unwrap_or(FinishReason::Stop),
            });
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            ProviderError::bad_response(format!("stream chunk is not JSON ({e}): {data:.200}"))
        })?;
        if let Some(error) = chunk.get("error") {
            return Err(stream_error(error));
        }
        if let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) {
            let delta = &choice["delta"];
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                out.push(StreamEvent::TextDelta(text.to_owned()));
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                self.tool_call_delta(call, out);
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                self.finish_reason = Some(finish_reason(reason));
            }
        }
        if let Some(usage) = usage(&chunk) {
            out.push(StreamEvent::Usage(usage));
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), String> {
        // Some servers omit `[DONE]`; a finish_reason means the reply itself was complete.
        match self.finish_reason.take() {
            Some(finish_reason) => {
                out.push(StreamEvent::Done { finish_reason });
                Ok(())
            }
            None => Err("the stream ended before `[DONE]`".into()),
        }
    }
}

impl OpenAiDecoder {
    fn tool_call_delta(&mut self, call: &Value, out: &mut Vec<StreamEvent>) {
        let id = call["id"].as_str().filter(|id| !id.is_empty());
        let index = match (call["index"].as_u64(), id) {
            (Some(i), _) => u32::try_from(i).unwrap_or(u32::MAX),
            (None, Some(id)) => match self.started.iter().find(|(_, known)| known == id) {
                Some((i, _)) => *i,
                None => self.started.len() as u32,
            },
            (None, None) => self.last_index.unwrap_or(0),
        };
        self.last_index = Some(index);
        let function = &call["function"];
        if !self.started.iter().any(|(i, _)| *i == index) {
            let id = id.map_or_else(|| format!("call_{index}"), str::to_owned);
            self.started.push((index, id.clone()));
            let name = function["name"].as_str().unwrap_or_default().to_owned();
            out.push(StreamEvent::ToolCallStart { index, id, name });
        }
        if let Some(fragment) = function["arguments"].as_str().filter(|f| !f.is_empty()) {
            out.push(StreamEvent::ToolCallArgsDelta {
                index,
                fragment: fragment.to_owned(),
            });
        }
    }
}

/// A whole (non-streaming) reply as the events a stream would have carried.
pub(crate) fn events_from_json(reply: &Value) -> Result<Vec<StreamEvent>, ProviderError> {
    let choice = reply
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| ProviderError::bad_response("the reply has no `choices[0]`"))?;
    let message = &choice["message"];
    let mut out = Vec::new();
    if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
        out.push(StreamEvent::TextDelta(text.to_owned()));
    }
    for (i, call) in message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let index = i as u32;
        let id = call["id"]
            .as_str()
            .map_or_else(|| format!("call_{index}"), str::to_owned);
        let name = call["function"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        out.push(StreamEvent::ToolCallStart { index, id, name });
        let arguments = match &call["function"]["arguments"] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(), // some servers send an object
        };
        out.push(StreamEvent::ToolCallArgsDelta {
            index,
            fragment: arguments,
        });
    }
    if let Some(usage) = usage(reply) {
        out.push(StreamEvent::Usage(usage));
    }
    let reason = choice["finish_reason"]
        .as_str()
        .map_or(FinishReason::Stop, finish_reason);
    out.push(StreamEvent::Done {
        finish_reason: reason,
    });
    Ok(out)
}

fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    Some(Usage {
        prompt_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
        completion_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
    })
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// An `{"error": ...}` object sent inside a stream (OpenRouter does this after a 200).
fn stream_error(error: &Value) -> ProviderError {
    let detail = error["message"]
        .as_str()
        .map_or_else(|| error.to_string(), str::to_owned);
    match error["code"].as_u64().and_then(|c| u16::try_from(c).ok()) {
        Some(429) => ProviderError::RateLimited {
            retry_after: None,
            detail,
        },
        Some(status) if status >= 500 => ProviderError::Server { status, detail },
        _ => ProviderError::bad_response(format!("error in stream: {detail}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(lines: &[&str]) -> Vec<StreamEvent> {
        let mut d = OpenAiDecoder::default();
        let mut out = Vec::new();
        for data in lines {
            d.on_event(
                &SseEvent {
                    event: None,
                    data: (*data).to_owned(),
                },
                &mut out,
            )
            .ok();
        }
        out
    }

    #[test]
    fn tool_calls_without_index() {
        use StreamEvent::*;
        assert_eq!(
            decode(&[
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]}}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
                "[DONE]",
            ]),
            vec![
                ToolCallStart {
                    index: 0,
                    id: "a".into(),
                    name: "f".into()
                },
                ToolCallArgsDelta {
                    index: 0,
                    fragment: "{\"x\"".into()
                },
                ToolCallArgsDelta {
                    index: 0,
                    fragment: ":1}".into()
                },
                Done {
                    finish_reason: FinishReason::ToolCalls
                },
            ]
        );
    }
}
