//! The known kinds of note, which a search filters on.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The known kinds of note (the peer system's four).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Concrete information (an endpoint, a port, a name).
    Fact,
    /// A recurring behaviour or trend.
    Pattern,
    /// A preference of the user or a setting.
    Preference,
    /// An ability or limitation of the agent itself.
    Capability,
}

impl Category {
    pub const ALL: [Category; 4] = [
        Category::Fact,
        Category::Pattern,
        Category::Preference,
        Category::Capability,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Fact => "fact",
            Category::Pattern => "pattern",
            Category::Preference => "preference",
            Category::Capability => "capability",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Category {
    type Err = UnknownCategory;

    /// The error text is the peer system's: `Invalid category '<value>'`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Category::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCategory(s.to_owned()))
    }
}

/// A category name that is none of [`Category::ALL`]; its text is the peer system's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid category '{0}'")]
pub struct UnknownCategory(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_parse_and_reject_with_the_peer_text() {
        for c in Category::ALL {
            assert_eq!(c.as_str().parse::<Category>().ok(), Some(c));
        }
        let err = "invalid_category"
            .parse::<Category>()
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("Invalid category 'invalid_category'")),
            "{err:?}"
        );
    }
}
