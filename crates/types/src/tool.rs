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
