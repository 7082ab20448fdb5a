//! The provider-neutral call: [`ChatRequest`] in, [`StreamEvent`]s or a [`ChatResponse`] out.

use futures::stream::BoxStream;
use types::{Message, ToolSchema, Usage};

use crate::ProviderError;

/// One call to the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// The system prompt. (System-role entries in `messages` are also honoured: Anthropic gets
    /// them appended to its top-level `system`.)
    pub system: Option<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSchema>,
    pub max_output_tokens: u32,
    /// The one tool the model must call (`tool_choice` forcing that function on OpenAI-compatible
    /// servers, `{"type": "tool"}` on Anthropic); `None` lets the model choose.
    pub force_tool: Option<String>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// It finished its reply (`stop`, `end_turn`, `stop_sequence`).
    Stop,
    /// It wants tool calls run (`tool_calls`, `tool_use`).
    ToolCalls,
    /// It hit the output token limit (`length`, `max_tokens`).
    Length,
    /// The provider filtered or refused the reply (`content_filter`, `refusal`).
    ContentFilter,
    /// Anything else, verbatim.
    Other(String),
}

/// One piece of a streamed reply. Every successful stream ends with exactly one `Done`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// More reply text.
    TextDelta(String),
    /// A tool call begins. `index` orders the calls of this reply (0, 1, ...).
    ToolCallStart {
        index: u32,
        id: String,
        name: String,
    },
    /// More of the call's JSON arguments text; concatenate fragments of the same `index`.
    ToolCallArgsDelta { index: u32, fragment: String },
    /// Token counts for the call so far; a later `Usage` replaces an earlier one.
    Usage(Usage),
    /// The reply is complete.
    Done { finish_reason: FinishReason },
}

/// The stream returned by [`Provider::stream`](crate::Provider::stream).
pub type EventStream = BoxStream<'static, Result<StreamEvent, ProviderError>>;

/// A whole reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatResponse {
    /// The assistant message: its text (`None` when empty) and its tool calls in index order.
    /// A call's `arguments` is the raw text the model produced, valid JSON or not.
    pub message: Message,
    /// `None` when the endpoint reported no token counts (some local servers).
    pub usage: Option<Usage>,
    pub finish_reason: FinishReason,
}
