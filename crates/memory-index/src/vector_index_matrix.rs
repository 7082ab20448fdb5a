//! One matrix of the vector index: contiguous int8 rows, their scales, chunk ids and facets, and
//! (when the leg wants them) binary codes. A session large enough has its own; the smaller ones
//! share one ([`super::pool`]).

use crate::dot::quantize;
use crate::facets::{ChunkFacets, NO_KEY, time_key};
use crate::sign_codes::SignCodes;

#[derive(Debug, Default)]
pub(super) struct SessionMatrix {
    pub(super) codes: Vec<i8>,
    pub(super) scales: Vec<f32>,
    pub(super) ids: Vec<i64>,
    pub(super) facets: Vec<ChunkFacets>,
    /// Per row: its creation time's [`crate::facets::time_key`] (time filters check it alone).
    pub(super) created: Vec<i64>,
    pub(super) rows: rustc_hash::FxHashMap<i64, usize>,
    /// The binary codes, when the matrix is large enough (or the approximate leg is forced).
    pub(super) signs: Option<SignCodes>,
}

impl SessionMatrix {
    /// Sets chunk `chunk_id`'s row (appended when new); returns its row.
    pub(super) fn upsert(
        &mut self,
        dims: usize,
        chunk_id: i64,
        vector: &[f32],
        facets: &ChunkFacets,
    ) -> usize {
        let row = self.row_for(dims, chunk_id);
        self.scales[row] = quantize(vector, &mut self.codes[row * dims..(row + 1) * dims]);
        self.created[row] = time_key(&facets.created_at);
        self.facets[row] = facets.clone();
        self.recode(dims, row);
        row
    }

    /// Sets chunk `chunk_id`'s row from codes already quantized (a row moving between matrices).
    pub(super) fn upsert_coded(
        &mut self,
        dims: usize,
        chunk_id: i64,
        (codes, scale): (&[i8], f32),
        facets: ChunkFacets,
    ) {
        let row = self.row_for(dims, chunk_id);
        self.codes[row * dims..(row + 1) * dims].copy_from_slice(codes);
        self.scales[row] = scale;
        self.created[row] = time_key(&facets.created_at);
        self.facets[row] = facets;
        self.recode(dims, row);
    }

    /// The row of `chunk_id`, appended (zeroed) when it has none.
    fn row_for(&mut self, dims: usize, chunk_id: i64) -> usize {
        if let Some(&row) = self.rows.get(&chunk_id) {
            return row;
        }
        let row = self.ids.len();
        self.rows.insert(chunk_id, row);
        self.ids.push(chunk_id);
        self.scales.push(0.0);
        self.facets.push(ChunkFacets::default());
        self.created.push(NO_KEY);
        // The rows gathered at random: on huge pages once large (see `huge_pages.rs`).
        crate::huge_pages::reserve(&mut self.codes, (row + 1) * dims);
        self.codes.resize((row + 1) * dims, 0);
        row
    }

    fn recode(&mut self, dims: usize, row: usize) {
        if let Some(signs) = &mut self.signs {
            signs.set(
                row,
                &self.codes[row * dims..(row + 1) * dims],
                self.scales[row],
            );
        }
    }

    /// Removes a row by moving the last row into its place; returns `(row, last)`: the row
    /// removed and the one that was last (moved into it unless they are the same).
    pub(super) fn remove(&mut self, dims: usize, chunk_id: i64) -> Option<(usize, usize)> {
        let row = self.rows.remove(&chunk_id)?;
        let last = self.ids.len() - 1;
        if let Some(signs) = &mut self.signs {
            signs.remove(row, last);
        }
        if row != last {
            self.codes
                .copy_within(last * dims..(last + 1) * dims, row * dims);
            self.scales[row] = self.scales[last];
            self.facets.swap(row, last);
            self.created[row] = self.created[last];
            let moved = self.ids[last];
            self.ids[row] = moved;
            self.rows.insert(moved, row);
        }
        self.ids.truncate(last);
        self.scales.truncate(last);
        self.facets.truncate(last);
        self.created.truncate(last);
        self.codes.truncate(last * dims);
        Some((row, last))
    }

    /// Whether `filter` (if any) allows row `row`.
    pub(super) fn allowed(&self, filter: Option<&crate::facets::FacetFilter>, row: usize) -> bool {
        filter.is_none_or(|f| f.allows_keyed(self.created[row], &self.facets[row]))
    }

    pub(super) fn row(&self, dims: usize, row: usize) -> &[i8] {
        &self.codes[row * dims..(row + 1) * dims]
    }

    /// Whether chunk `chunk_id` has exactly these codes and facets (see
    /// [`super::VectorIndex::holds`]).
    pub(super) fn holds(
        &self,
        dims: usize,
        chunk_id: i64,
        codes: (&[i8], f32),
        facets: &ChunkFacets,
    ) -> bool {
        self.rows.get(&chunk_id).is_some_and(|&row| {
            self.row(dims, row) == codes.0
                && self.scales[row] == codes.1
                && self.facets[row] == *facets
        })
    }
}
