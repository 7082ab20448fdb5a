//! The index's rows as plain data, for a snapshot kept on disk beside the store (so that an
//! open reads them back instead of re-reading, re-tokenizing and re-quantizing every chunk).

use std::collections::HashMap;

use super::VectorIndex;
use crate::facets::ChunkFacets;
use crate::index_change::{IndexChange, read};
use crate::terms::TermBag;

/// One chunk as the index holds it: its int8 codes and scale, facets and keyword terms.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRow {
    pub session: String,
    pub chunk_id: i64,
    pub scale: f32,
    pub codes: Vec<i8>,
    pub facets: ChunkFacets,
    pub terms: TermBag,
}

impl IndexRow {
    /// The change that puts this row back: the vector its codes stand for, which quantizes to
    /// the same codes and scale (the largest code is ±127), so an index rebuilt from rows
    /// answers exactly as the one they came from.
    pub fn into_change(self) -> IndexChange {
        let vector = self
            .codes
            .iter()
            .map(|&c| f32::from(c) * self.scale)
            .collect();
        IndexChange::Upsert {
            session: self.session,
            chunk_id: self.chunk_id,
            vector,
            facets: self.facets,
            terms: self.terms,
        }
    }
}

impl VectorIndex {
    /// Hands every row to `sink`, a session at a time, in pages of at most `page` rows (each
    /// session's matrix stays read-locked while its rows are handed over).
    pub fn export_rows(&self, page: usize, mut sink: impl FnMut(Vec<IndexRow>)) {
        let sessions: Vec<(String, _)> = read(&self.sessions)
            .iter()
            .map(|(name, m)| (name.clone(), std::sync::Arc::clone(m)))
            .collect();
        for (session, matrix) in sessions {
            let bags: HashMap<i64, TermBag> = self
                .keywords
                .of(std::slice::from_ref(&session))
                .first()
                .map(|(_, postings)| read(postings).bags().into_iter().collect())
                .unwrap_or_default();
            // One lock for the whole session: a removal moves the last row into the hole, so
            // pages read under separate locks could miss a row.
            let m = read(&matrix);
            let page = page.max(1);
            for start in (0..m.ids.len()).step_by(page) {
                let end = (start + page).min(m.ids.len());
                let out = (start..end)
                    .map(|row| IndexRow {
                        session: session.clone(),
                        chunk_id: m.ids[row],
                        scale: m.scales[row],
                        codes: m.row(self.dims, row).to_vec(),
                        facets: m.facets[row].clone(),
                        terms: bags.get(&m.ids[row]).cloned().unwrap_or_default(),
                    })
                    .collect();
                sink(out);
            }
        }
    }
}
