//! What a search may be restricted to, applied by both legs before ranking, and the one text form
//! of a time that the filters compare.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use crate::category::Category;

/// A time as stored: RFC 3339 UTC text with microseconds and a `Z`, fixed width so that text
/// order is time order (filters compare them as text).
pub fn time_text(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Restrictions applied to candidates of both legs before ranking. Empty = no restriction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryFilters {
    /// Only chunks created at or after this instant.
    pub created_after: Option<DateTime<Utc>>,
    /// Only chunks created strictly before this instant.
    pub created_before: Option<DateTime<Utc>>,
    /// Only notes carrying at least one of these tags (conversation messages have no tags).
    pub tags_any: Vec<String>,
    /// Only notes carrying every one of these tags.
    #[serde(default)]
    pub tags_all: Vec<String>,
    /// Only notes of this category (conversation messages have none).
    #[serde(default)]
    pub category: Option<Category>,
}

impl QueryFilters {
    pub fn is_empty(&self) -> bool {
        self.created_after.is_none()
            && self.created_before.is_none()
            && self.tags_any.is_empty()
            && self.tags_all.is_empty()
            && self.category.is_none()
    }
}

/// The filters plus what every search hides: notes expired at `expired_at` (set only when the
/// scope holds any, so that a store without expired notes keeps the unfiltered fast path).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub filters: QueryFilters,
    pub expired_at: Option<String>,
}

impl Scope {
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty() && self.expired_at.is_none()
    }
}
