//! The in-memory vector index that serves the vector leg of hybrid search.
//!
//! Vectors are durable in `chunk_vectors` (as the int8 codes and scale this index keeps of them);
//! this index is a cache rebuilt from them at open.
//! Per matrix it keeps one contiguous row-major array of int8 codes (each unit vector scaled by
//! its own `127 / max |component|`), the per-row scales, and a row → chunk id map: a quarter of the
//! memory of f32 rows, and a quarter of the bytes a scan reads. A query of a small session is
//! answered by an exhaustive scan: the query is quantized the same way, every row of the
//! requested sessions is scored with an integer dot product, the best `RESCORE_FACTOR × limit`
//! are kept, and those are rescored with the f32 query against their dequantized rows. Returned
//! scores are therefore cosines up to the rows' rounding (|error| ≲ 2·10⁻³, typically 5·10⁻⁴).
//! libSQL's own vector index and SQL brute force are one to two orders of magnitude slower.
//!
//! Above [`crate::APPROX_MIN_ROWS`] rows (or always, with [`VectorLeg::Approximate`]) a session's matrix
//! also carries binary codes ([`crate::sign_codes`], one bit per dimension): the Hamming distance
//! to the query's code picks a thousand or a few thousand candidates — more where the session's
//! codes were measured to need more ([`crate::calibration`], live probes in `recall_probe.rs`) —
//! (only rows the filter allows, so a filter still applies before ranking), and only those are
//! scored with the int8 kernel (`gathered.rs`), then rescored exactly as above. The codes follow every change in
//! [`VectorIndex::apply`] (the one path of saves, updates, deletes, catch-ups and the load at open)
//! and are rebuilt around a new centre after a change of size by four.
//!
//! A session of [`crate::APPROX_MIN_ROWS`] rows or more has a matrix of its own; the smaller ones
//! share one, each row tagged with its session (`vector_index_pool.rs`), so that a search of
//! hundreds of small sessions (a user's past conversations) is one search of one matrix.
//!
//! Each matrix sits behind its own `RwLock`: searches of different sessions never contend,
//! and a writer holds a lock only for a row copy (the pool's lock is taken before the map of
//! sessions, by searches and writers alike). Locks are never held across `.await`. All changes
//! come from the writer thread right after a commit, so the index follows commit order.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, RwLock};

use crate::calibration::Searching;
use crate::dot::quantize;
use crate::facets::FacetFilter;
pub use crate::index_change::{IndexChange, read, write};
use crate::keyword_index::KeywordIndex;
use crate::sign_codes::SignCodes;
use crate::vector_leg::APPROX_MIN_ROWS;
pub use crate::vector_leg::VectorLeg;
use matrix::SessionMatrix;
use pool::Pool;

/// A matrix changed by a batch, and the share of rows learnt that its codes should keep.
type Changed = (Arc<RwLock<SessionMatrix>>, f64);

#[derive(Debug)]
pub struct VectorIndex {
    model_id: String,
    dims: usize,
    /// A [`VectorLeg`] (changed at run time by benches and tests).
    leg: AtomicU8,
    /// The sessions with a matrix of their own.
    sessions: RwLock<HashMap<String, Arc<RwLock<SessionMatrix>>>>,
    /// The rows of every other session.
    pool: RwLock<Pool>,
    /// The keyword leg's postings of the same chunks, kept by the same changes.
    keywords: KeywordIndex,
    /// Moves before every change of the rows: a search compares it before and after.
    generation: AtomicU64,
    /// Searches running now: live probes wait for them ([`Searching`]).
    searching: AtomicUsize,
}

impl VectorIndex {
    #[cfg(test)]
    pub fn new(model_id: &str, dims: usize) -> Self {
        Self::with_leg(model_id, dims, VectorLeg::Auto)
    }

    pub fn with_leg(model_id: &str, dims: usize, leg: VectorLeg) -> Self {
        Self {
            model_id: model_id.to_owned(),
            dims,
            leg: AtomicU8::new(leg.to_u8()),
            sessions: RwLock::new(HashMap::new()),
            pool: RwLock::new(Pool::default()),
            keywords: KeywordIndex::default(),
            generation: AtomicU64::new(0),
            searching: AtomicUsize::new(0),
        }
    }

    /// Counts as a search of this index until dropped: live probes read no rows meanwhile.
    pub fn searching(&self) -> Searching<'_> {
        Searching::start(&self.searching)
    }

    /// Moves (before the rows do) with every apply and reload.
    pub fn generation(&self) -> u64 {
        self.generation.load(AtomicOrdering::Acquire)
    }

    /// `f` of the matrix holding `session`'s chunk `chunk_id` and its row; `None` when the chunk
    /// is not indexed under that session.
    fn with_row<R>(
        &self,
        session: &str,
        chunk_id: i64,
        f: impl FnOnce(&SessionMatrix, usize) -> R,
    ) -> Option<R> {
        let pool = read(&self.pool);
        let own = read(&self.sessions).get(session).cloned();
        match own {
            Some(matrix) => {
                let matrix = read(&matrix);
                let row = *matrix.rows.get(&chunk_id)?;
                Some(f(&matrix, row))
            }
            None => {
                let row = pool.row_of(session, chunk_id)?;
                Some(f(&pool.matrix, row))
            }
        }
    }

    /// Whether the rows already reflect every change: an upsert's chunk is there with the same
    /// codes and facets (a chunk's text never changes under its id), a removed chunk is absent.
    /// True for this process's own writes, applied right after their commit.
    pub fn holds(&self, changes: &[IndexChange]) -> bool {
        let mut codes = vec![0i8; self.dims];
        changes.iter().all(|change| match change {
            IndexChange::Upsert {
                session,
                chunk_id,
                vector,
                facets,
                ..
            } => {
                let scale = quantize(vector, &mut codes);
                self.with_row(session, *chunk_id, |m, _| {
                    m.holds(self.dims, *chunk_id, (&codes, scale), facets)
                })
                .unwrap_or(false)
            }
            IndexChange::Remove { session, chunk_id } => {
                self.with_row(session, *chunk_id, |_, _| ()).is_none()
            }
        })
    }

    /// The keyword postings of the indexed chunks.
    pub fn keywords(&self) -> &KeywordIndex {
        &self.keywords
    }

    /// Whether `filter` allows chunk `chunk_id` of `session` (false when it is not indexed).
    pub fn allows(&self, session: &str, chunk_id: i64, filter: &FacetFilter) -> bool {
        self.with_row(session, chunk_id, |m, row| {
            m.facets.get(row).is_some_and(|f| filter.allows(f))
        })
        .unwrap_or(false)
    }

    /// [`Self::allows`] for one step of a search: the pool's lock taken once, its chunks
    /// found by id alone (a chunk id names one chunk), no session looked up by name but those
    /// with a matrix of their own.
    pub fn facet_check(&self) -> FacetCheck<'_> {
        FacetCheck {
            index: self,
            pool: read(&self.pool),
        }
    }

    pub fn leg(&self) -> VectorLeg {
        VectorLeg::from_u8(self.leg.load(AtomicOrdering::Relaxed))
    }

    /// Switches the leg; binary codes are built or dropped now, for every matrix.
    pub fn set_leg(&self, leg: VectorLeg) {
        self.leg.store(leg.to_u8(), AtomicOrdering::Relaxed);
        write(&self.pool).matrix.maintain(self.dims, leg);
        let matrices: Vec<_> = read(&self.sessions).values().cloned().collect();
        for matrix in matrices {
            write(&matrix).maintain(self.dims, leg);
        }
    }

    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Number of vectors held.
    pub fn len(&self) -> usize {
        let pooled = read(&self.pool).matrix.ids.len();
        let own: usize = read(&self.sessions)
            .values()
            .map(|m| read(m).ids.len())
            .sum();
        pooled + own
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies committed changes; binary codes follow each row, and are (re)built once per call
    /// when the size wants it.
    pub fn apply(&self, changes: &[IndexChange]) {
        let (touched, pool) = self.apply_rows(changes);
        // Codes are (re)built once per batch, not per row.
        let leg = self.leg();
        if pool {
            write(&self.pool).matrix.maintain(self.dims, leg);
        }
        for (matrix, learnt) in touched {
            let mut matrix = write(&matrix);
            matrix.maintain(self.dims, leg);
            // What live probes learnt of the pool's queries holds for a session leaving it.
            if let Some(signs) = &matrix.signs {
                signs.raise(learnt);
            }
        }
    }

    /// Applies changes without building codes (a load at open, page by page; [`Self::train`]
    /// follows).
    pub fn apply_untrained(&self, changes: &[IndexChange]) {
        self.apply_rows(changes);
    }

    /// Builds (or drops) every matrix's binary codes as the leg wants for its size.
    pub fn train(&self) {
        self.set_leg(self.leg());
    }

    /// An empty index for the same model, dimensions and leg.
    pub fn empty_like(&self) -> Self {
        Self::with_leg(&self.model_id, self.dims, self.leg())
    }

    /// Takes over `other`'s rows (a reload) in one step.
    pub fn replace_with(&self, other: Self) {
        self.generation.fetch_add(1, AtomicOrdering::AcqRel);
        let sessions = other
            .sessions
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let pool = other
            .pool
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut pool_now = write(&self.pool);
        *write(&self.sessions) = sessions;
        *pool_now = pool;
        drop(pool_now);
        self.keywords.replace_with(other.keywords);
    }

    /// The own matrices changed (each with the share of rows learnt to carry into its codes),
    /// and whether the pool changed. A pooled session that reached [`APPROX_MIN_ROWS`] rows
    /// moves to a matrix of its own.
    fn apply_rows(&self, changes: &[IndexChange]) -> (Vec<Changed>, bool) {
        self.generation.fetch_add(1, AtomicOrdering::AcqRel);
        let dims = self.dims;
        let mut touched: HashMap<&str, Arc<RwLock<SessionMatrix>>> = HashMap::new();
        let mut pooled = HashSet::new();
        let mut pool_changed = false;
        let mut pool = write(&self.pool);
        for change in changes {
            match change {
                IndexChange::Upsert {
                    session,
                    chunk_id,
                    vector,
                    facets,
                    terms,
                } => {
                    if vector.len() != dims {
                        tracing::warn!(chunk_id, "vector of the wrong size kept out of the index");
                        continue;
                    }
                    match read(&self.sessions).get(session).cloned() {
                        Some(matrix) => {
                            write(&matrix).upsert(dims, *chunk_id, vector, facets);
                            touched.entry(session).or_insert(matrix);
                        }
                        None => {
                            pooled.insert(pool.upsert(dims, session, *chunk_id, vector, facets));
                            pool_changed = true;
                        }
                    }
                    let expires_at = facets.expires_at.as_deref();
                    self.keywords.upsert(session, *chunk_id, terms, expires_at);
                }
                IndexChange::Remove { session, chunk_id } => {
                    self.keywords.remove(session, *chunk_id);
                    match read(&self.sessions).get(session).cloned() {
                        Some(matrix) => {
                            write(&matrix).remove(dims, *chunk_id);
                            touched.entry(session).or_insert(matrix);
                        }
                        None => pool_changed |= pool.remove(dims, session, *chunk_id),
                    }
                }
            }
        }
        let mut touched: Vec<Changed> = touched.into_values().map(|m| (m, 0.0)).collect();
        let learnt = pool
            .matrix
            .signs
            .as_ref()
            .map_or(0.0, SignCodes::learnt_share);
        for n in pooled {
            if pool.rows_of(n) >= APPROX_MIN_ROWS {
                let name = pool.names[n as usize].clone();
                let own = Arc::new(RwLock::new(pool.take(dims, n)));
                write(&self.sessions).insert(name, Arc::clone(&own));
                touched.push((own, learnt));
            }
        }
        (touched, pool_changed)
    }

    /// The own matrices of `sessions` (each once; sessions without one left out).
    fn matrices_of(&self, sessions: &[String]) -> Vec<Arc<RwLock<SessionMatrix>>> {
        let map = read(&self.sessions);
        let mut seen = HashSet::new();
        sessions
            .iter()
            .filter(|s| seen.insert(s.as_str()))
            .filter_map(|s| map.get(s).cloned())
            .collect()
    }
}

/// See [`VectorIndex::facet_check`].
#[derive(Debug)]
pub struct FacetCheck<'a> {
    index: &'a VectorIndex,
    pool: std::sync::RwLockReadGuard<'a, Pool>,
}

impl FacetCheck<'_> {
    /// Whether `filter` allows chunk `chunk_id` of `session` (false when it is not indexed).
    pub fn allows(&self, session: &str, chunk_id: i64, filter: &FacetFilter) -> bool {
        let matrix = &self.pool.matrix;
        if let Some(&row) = matrix.rows.get(&chunk_id) {
            return matrix.allowed(Some(filter), row);
        }
        let own = read(&self.index.sessions).get(session).cloned();
        own.is_some_and(|m| {
            let m = read(&m);
            m.rows
                .get(&chunk_id)
                .is_some_and(|&row| m.allowed(Some(filter), row))
        })
    }
}

#[path = "codes_upkeep.rs"]
mod codes_upkeep;
#[path = "flat_matrix.rs"]
mod flat_matrix;
#[path = "gathered.rs"]
mod gathered;
#[path = "vector_index_matrix.rs"]
mod matrix;
#[path = "vector_index_pool.rs"]
mod pool;
#[path = "recall_probe.rs"]
mod recall_probe;
#[path = "vector_index_search.rs"]
mod search;

#[cfg(test)]
#[path = "vector_index_pool_tests.rs"]
mod pool_tests;
#[cfg(test)]
#[path = "vector_index_tests.rs"]
mod tests;
#[cfg(test)]
#[path = "vector_index_window_tests.rs"]
mod window_tests;
