//! The in-memory vector index that serves the vector leg of hybrid search.
//!
//! Vectors are durable (f32) in `chunk_vectors`; this index is a cache rebuilt from them at open.
//! Per session it keeps one contiguous row-major matrix of int8 codes (each unit vector scaled by
//! its own `127 / max |component|`), the per-row scales, and a row → chunk id map: a quarter of the
//! memory of f32 rows, and a quarter of the bytes a scan reads. A query is answered by an exhaustive
//! scan (no approximate neighbour search): the query is quantized the same way, every row of the
//! requested sessions is scored with an integer dot product, the best `RESCORE_FACTOR × limit`
//! are kept, and those are rescored with the f32 query against their dequantized rows. Returned
//! scores are therefore cosines up to the rows' rounding (|error| ≲ 2·10⁻³, typically 5·10⁻⁴).
//! libSQL's own vector index and SQL brute force are one to two orders of magnitude slower.
//!
//! Above [`APPROX_MIN_ROWS`] rows (or always, with [`VectorLeg::Approximate`]) a session's matrix
//! also carries an inverted file ([`crate::ivf`]): the scan then reads only the rows of the lists
//! closest to the query, and keeps reading further lists until enough rows passed the filter, so a
//! filter still applies before ranking and a selective one falls back towards the exact scan. The
//! best rows are rescored exactly as above. The lists follow every change in [`VectorIndex::apply`]
//! (the one path of saves, updates, deletes, catch-ups and the load at open) and are retrained after
//! a change of size by four.
//!
//! Each session's matrix sits behind its own `RwLock`: searches of different sessions never contend,
//! and a writer holds a lock only for a row copy. Locks are never held across `.await`. All changes
//! come from the writer thread right after a commit, so the index follows commit order.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU8, Ordering as AtomicOrdering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::dot::{dot_f32_i8, dot_i8_gather, dot_i8_rows, quantize};
use crate::facets::{ChunkFacets, FacetFilter};
use crate::ivf::Ivf;
use crate::topk::TopK;

/// The i8 scan keeps this many candidates per result wanted; they are then rescored with the f32
/// query, so the query's own rounding never decides the order.
const RESCORE_FACTOR: usize = 4;

/// Rows scored per call of the dot-product kernel.
const SCAN_BLOCK: usize = 256;

/// A session with at least this many rows is searched through its inverted file
/// ([`VectorLeg::Auto`]). Measured (docs/benchmarks.md): at 100k rows on the synthetic corpus the
/// inverted file's hybrid search took 13.3 ms p50 against 3.7 ms for the exact scan (the lists'
/// rows are gathered, not contiguous, and the loosely clustered corpus makes most lists worth
/// reading), so `Auto` stays exact for every size measured; `VectorLeg::Approximate` forces it.
pub const APPROX_MIN_ROWS: usize = 2_000_000;

/// How the vector leg finds its candidates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum VectorLeg {
    /// Exact scan for sessions below [`APPROX_MIN_ROWS`] rows, inverted file above.
    #[default]
    Auto,
    /// Always the exact scan. Lists built before a switch to `Exact` are kept in step with the
    /// rows (so a switch back costs nothing) but none are trained.
    Exact,
    /// The inverted file at every size (for tests of the approximate path on small stores).
    Approximate,
}

impl VectorLeg {
    fn to_u8(self) -> u8 {
        match self {
            Self::Auto => 0,
            Self::Exact => 1,
            Self::Approximate => 2,
        }
    }

    fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Exact,
            2 => Self::Approximate,
            _ => Self::Auto,
        }
    }

    /// Whether a session of `rows` rows keeps an inverted file (`None`: leave it as it is).
    fn wants_lists(self, rows: usize) -> Option<bool> {
        match self {
            Self::Auto => Some(rows >= APPROX_MIN_ROWS),
            Self::Exact => None,
            Self::Approximate => Some(rows > 0),
        }
    }
}

#[derive(Debug, Default)]
struct SessionMatrix {
    codes: Vec<i8>,
    scales: Vec<f32>,
    ids: Vec<i64>,
    facets: Vec<ChunkFacets>,
    rows: HashMap<i64, usize>,
    /// The inverted file, when the session is large enough (or the approximate leg is forced).
    ivf: Option<Ivf>,
}

impl SessionMatrix {
    fn upsert(&mut self, dims: usize, chunk_id: i64, vector: &[f32], facets: &ChunkFacets) {
        let row = match self.rows.get(&chunk_id) {
            Some(&row) => row,
            None => {
                let row = self.ids.len();
                self.rows.insert(chunk_id, row);
                self.ids.push(chunk_id);
                self.scales.push(0.0);
                self.facets.push(ChunkFacets::default());
                self.codes.resize((row + 1) * dims, 0);
                row
            }
        };
        self.scales[row] = quantize(vector, &mut self.codes[row * dims..(row + 1) * dims]);
        self.facets[row] = facets.clone();
        if let Some(ivf) = &mut self.ivf {
            ivf.place(
                row,
                &self.codes[row * dims..(row + 1) * dims],
                self.scales[row],
            );
        }
    }

    /// Builds, retrains or drops the inverted file after changes, as `leg` wants for this size.
    fn maintain(&mut self, dims: usize, leg: VectorLeg) {
        let rows = self.ids.len();
        let Some(wanted) = leg.wants_lists(rows) else {
            return;
        };
        if !wanted {
            self.ivf = None;
        } else if self.ivf.as_ref().is_none_or(|ivf| ivf.is_stale(rows)) {
            self.ivf = Some(Ivf::train(&self.codes, &self.scales, dims));
            tracing::debug!(rows, "trained the vector index's lists");
        }
    }

    /// Removes a row by moving the last row into its place.
    fn remove(&mut self, dims: usize, chunk_id: i64) {
        let Some(row) = self.rows.remove(&chunk_id) else {
            return;
        };
        let last = self.ids.len() - 1;
        if let Some(ivf) = &mut self.ivf {
            ivf.remove(row, last);
        }
        if row != last {
            self.codes
                .copy_within(last * dims..(last + 1) * dims, row * dims);
            self.scales[row] = self.scales[last];
            self.facets.swap(row, last);
            let moved = self.ids[last];
            self.ids[row] = moved;
            self.rows.insert(moved, row);
        }
        self.ids.truncate(last);
        self.scales.truncate(last);
        self.facets.truncate(last);
        self.codes.truncate(last * dims);
    }

    fn row(&self, dims: usize, row: usize) -> &[i8] {
        &self.codes[row * dims..(row + 1) * dims]
    }
}

/// One change to apply after a commit.
#[derive(Debug, Clone)]
pub(crate) enum IndexChange {
    Upsert {
        session: String,
        chunk_id: i64,
        vector: Vec<f32>,
        facets: ChunkFacets,
    },
    Remove {
        session: String,
        chunk_id: i64,
    },
}

#[derive(Debug)]
pub(crate) struct VectorIndex {
    model_id: String,
    dims: usize,
    /// A [`VectorLeg`] (changed at run time by benches and tests).
    leg: AtomicU8,
    sessions: RwLock<HashMap<String, Arc<RwLock<SessionMatrix>>>>,
}

/// A poisoned lock only means another thread panicked mid-update of plain data; the data is
/// still a valid matrix (rows are copied whole), so keep serving.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl VectorIndex {
    #[cfg(test)]
    pub(crate) fn new(model_id: &str, dims: usize) -> Self {
        Self::with_leg(model_id, dims, VectorLeg::Auto)
    }

    pub(crate) fn with_leg(model_id: &str, dims: usize, leg: VectorLeg) -> Self {
        Self {
            model_id: model_id.to_owned(),
            dims,
            leg: AtomicU8::new(leg.to_u8()),
            sessions: RwLock::new(HashMap::new()),
        }
    }

    pub(crate) fn leg(&self) -> VectorLeg {
        VectorLeg::from_u8(self.leg.load(AtomicOrdering::Relaxed))
    }

    /// Switches the leg; lists are built or dropped now, for every session.
    pub(crate) fn set_leg(&self, leg: VectorLeg) {
        self.leg.store(leg.to_u8(), AtomicOrdering::Relaxed);
        let matrices: Vec<_> = read(&self.sessions).values().cloned().collect();
        for matrix in matrices {
            write(&matrix).maintain(self.dims, leg);
        }
    }

    pub(crate) fn model_id(&self) -> &str {
        &self.model_id
    }

    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// Number of vectors held.
    pub(crate) fn len(&self) -> usize {
        read(&self.sessions)
            .values()
            .map(|m| read(m).ids.len())
            .sum()
    }

    /// Each session's list count (sessions without lists left out), for tests.
    #[cfg(test)]
    pub(crate) fn list_counts(&self) -> Vec<usize> {
        read(&self.sessions)
            .values()
            .filter_map(|m| read(m).ivf.as_ref().map(Ivf::list_count))
            .collect()
    }

    /// Each session's rows held in lists (sessions without lists left out), for tests.
    #[cfg(test)]
    pub(crate) fn rows_in_lists(&self) -> Vec<usize> {
        read(&self.sessions)
            .values()
            .filter_map(|m| read(m).ivf.as_ref().map(Ivf::rows))
            .collect()
    }

    /// Applies committed changes; lists follow each row, and are (re)trained once per call when
    /// the size wants it.
    pub(crate) fn apply(&self, changes: &[IndexChange]) {
        let touched = self.apply_rows(changes);
        // Lists are (re)trained once per batch, not per row.
        let leg = self.leg();
        for matrix in touched {
            write(&matrix).maintain(self.dims, leg);
        }
    }

    /// Applies changes without training lists (a load at open, page by page; [`Self::train`]
    /// follows).
    pub(crate) fn apply_untrained(&self, changes: &[IndexChange]) {
        self.apply_rows(changes);
    }

    /// Trains (or drops) every session's lists as the leg wants for its size.
    pub(crate) fn train(&self) {
        self.set_leg(self.leg());
    }

    /// An empty index for the same model, dimensions and leg.
    pub(crate) fn empty_like(&self) -> Self {
        Self::with_leg(&self.model_id, self.dims, self.leg())
    }

    /// Takes over `other`'s rows (a reload) in one step.
    pub(crate) fn replace_with(&self, other: Self) {
        let sessions = other
            .sessions
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *write(&self.sessions) = sessions;
    }

    /// The matrices changed.
    fn apply_rows(&self, changes: &[IndexChange]) -> Vec<Arc<RwLock<SessionMatrix>>> {
        let mut touched: HashMap<&str, Arc<RwLock<SessionMatrix>>> = HashMap::new();
        for change in changes {
            match change {
                IndexChange::Upsert {
                    session,
                    chunk_id,
                    vector,
                    facets,
                } => {
                    if vector.len() != self.dims {
                        tracing::warn!(chunk_id, "vector of the wrong size kept out of the index");
                        continue;
                    }
                    let matrix = self.matrix_or_insert(session);
                    write(&matrix).upsert(self.dims, *chunk_id, vector, facets);
                    touched.entry(session).or_insert(matrix);
                }
                IndexChange::Remove { session, chunk_id } => {
                    let matrix = read(&self.sessions).get(session).cloned();
                    if let Some(matrix) = matrix {
                        write(&matrix).remove(self.dims, *chunk_id);
                        touched.entry(session).or_insert(matrix);
                    }
                }
            }
        }
        touched.into_values().collect()
    }

    fn matrix_or_insert(&self, session: &str) -> Arc<RwLock<SessionMatrix>> {
        if let Some(m) = read(&self.sessions).get(session) {
            return Arc::clone(m);
        }
        Arc::clone(write(&self.sessions).entry(session.to_owned()).or_default())
    }

    /// Number of vector components a search of `sessions` reads (to decide where it runs).
    pub(crate) fn scan_size(&self, sessions: &[String]) -> usize {
        let map = read(&self.sessions);
        let mut seen = HashSet::new();
        sessions
            .iter()
            .filter(|s| seen.insert(s.as_str()))
            .filter_map(|s| map.get(s))
            .map(|m| read(m).codes.len())
            .sum()
    }

    /// The `limit` chunks of `sessions` closest to `query`, best first, as (chunk id, cosine).
    /// Only chunks whose facets `filter` allows are considered (before ranking) when it is given.
    /// Cosines ≤ 0 are not matches.
    /// Blocks for the length of the scan (about 2 ms per 100k rows of 384 dimensions with AVX2).
    pub(crate) fn search(
        &self,
        sessions: &[String],
        query: &[f32],
        limit: usize,
        filter: Option<&FacetFilter>,
    ) -> Vec<(i64, f32)> {
        let dims = self.dims;
        if query.len() != dims || limit == 0 {
            return Vec::new();
        }
        let mut query_codes = vec![0i8; dims];
        let query_scale = quantize(query, &mut query_codes);
        if query_scale == 0.0 {
            return Vec::new();
        }
        let matrices: Vec<Arc<RwLock<SessionMatrix>>> = {
            let map = read(&self.sessions);
            let mut seen = HashSet::new();
            sessions
                .iter()
                .filter(|s| seen.insert(s.as_str()))
                .filter_map(|s| map.get(s).cloned())
                .collect()
        };
        // Read locks are held through the scan and the rescoring, so rows cannot move between them.
        let guards: Vec<RwLockReadGuard<'_, SessionMatrix>> =
            matrices.iter().map(|m| read(m)).collect();
        let keep = limit.saturating_mul(RESCORE_FACTOR);
        let mut top = TopK::new(keep);
        let mut dots = vec![0i32; SCAN_BLOCK];
        let exact = self.leg() == VectorLeg::Exact;
        for (m, matrix) in guards.iter().enumerate() {
            if let Some(ivf) = matrix.ivf.as_ref().filter(|_| !exact) {
                let query = QueryCodes {
                    codes: &query_codes,
                    scale: query_scale,
                };
                scan_lists(matrix, ivf, &query, filter, &mut top, m);
                continue;
            }
            for (block, ids) in matrix.ids.chunks(SCAN_BLOCK).enumerate() {
                let first = block * SCAN_BLOCK;
                let codes = &matrix.codes[first * dims..(first + ids.len()) * dims];
                dot_i8_rows(&query_codes, codes, dims, &mut dots);
                for (i, &dot) in dots.iter().take(ids.len()).enumerate() {
                    let row = first + i;
                    if filter.is_some_and(|f| !f.allows(&matrix.facets[row])) {
                        continue;
                    }
                    // The query's scale is a positive constant: left out of the ranking score.
                    let approx = dot as f32 * matrix.scales[row];
                    if approx > 0.0 {
                        top.offer(approx, (m, row));
                    }
                }
            }
        }
        let mut rescored: Vec<(i64, f32)> = top
            .into_sorted()
            .into_iter()
            .filter_map(|((m, row), _)| {
                let matrix = guards.get(m)?;
                let score = dot_f32_i8(query, matrix.row(dims, row)) * matrix.scales[row];
                (score > 0.0).then(|| (matrix.ids[row], score))
            })
            .collect();
        rescored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        rescored.truncate(limit);
        rescored
    }
}

/// Slack for int8 rounding when a list's bound is compared with the kept candidates (cosine).
const BOUND_SLACK: f32 = 0.01;

/// The quantized query and its scale.
struct QueryCodes<'a> {
    codes: &'a [i8],
    scale: f32,
}

/// The first pass over one matrix through its lists: the `nprobe` lists closest to the query,
/// then every other list whose bound reaches the worst candidate kept (all lists while fewer than
/// `top`'s size passed the filter). Candidates go to `top` as `(m, row)`.
fn scan_lists(
    matrix: &SessionMatrix,
    ivf: &Ivf,
    query: &QueryCodes<'_>,
    filter: Option<&FacetFilter>,
    top: &mut TopK<(usize, usize)>,
    m: usize,
) {
    let query_codes = query.codes;
    let dims = query_codes.len();
    let (order, nprobe) = ivf.probe_order(query_codes, query.scale);
    let mut dots = Vec::new();
    let mut passed = 0usize;
    for (probed, (c, bound)) in order.into_iter().enumerate() {
        if probed >= nprobe
            && passed >= top.limit
            && let Some(floor) = top.floor()
            && bound < floor * query.scale - BOUND_SLACK
        {
            continue;
        }
        let rows = ivf.list(c);
        dots.resize(rows.len(), 0);
        dot_i8_gather(query_codes, &matrix.codes, dims, rows, &mut dots);
        for (&row, &dot) in rows.iter().zip(&dots) {
            let row = row as usize;
            if filter.is_some_and(|f| !f.allows(&matrix.facets[row])) {
                continue;
            }
            // As in the exact scan, cosines ≤ 0 are not matches (and do not count as found).
            let approx = dot as f32 * matrix.scales[row];
            if approx > 0.0 {
                passed += 1;
                top.offer(approx, (m, row));
            }
        }
    }
}

#[cfg(test)]
#[path = "vector_index_tests.rs"]
mod tests;
