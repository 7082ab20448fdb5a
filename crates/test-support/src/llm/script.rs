//! What the scripted server answers: a [`ScriptedReply`] per request.

use std::time::Duration;

use types::Usage;

/// One reply of the script.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedReply {
    /// An assistant message: text (streamed in several deltas) and/or tool calls (arguments streamed
    /// in fragments).
    Message(ScriptedMessage),
    /// An HTTP error with a wire-format error body carrying `message`, and `Retry-After: secs` if set.
    HttpError {
        status: u16,
        message: String,
        retry_after: Option<u64>,
    },
    /// `reply`, with `chunk_delay` before each stream chunk (before the body, when not streaming).
    Slow {
        reply: Box<ScriptedReply>,
        chunk_delay: Duration,
    },
    /// `reply`, but the connection is dropped after `after_chunks` stream chunks (after part of the
    /// body, when not streaming).
    Cut {
        reply: Box<ScriptedReply>,
        after_chunks: usize,
    },
}

/// The assistant message of a [`ScriptedReply::Message`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScriptedMessage {
    pub text: Option<String>,
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Reported token counts; `None` estimates them from the sizes of request and reply.
    pub usage: Option<Usage>,
}

/// A tool call the scripted model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedToolCall {
    /// `None`: the server assigns `call_1`, `call_2`, ... (one counter per server).
    pub id: Option<String>,
    pub name: String,
    /// The raw arguments text, sent verbatim (it need not be valid JSON).
    pub arguments: String,
}

impl ScriptedToolCall {
    pub fn new(name: &str, arguments: serde_json::Value) -> Self {
        Self {
            id: None,
            name: name.to_owned(),
            arguments: arguments.to_string(),
        }
    }

    /// A call whose arguments text is sent exactly as given, e.g. malformed JSON.
    pub fn raw(name: &str, arguments: &str) -> Self {
        Self {
            id: None,
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        }
    }

    pub fn with_id(mut self, id: &str) -> Self {
        self.id = Some(id.to_owned());
        self
    }
}

impl ScriptedReply {
    pub fn text(text: &str) -> Self {
        Self::Message(ScriptedMessage {
            text: Some(text.to_owned()),
            ..Default::default()
        })
    }

    pub fn tool_call(name: &str, arguments: serde_json::Value) -> Self {
        Self::tool_calls(vec![ScriptedToolCall::new(name, arguments)])
    }

    pub fn tool_calls(calls: Vec<ScriptedToolCall>) -> Self {
        Self::Message(ScriptedMessage {
            tool_calls: calls,
            ..Default::default()
        })
    }

    pub fn text_and_tool_calls(text: &str, calls: Vec<ScriptedToolCall>) -> Self {
        Self::Message(ScriptedMessage {
            text: Some(text.to_owned()),
            tool_calls: calls,
            usage: None,
        })
    }

    /// A tool call whose arguments are not valid JSON.
    pub fn malformed_tool_call(name: &str, raw_arguments: &str) -> Self {
        Self::tool_calls(vec![ScriptedToolCall::raw(name, raw_arguments)])
    }

    pub fn http_error(status: u16, message: &str) -> Self {
        Self::HttpError {
            status,
            message: message.to_owned(),
            retry_after: None,
        }
    }

    /// 429 with `Retry-After: secs`.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::HttpError {
            status: 429,
            message: "scripted rate limit".into(),
            retry_after: Some(retry_after_secs),
        }
    }

    /// Delays every chunk of this reply by `chunk_delay`.
    pub fn slow(self, chunk_delay: Duration) -> Self {
        Self::Slow {
            reply: Box::new(self),
            chunk_delay,
        }
    }

    /// Drops the connection after `chunks` chunks of this reply.
    pub fn cut_after(self, chunks: usize) -> Self {
        Self::Cut {
            reply: Box::new(self),
            after_chunks: chunks,
        }
    }

    /// Reports these token counts (on a `Message`; other replies are returned unchanged).
    pub fn with_usage(self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        let usage = Usage {
            prompt_tokens,
            completion_tokens,
        };
        match self {
            Self::Message(m) => Self::Message(ScriptedMessage {
                usage: Some(usage),
                ..m
            }),
            Self::Slow { reply, chunk_delay } => Self::Slow {
                reply: Box::new(reply.with_usage(prompt_tokens, completion_tokens)),
                chunk_delay,
            },
            Self::Cut {
                reply,
                after_chunks,
            } => Self::Cut {
                reply: Box::new(reply.with_usage(prompt_tokens, completion_tokens)),
                after_chunks,
            },
            other => other,
        }
    }
}
