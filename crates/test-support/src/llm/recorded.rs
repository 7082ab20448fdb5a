//! What the scripted server received, for assertions (and for responders).

use std::collections::BTreeMap;

use serde_json::Value;

/// Which wire format a request used, by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// `POST /v1/chat/completions`
    OpenAi,
    /// `POST /v1/messages`
    Anthropic,
    /// Any other path (answered with 404).
    Unknown,
}

/// One request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: BTreeMap<String, String>,
    /// The parsed JSON body (`Value::Null` if it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    pub fn format(&self) -> WireFormat {
        match self.path.as_str() {
            "/v1/chat/completions" => WireFormat::OpenAi,
            "/v1/messages" => WireFormat::Anthropic,
            _ => WireFormat::Unknown,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    pub fn is_stream(&self) -> bool {
        self.body["stream"].as_bool().unwrap_or(false)
    }

    pub fn model(&self) -> Option<&str> {
        self.body["model"].as_str()
    }

    /// The `messages` array as sent.
    pub fn messages(&self) -> &[Value] {
        self.body["messages"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The system prompt: Anthropic's top-level `system`, or OpenAI's leading system message.
    pub fn system_prompt(&self) -> Option<String> {
        match self.format() {
            WireFormat::Anthropic => text_of(&self.body["system"]),
            _ => self
                .messages()
                .iter()
                .find(|m| m["role"] == "system")
                .and_then(|m| text_of(&m["content"])),
        }
    }

    /// The names of the tools offered, in order, in either format.
    pub fn tool_names(&self) -> Vec<String> {
        let tools = self.body["tools"].as_array().map_or(&[][..], Vec::as_slice);
        tools
            .iter()
            .filter_map(|t| {
                t["function"]["name"]
                    .as_str()
                    .or_else(|| t["name"].as_str())
            })
            .map(str::to_owned)
            .collect()
    }

    /// The text of the last tool result sent (OpenAI `tool` message or Anthropic `tool_result`).
    pub fn last_tool_result(&self) -> Option<String> {
        self.messages()
            .iter()
            .rev()
            .find_map(|m| match self.format() {
                WireFormat::Anthropic => m["content"]
                    .as_array()?
                    .iter()
                    .rev()
                    .find(|b| b["type"] == "tool_result")
                    .and_then(|b| text_of(&b["content"])),
                _ => (m["role"] == "tool")
                    .then(|| text_of(&m["content"]))
                    .flatten(),
            })
    }

    /// The text of every user message that carries text (not only tool results), oldest first.
    pub fn user_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| text_of(&m["content"]))
            .collect()
    }

    /// The text of the last user message that carries text (not only tool results).
    pub fn last_user_text(&self) -> Option<String> {
        self.messages()
            .iter()
            .rev()
            .filter(|m| m["role"] == "user")
            .find_map(|m| text_of(&m["content"]))
    }
}

/// A string, or the concatenated `text` of an array of content blocks.
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let text: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            (!text.is_empty()).then(|| text.join(""))
        }
        _ => None,
    }
}
