//! What the model is offered: tool schemas and how much trust a call needs.

use serde::{Deserialize, Serialize};

/// How much a tool can change. The runtime runs consecutive `ReadOnly` calls in parallel, others one
/// at a time, and passes `Privileged` calls through the approval policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SafetyTier {
    ReadOnly,
    SideEffecting,
    Privileged,
}

/// A tool as offered to a model: its name, what it does, and a JSON Schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

impl ToolSchema {
    /// The OpenAI Chat Completions `tools[]` entry: `{"type":"function","function":{...}}`.
    pub fn to_openai(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }

    /// The Anthropic Messages `tools[]` entry: `{"name", "description", "input_schema"}`.
    pub fn to_anthropic(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_both_wire_formats() {
        let schema = ToolSchema {
            name: "memory_save".into(),
            description: "Save a note.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        };
        assert_eq!(
            schema.to_openai(),
            serde_json::json!({"type": "function", "function": {
                "name": "memory_save", "description": "Save a note.",
                "parameters": {"type": "object", "properties": {}}}})
        );
        assert_eq!(
            schema.to_anthropic(),
            serde_json::json!({"name": "memory_save", "description": "Save a note.",
                "input_schema": {"type": "object", "properties": {}}})
        );
    }
}
