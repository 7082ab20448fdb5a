//! What a hybrid search asks for and what it returns.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use types::{NoteId, SessionId};

use crate::search::when::{QueryTime, TimeRange};
use memory_index::Category;
pub(crate) use memory_index::Scope;
pub use memory_index::{Fusion, QueryFilters, Weights};

/// One hybrid search over one or more sessions. Results of all sessions share one score scale.
#[derive(Debug, Clone, PartialEq)]
pub struct HybridQuery {
    /// Only these sessions are searched (by both legs, before ranking).
    pub sessions: Vec<SessionId>,
    pub text: String,
    /// Results wanted (clamped to `1..=`[`HybridQuery::MAX_TOP_K`]).
    pub top_k: usize,
    pub weights: Weights,
    pub filters: QueryFilters,
    pub fusion: Fusion,
    /// When the query is asked and in which time zone: with it, a time expression in `text`
    /// ("last week", "in May"; see [`crate::search::when`]) ranks what was written in that span
    /// first. `None`: times in the text are ordinary words.
    pub time: Option<QueryTime>,
    /// The span [`crate::MemoryStore::read_time`] already read for this query: the search takes
    /// it instead of reading `time` again (an event as anchor costs a lookup). `None`: read it.
    pub span: Option<TimeRange>,
}

impl HybridQuery {
    pub const MAX_TOP_K: usize = 100;
    /// Longest search text, in bytes, on every surface: the memory tools, the gateway's and the
    /// CLI's note searches refuse longer text (saying so), and recall cuts a message to it.
    pub const MAX_TEXT_BYTES: usize = 1024;

    /// A query with default weights, no filters and default fusion.
    pub fn new(sessions: Vec<SessionId>, text: impl Into<String>, top_k: usize) -> Self {
        Self {
            sessions,
            text: text.into(),
            top_k,
            weights: Weights::default(),
            filters: QueryFilters::default(),
            fusion: Fusion::default(),
            time: None,
            span: None,
        }
    }

    /// Hands the search the time already read for this query
    /// ([`crate::MemoryStore::read_time`]), so an event is looked up once: the span as read,
    /// or, when none was, no time at all (the words are then only words).
    pub fn settle_time(&mut self, read: Option<&TimeRange>) {
        match read {
            Some(span) => self.span = Some(span.clone()),
            None => self.time = None,
        }
    }
}

/// Where a hit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HitSource {
    /// A note saved with `memory_save` (session `memory:{user}`).
    UserMemory,
    /// A message of a conversation session.
    Conversation,
}

impl HitSource {
    pub fn as_str(self) -> &'static str {
        match self {
            HitSource::UserMemory => "user_memory",
            HitSource::Conversation => "conversation",
        }
    }

    pub(crate) fn parse(s: &str) -> Self {
        if s == "user_memory" {
            HitSource::UserMemory
        } else {
            HitSource::Conversation
        }
    }
}

/// One result: a note (its best chunk) or a conversation message (its best chunk).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub session_id: SessionId,
    pub source: HitSource,
    /// Set for notes; `None` for conversation messages (they cannot be updated or deleted).
    pub note_id: Option<NoteId>,
    /// The best-matching chunk; the whole text when the note or message is one chunk.
    pub text: String,
    /// For notes: the note's whole current text (read with the hit), whatever its length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note_text: Option<String>,
    /// For notes: the note's category, tags and context, read with the hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// For a keyed note (MCP `putMemory`): its namespace, so that a caller's namespace read
    /// rules apply to search results too. `None` for plain notes (namespace `notes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// For notes: written after untrusted input and not confirmed by the user yet (see
    /// [`crate::Provenance`]); whoever reads it back reads untrusted text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unconfirmed: bool,
    /// For an unconfirmed note changed after untrusted input: its text as the user last
    /// confirmed it, when [`MemoryStore::add_confirmed_texts`](crate::MemoryStore::add_confirmed_texts)
    /// was asked (a search leaves it `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_text: Option<String>,
    /// Fused relevance in `0..=1`, comparable across the sessions of one query.
    pub score: f64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub event_seq: u64,
}
