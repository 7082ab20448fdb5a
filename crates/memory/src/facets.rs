//! What the filters of a search look at, kept per chunk in the in-memory vector index.
//!
//! Every chunk's facets (its note's category, tags and expiry, and the chunk's creation time) travel
//! with its vector in [`crate::vector_index::IndexChange::Upsert`], through the same paths as the
//! vector itself: the writer after each commit, the catch-up from the `index_changes` log, and the
//! load at open. A note's metadata only changes with an update, which rewrites its chunks, so the
//! facets are as current as the vectors. The vector leg then applies the filters to each row while
//! it scans (before ranking), with the same semantics as the keyword leg's SQL conditions
//! (see [`crate::keyword`]): times compare as stored text, conversation chunks have no category
//! and no tags.

use crate::error::MemoryError;
use crate::indexing::ChunkMeta;
use crate::metadata::{Category, NoteMetadata};
use crate::query::Scope;
use crate::terms::{TermBag, text_terms};
use crate::time;

/// The filterable facts of one chunk.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ChunkFacets {
    pub(crate) category: Option<Category>,
    pub(crate) tags: Box<[String]>,
    /// As stored (RFC 3339 text), compared as text like the SQL filters do.
    pub(crate) created_at: String,
    pub(crate) expires_at: Option<String>,
}

impl ChunkFacets {
    /// For the chunks of a note being written with `metadata`.
    pub(crate) fn for_note(meta: &ChunkMeta, metadata: &NoteMetadata) -> Self {
        let category = metadata.category.map(|c| c.as_str());
        Self::from_stored(meta, category, metadata.expires_at.map(time::to_text))
    }

    /// From a chunk's stored metadata and its note's `category` and `expires_at` columns.
    pub(crate) fn from_stored(
        meta: &ChunkMeta,
        category: Option<&str>,
        expires_at: Option<String>,
    ) -> Self {
        Self {
            category: category.and_then(|c| c.parse().ok()),
            tags: meta.tags.clone().into_boxed_slice(),
            created_at: meta.created_at.clone(),
            expires_at,
        }
    }
}

/// The columns [`facets_from_row`] reads, for a query joining `chunks c` and `notes n` (left),
/// followed by the chunk's text (for the keyword index, see [`terms_from_row`]).
pub(crate) const FACET_COLUMNS: &str = "c.metadata_json, n.category, n.expires_at, c.text";

/// The facets from [`FACET_COLUMNS`] starting at column `first` of `row`.
pub(crate) fn facets_from_row(row: &libsql::Row, first: i32) -> Result<ChunkFacets, MemoryError> {
    let ctx = "loading vectors";
    let meta: String = row.get(first).map_err(MemoryError::db(ctx))?;
    let meta: ChunkMeta =
        serde_json::from_str(&meta).map_err(MemoryError::corrupt("chunk metadata"))?;
    let category: Option<String> = row.get(first + 1).map_err(MemoryError::db(ctx))?;
    let expires_at: Option<String> = row.get(first + 2).map_err(MemoryError::db(ctx))?;
    Ok(ChunkFacets::from_stored(
        &meta,
        category.as_deref(),
        expires_at,
    ))
}

/// The keyword terms of the text read with [`FACET_COLUMNS`] starting at column `first`.
pub(crate) fn terms_from_row(row: &libsql::Row, first: i32) -> Result<TermBag, MemoryError> {
    Ok(text_terms(&text_from_row(row, first)?))
}

/// The chunk text read with [`FACET_COLUMNS`] starting at column `first`.
pub(crate) fn text_from_row(row: &libsql::Row, first: i32) -> Result<String, MemoryError> {
    row.get(first + 3)
        .map_err(MemoryError::db("loading vectors"))
}

/// A [`Scope`] prepared for checking many rows: the time bounds rendered once.
#[derive(Debug, Clone)]
pub(crate) struct FacetFilter {
    scope: Scope,
    after: Option<String>,
    before: Option<String>,
}

impl FacetFilter {
    pub(crate) fn new(scope: Scope) -> Self {
        Self {
            after: scope.filters.created_after.map(time::to_text),
            before: scope.filters.created_before.map(time::to_text),
            scope,
        }
    }

    /// Whether a search with this scope may return the chunk.
    pub(crate) fn allows(&self, facets: &ChunkFacets) -> bool {
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
