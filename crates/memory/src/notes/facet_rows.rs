//! A chunk's facets (see [`memory_index::ChunkFacets`]) as the store builds them: from a note
//! being written, or read back from the `chunks` and `notes` columns at load and catch-up.

use memory_index::ChunkFacets;
use memory_index::terms::{TermBag, text_terms};

use crate::error::MemoryError;
use crate::notes::indexing::ChunkMeta;
use crate::notes::metadata::NoteMetadata;
use crate::time;

/// For the chunks of a note being written with `metadata`.
pub(crate) fn note_facets(meta: &ChunkMeta, metadata: &NoteMetadata) -> ChunkFacets {
    let category = metadata.category.map(|c| c.as_str());
    stored_facets(meta, category, metadata.expires_at.map(time::to_text))
}

/// From a chunk's stored metadata and its note's `category` and `expires_at` columns.
pub(crate) fn stored_facets(
    meta: &ChunkMeta,
    category: Option<&str>,
    expires_at: Option<String>,
) -> ChunkFacets {
    ChunkFacets::new(
        category,
        meta.tags.clone(),
        meta.created_at.clone(),
        expires_at,
    )
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
    Ok(stored_facets(&meta, category.as_deref(), expires_at))
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
