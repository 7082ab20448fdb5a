//! Folding [`StreamEvent`]s into a [`ChatResponse`]: the one assembly path for both wire formats,
//! streaming or not.

use futures::StreamExt;
use types::{Message, ToolCall, Usage};

use crate::{ChatResponse, EventStream, FinishReason, ProviderError, StreamEvent};

/// Accumulates events; callers that forward deltas (to a UI) push each event as it arrives.
#[derive(Debug, Default)]
pub struct ResponseBuilder {
    text: String,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    finish_reason: Option<FinishReason>,
}

#[derive(Debug)]
struct PartialCall {
    index: u32,
    id: String,
    name: String,
    arguments: String,
}

impl ResponseBuilder {
    pub fn push(&mut self, event: StreamEvent) {
        match event {
            StreamEvent::TextDelta(text) => self.text.push_str(&text),
            StreamEvent::ToolCallStart { index, id, name } => {
                let call = self.call_mut(index);
                call.id = id;
                call.name = name;
            }
            StreamEvent::ToolCallArgsDelta { index, fragment } => {
                self.call_mut(index).arguments.push_str(&fragment);
            }
            StreamEvent::Usage(usage) => self.usage = Some(usage),
            StreamEvent::Done { finish_reason } => self.finish_reason = Some(finish_reason),
        }
    }

    /// Whether `Done` has been seen.
    pub fn is_done(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The assembled reply. Fails if no `Done` event arrived (a truncated reply is an error, never
    /// a short success). A call that received no argument text gets `{}`.
    pub fn finish(self) -> Result<ChatResponse, ProviderError> {
        let Some(finish_reason) = self.finish_reason else {
            return Err(ProviderError::bad_response(
                "the reply ended without a finish event",
            ));
        };
        let mut calls = self.calls;
        calls.sort_by_key(|c| c.index);
        let tool_calls: Vec<ToolCall> = calls
            .into_iter()
            .map(|c| ToolCall {
                id: c.id,
                name: c.name,
                arguments: if c.arguments.trim().is_empty() {
                    "{}".into()
                } else {
                    c.arguments
                },
            })
            .collect();
        let text = (!self.text.is_empty()).then_some(self.text);
        Ok(ChatResponse {
            message: Message::assistant_tool_calls(text, tool_calls),
            usage: self.usage,
            finish_reason,
        })
    }

    fn call_mut(&mut self, index: u32) -> &mut PartialCall {
        let pos = match self.calls.iter().position(|c| c.index == index) {
            Some(pos) => pos,
            None => {
                self.calls.push(PartialCall {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        &mut self.calls[pos]
    }
}

/// Drains a stream into a [`ChatResponse`]; the first error wins.
pub async fn collect_response(mut stream: EventStream) -> Result<ChatResponse, ProviderError> {
    let mut builder = ResponseBuilder::default();
    while let Some(event) = stream.next().await {
        builder.push(event?);
    }
    builder.finish()
}

/// Folds an already-complete list of events (a non-streaming reply).
pub(crate) fn fold_events(events: Vec<StreamEvent>) -> Result<ChatResponse, ProviderError> {
    let mut builder = ResponseBuilder::default();
    for event in events {
        builder.push(event);
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(events: Vec<StreamEvent>, expected: Message) {
        assert_eq!(fold_events(events).map(|r| r.message).ok(), Some(expected));
    }

    #[test]
    fn assembles_text_and_interleaved_calls() {
        use StreamEvent::*;
        check(
            vec![
                TextDelta("Hel".into()),
                TextDelta("lo".into()),
                ToolCallStart {
                    index: 1,
                    id: "b".into(),
                    name: "two".into(),
                },
                ToolCallStart {
                    index: 0,
                    id: "a".into(),
                    name: "one".into(),
                },
                ToolCallArgsDelta {
                    index: 0,
                    fragment: "{\"x\":".into(),
                },
                ToolCallArgsDelta {
                    index: 1,
                    fragment: "{}".into(),
                },
                ToolCallArgsDelta {
                    index: 0,
                    fragment: "1}".into(),
                },
                Done {
                    finish_reason: FinishReason::ToolCalls,
                },
            ],
            Message::assistant_tool_calls(
                Some("Hello".into()),
                vec![
                    ToolCall {
                        id: "a".into(),
                        name: "one".into(),
                        arguments: "{\"x\":1}".into(),
                    },
                    ToolCall {
                        id: "b".into(),
                        name: "two".into(),
                        arguments: "{}".into(),
                    },
                ],
            ),
        );
        check(
            vec![
                ToolCallStart {
                    index: 0,
                    id: "a".into(),
                    name: "one".into(),
                },
                Done {
                    finish_reason: FinishReason::ToolCalls,
                },
            ],
            Message::assistant_tool_calls(
                None,
                vec![ToolCall {
                    id: "a".into(),
                    name: "one".into(),
                    arguments: "{}".into(),
                }],
            ),
        );
    }

    #[test]
    fn missing_done_is_an_error() {
        assert!(fold_events(vec![StreamEvent::TextDelta("partial".into())]).is_err());
    }
}
