//! What the filters of a search look at, kept per chunk in the in-memory vector index.
//!
//! Every chunk's facets (its note's category, tags and expiry, and the chunk's creation time) travel
//! with its vector in [`crate::IndexChange::Upsert`], through the same paths as the
//! vector itself: the writer after each commit, the catch-up from the `index_changes` log, and the
//! load at open. A note's metadata only changes with an update, which rewrites its chunks, so the
//! facets are as current as the vectors. The vector leg then applies the filters to each row while
//! it scans (before ranking), with the same semantics as the keyword leg's SQL conditions
//! (see the store's keyword SQL): times compare as stored text, conversation chunks have no category
//! and no tags.

use crate::category::Category;
use crate::filters::{Scope, time_text};

/// The filterable facts of one chunk.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkFacets {
    pub category: Option<Category>,
    pub tags: Box<[String]>,
    /// As stored (RFC 3339 text), compared as text like the SQL filters do.
    pub created_at: String,
    pub expires_at: Option<String>,
}

impl ChunkFacets {
    /// From a chunk's `tags` and creation time (as stored) and its note's `category` and
    /// `expires_at` columns; an unknown category reads as none.
    pub fn new(
        category: Option<&str>,
        tags: Vec<String>,
        created_at: String,
        expires_at: Option<String>,
    ) -> Self {
        Self {
            category: category.and_then(|c| c.parse().ok()),
            tags: tags.into_boxed_slice(),
            created_at,
            expires_at,
        }
    }
}

/// A [`Scope`] prepared for checking many rows: the time bounds rendered once.
#[derive(Debug, Clone)]
pub struct FacetFilter {
    scope: Scope,
    after: Option<String>,
    before: Option<String>,
}

impl FacetFilter {
    pub fn new(scope: Scope) -> Self {
        Self {
            after: scope.filters.created_after.map(time_text),
            before: scope.filters.created_before.map(time_text),
            scope,
        }
    }

    /// Whether a search with this scope may return the chunk.
    pub fn allows(&self, facets: &ChunkFacets) -> bool {
        let f = &self.scope.filters;
        if self.after.as_ref().is_some_and(|a| facets.created_at < *a) {
            return false;
        }
        if self
            .before
            .as_ref()
            .is_some_and(|b| facets.created_at >= *b)
        {
            return false;
        }
        if !f.tags_any.is_empty() && !facets.tags.iter().any(|t| f.tags_any.contains(t)) {
            return false;
        }
        if !f.tags_all.iter().all(|t| facets.tags.contains(t)) {
            return false;
        }
        if f.category.is_some() && facets.category != f.category {
            return false;
        }
        match (&self.scope.expired_at, &facets.expires_at) {
            (Some(now), Some(expires)) => expires > now,
            _ => true,
        }
    }
}
