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
    /// The `memory` tool over a `/memories` tree of files (Anthropic's `memory_20250818`).
    Files,
}

impl MemoryDialect {
    pub const ALL: [MemoryDialect; 3] = [
        MemoryDialect::Notes,
        MemoryDialect::Categorized,
        MemoryDialect::Files,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryDialect::Notes => "notes",
            MemoryDialect::Categorized => "categorized",
            MemoryDialect::Files => "files",
        }
    }

    fn bit(self) -> u8 {
        match self {
            MemoryDialect::Notes => 1,
            MemoryDialect::Categorized => 2,
            MemoryDialect::Files => 4,
        }
    }
}

/// One or more memory dialects offered together (`memory = "files"` or
/// `memory = ["notes", "files"]`); never empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemoryDialects(u8);

impl MemoryDialects {
    /// The set of `dialects`; `None` when it is empty.
    pub fn of(dialects: &[MemoryDialect]) -> Option<Self> {
        let bits = dialects.iter().fold(0, |acc, d| acc | d.bit());
        (bits != 0).then_some(Self(bits))
    }

    pub fn contains(self, dialect: MemoryDialect) -> bool {
        self.0 & dialect.bit() != 0
    }

    /// The dialects of the set, in [`MemoryDialect::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = MemoryDialect> {
        MemoryDialect::ALL
            .into_iter()
            .filter(move |d| self.contains(*d))
    }
}

impl Default for MemoryDialects {
    fn default() -> Self {
        MemoryDialect::Notes.into()
    }
}

impl From<MemoryDialect> for MemoryDialects {
    fn from(dialect: MemoryDialect) -> Self {
        Self(dialect.bit())
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(MemoryDialect),
    Many(Vec<MemoryDialect>),
}

impl Serialize for MemoryDialects {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let all: Vec<MemoryDialect> = self.iter().collect();
        match all.as_slice() {
            [one] => OneOrMany::One(*one),
            _ => OneOrMany::Many(all),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for MemoryDialects {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expected =
            "\"notes\", \"categorized\", \"files\" or a list of them, e.g. [\"notes\", \"files\"]";
        let raw = OneOrMany::deserialize(d)
            .map_err(|_| serde::de::Error::custom(format!("expected {expected}")))?;
        let all = match raw {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        };
        Self::of(&all).ok_or_else(|| {
            serde::de::Error::custom(format!("the list is empty: expected {expected}"))
        })
    }
}

/// `[tools]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// `memory = "notes"` (default), `"categorized"`, `"files"`, or a list such as
    /// `["notes", "files"]`.
    pub memory: MemoryDialects,
    /// `[tools.web]`: `web_fetch` and `web_search`.
    pub web: super::WebConfig,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Option<MemoryDialects> {
        serde_json::from_str::<ToolsConfig>(json)
            .ok()
            .map(|c| c.memory)
    }

    #[test]
    fn dialects_parse() {
        use MemoryDialect::*;
        assert_eq!(
            parse(r#"{"memory": "categorized"}"#),
            Some(Categorized.into())
        );
        assert_eq!(parse(r#"{"memory": "files"}"#), Some(Files.into()));
        assert_eq!(
            parse(r#"{"memory": ["notes", "files"]}"#),
            MemoryDialects::of(&[Notes, Files])
        );
        assert_eq!(ToolsConfig::default().memory, Notes.into());
        assert_eq!(parse(r#"{"memory": []}"#), None);
        assert_eq!(parse(r#"{"memory": "scrolls"}"#), None);
        assert_eq!(parse(r#"{"memory": ["notes", "scrolls"]}"#), None);
        let both = MemoryDialects::of(&[Files, Notes]).unwrap_or_default();
        assert_eq!(both.iter().collect::<Vec<_>>(), vec![Notes, Files]);
        assert_eq!(
            serde_json::to_value(both).ok(),
            Some(serde_json::json!(["notes", "files"]))
        );
        assert_eq!(
            serde_json::to_value(MemoryDialects::from(Files)).ok(),
            Some(serde_json::json!("files"))
        );
    }
}
