//! `[tools]`: which tools the agent is offered.

use serde::{Deserialize, Serialize};

/// Which memory tools the model is offered; every dialect works on the same per-user notes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryDialect {
    /// `memory_search`, `memory_save`, `memory_update`, `memory_delete`.
    #[default]
    Notes,
    /// The peer system's `store_memory`, `search_memories`, `list_memories`.
    Categorized,
}

impl MemoryDialect {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryDialect::Notes => "notes",
            MemoryDialect::Categorized => "categorized",
        }
    }
}

/// `[tools]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// `memory = "notes"` (default) or `"categorized"`.
    pub memory: MemoryDialect,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialects_parse() {
        let c: ToolsConfig =
            serde_json::from_str(r#"{"memory": "categorized"}"#).unwrap_or_default();
        assert_eq!(c.memory, MemoryDialect::Categorized);
        assert_eq!(ToolsConfig::default().memory, MemoryDialect::Notes);
        assert!(serde_json::from_str::<ToolsConfig>(r#"{"memory": "files"}"#).is_err());
    }
}
