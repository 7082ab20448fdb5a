//! Timestamps: RFC 3339 UTC text with microseconds and a `Z`, fixed width so that text order is
//! time order (filters compare them as text).

use chrono::{DateTime, Utc};

use crate::error::MemoryError;

pub(crate) use memory_index::time_text as to_text;

pub(crate) fn now_text() -> String {
    to_text(Utc::now())
}

pub(crate) fn parse(text: &str) -> Result<DateTime<Utc>, MemoryError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(MemoryError::corrupt("timestamp"))
}
