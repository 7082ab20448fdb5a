//! One change of the in-memory indexes, as the writer, the catch-up and the load at open hand it
//! to [`crate::vector_index::VectorIndex::apply`], and the lock helpers every index uses.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::facets::ChunkFacets;
use crate::terms::TermBag;

/// One change to apply after a commit.
#[derive(Debug, Clone)]
pub enum IndexChange {
    Upsert {
        session: String,
        chunk_id: i64,
        vector: Vec<f32>,
        facets: ChunkFacets,
        /// The chunk's words, for the keyword index.
        terms: TermBag,
    },
    Remove {
        session: String,
        chunk_id: i64,
    },
}

/// A poisoned lock only means another thread panicked mid-update of plain data; the data is
/// still a valid matrix (rows are copied whole), so keep serving.
pub fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
