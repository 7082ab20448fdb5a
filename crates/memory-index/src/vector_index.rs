//! The in-memory vector index that serves the vector leg of hybrid search.
//!
//! Vectors are durable in `chunk_vectors` (as the int8 codes and scale this index keeps of them);
//! this index is a cache rebuilt from them at open.
//! Per session it keeps one contiguous row-major matrix of int8 codes (each unit vector scaled by
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
//! scored with the int8 kernel (`first_pass.rs`), then rescored exactly as above. The codes follow every change in
//! [`VectorIndex::apply`] (the one path of saves, updates, deletes, catch-ups and the load at open)
//! and are rebuilt around a new centre after a change of size by four.
//!
//! Each session's matrix sits behind its own `RwLock`: searches of different sessions never contend,
//! and a writer holds a lock only for a row copy. Locks are never held across `.await`. All changes
//! come from the writer thread right after a commit, so the index follows commit order.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use crate::calibration::{MIN_ROWS, Searching};
use crate::dot::{dot_f32_i8, dot_i8_rows, quantize};
use crate::facets::{ChunkFacets, FacetFilter};
pub use crate::index_change::{IndexChange, read, write};
use crate::keyword_index::KeywordIndex;
use crate::sign_codes::{SignCodes, candidate_count};
use crate::topk::TopK;
pub use crate::vector_leg::VectorLeg;

/// The i8 scan keeps this many candidates per result wanted; they are then rescored with the f32
/// query, so the query's own rounding never decides the order.
const RESCORE_FACTOR: usize = 4;

/// Rows scored per call of the dot-product kernel.
const SCAN_BLOCK: usize = 256;

/// `Auto` scans exactly when the first pass would keep more than one row in this many: a
/// gathered int8 row costs ~0.1 µs against ~0.02 µs for a row read in order, and the Hamming pass
/// itself ~0.006 µs a row (release, 384 dimensions, 100k rows), so the first pass stops paying
/// at about one row in six to eight.
const EXACT_WHEN_SHARE: usize = 8;

#[derive(Debug, Default)]
struct SessionMatrix {
    codes: Vec<i8>,
    scales: Vec<f32>,
    ids: Vec<i64>,
    facets: Vec<ChunkFacets>,
    rows: rustc_hash::FxHashMap<i64, usize>,
    /// The binary codes, when the session is large enough (or the approximate leg is forced).
    signs: Option<SignCodes>,
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
        if let Some(signs) = &mut self.signs {
            signs.set(
                row,
                &self.codes[row * dims..(row + 1) * dims],
                self.scales[row],
            );
        }
    }

    /// Removes a row by moving the last row into its place.
    fn remove(&mut self, dims: usize, chunk_id: i64) {
        let Some(row) = self.rows.remove(&chunk_id) else {
            return;
        };
        let last = self.ids.len() - 1;
        if let Some(signs) = &mut self.signs {
            signs.remove(row, last);
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

#[derive(Debug)]
pub struct VectorIndex {
    model_id: String,
    dims: usize,
    /// A [`VectorLeg`] (changed at run time by benches and tests).
    leg: AtomicU8,
    sessions: RwLock<HashMap<String, Arc<RwLock<SessionMatrix>>>>,
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
                let Some(matrix) = read(&self.sessions).get(session).cloned() else {
                    return false;
                };
                let matrix = read(&matrix);
                let Some(&row) = matrix.rows.get(chunk_id) else {
                    return false;
                };
                let scale = quantize(vector, &mut codes);
                matrix.row(self.dims, row) == codes.as_slice()
                    && matrix.scales[row] == scale
                    && matrix.facets[row] == *facets
            }
            IndexChange::Remove { session, chunk_id } => read(&self.sessions)
                .get(session)
                .is_none_or(|m| !read(m).rows.contains_key(chunk_id)),
        })
    }

    /// The keyword postings of the indexed chunks.
    pub fn keywords(&self) -> &KeywordIndex {
        &self.keywords
    }

    /// Whether `filter` allows chunk `chunk_id` of `session` (false when it is not indexed).
    pub fn allows(&self, session: &str, chunk_id: i64, filter: &FacetFilter) -> bool {
        let Some(matrix) = read(&self.sessions).get(session).cloned() else {
            return false;
        };
        let matrix = read(&matrix);
        matrix
            .rows
            .get(&chunk_id)
            .and_then(|&row| matrix.facets.get(row))
            .is_some_and(|facets| filter.allows(facets))
    }

    pub fn leg(&self) -> VectorLeg {
        VectorLeg::from_u8(self.leg.load(AtomicOrdering::Relaxed))
    }

    /// Switches the leg; binary codes are built or dropped now, for every session.
    pub fn set_leg(&self, leg: VectorLeg) {
        self.leg.store(leg.to_u8(), AtomicOrdering::Relaxed);
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
        read(&self.sessions)
            .values()
            .map(|m| read(m).ids.len())
            .sum()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        read(&self.sessions)
            .values()
            .all(|m| read(m).ids.is_empty())
    }

    /// Applies committed changes; binary codes follow each row, and are (re)built once per call
    /// when the size wants it.
    pub fn apply(&self, changes: &[IndexChange]) {
        let touched = self.apply_rows(changes);
        // Codes are (re)built once per batch, not per row.
        let leg = self.leg();
        for matrix in touched {
            write(&matrix).maintain(self.dims, leg);
        }
    }

    /// Applies changes without building codes (a load at open, page by page; [`Self::train`]
    /// follows).
    pub fn apply_untrained(&self, changes: &[IndexChange]) {
        self.apply_rows(changes);
    }

    /// Builds (or drops) every session's binary codes as the leg wants for its size.
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
        *write(&self.sessions) = sessions;
        self.keywords.replace_with(other.keywords);
    }

    /// The matrices changed.
    fn apply_rows(&self, changes: &[IndexChange]) -> Vec<Arc<RwLock<SessionMatrix>>> {
        self.generation.fetch_add(1, AtomicOrdering::AcqRel);
        let mut touched: HashMap<&str, Arc<RwLock<SessionMatrix>>> = HashMap::new();
        for change in changes {
            match change {
                IndexChange::Upsert {
                    session,
                    chunk_id,
                    vector,
                    facets,
                    terms,
                } => {
                    if vector.len() != self.dims {
                        tracing::warn!(chunk_id, "vector of the wrong size kept out of the index");
                        continue;
                    }
                    let matrix = self.matrix_or_insert(session);
                    write(&matrix).upsert(self.dims, *chunk_id, vector, facets);
                    touched.entry(session).or_insert(matrix);
                    let expires_at = facets.expires_at.as_deref();
                    self.keywords.upsert(session, *chunk_id, terms, expires_at);
                }
                IndexChange::Remove { session, chunk_id } => {
                    self.keywords.remove(session, *chunk_id);
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

    /// The matrices of `sessions` (each once; sessions without rows left out).
    fn matrices_of(&self, sessions: &[String]) -> Vec<Arc<RwLock<SessionMatrix>>> {
        let map = read(&self.sessions);
        let mut seen = HashSet::new();
        sessions
            .iter()
            .filter(|s| seen.insert(s.as_str()))
            .filter_map(|s| map.get(s).cloned())
            .collect()
    }

    /// Per coded matrix of `sessions`: its rows and the share of them its first pass keeps.
    pub fn reach(&self, sessions: &[String]) -> Vec<(usize, f64)> {
        let matrices = self.matrices_of(sessions);
        let reach_of = |m: &SessionMatrix| Some((m.ids.len(), m.signs.as_ref()?.needed_share()));
        matrices.iter().filter_map(|m| reach_of(&read(m))).collect()
    }

    /// Number of vector components a search of `sessions` reads (to decide where it runs): the
    /// int8 rows, or an eighth of them (bytes of binary codes) where the first pass runs.
    pub fn scan_size(&self, sessions: &[String]) -> usize {
        let map = read(&self.sessions);
        let mut seen = HashSet::new();
        let exact = self.leg() == VectorLeg::Exact;
        sessions
            .iter()
            .filter(|s| seen.insert(s.as_str()))
            .filter_map(|s| map.get(s))
            .map(|m| {
                let m = read(m);
                match m.signs.is_some() && !exact {
                    true => m.codes.len() / 8,
                    false => m.codes.len(),
                }
            })
            .sum()
    }

    /// The `limit` chunks of `sessions` closest to `query`, best first, as (chunk id, cosine).
    /// Only chunks whose facets `filter` allows are considered (before ranking) when it is given.
    /// Cosines ≤ 0 are not matches.
    /// Blocks for the length of the scan: about 2 ms per 100k rows of 384 dimensions with AVX2 for
    /// the exact scan, 0.7 ms for the binary first pass (most of it the Hamming distances).
    pub fn search(
        &self,
        sessions: &[String],
        query: &[f32],
        limit: usize,
        filter: Option<&FacetFilter>,
    ) -> Vec<(i64, f32)> {
        self.search_with(self.leg(), sessions, query, limit, filter)
    }

    /// [`Self::search`] with `leg` rather than the index's own (the codes are used where they
    /// exist unless `leg` is [`VectorLeg::Exact`]; none are built here).
    pub fn search_with(
        &self,
        leg: VectorLeg,
        sessions: &[String],
        query: &[f32],
        limit: usize,
        filter: Option<&FacetFilter>,
    ) -> Vec<(i64, f32)> {
        self.search_counted(leg, sessions, query, limit, filter, false)
            .0
    }

    /// The search with `leg`; with `count` (a user's query), each matrix searched through its
    /// first pass counts the search towards its next live probe, and the second value says
    /// whether one is due (see [`crate::calibration`]).
    pub fn search_counted(
        &self,
        leg: VectorLeg,
        sessions: &[String],
        query: &[f32],
        limit: usize,
        filter: Option<&FacetFilter>,
        count: bool,
    ) -> (Vec<(i64, f32)>, bool) {
        let dims = self.dims;
        if query.len() != dims || limit == 0 {
            return (Vec::new(), false);
        }
        let mut query_codes = vec![0i8; dims];
        let query_scale = quantize(query, &mut query_codes);
        if query_scale == 0.0 {
            return (Vec::new(), false);
        }
        let mut probe_due = false;
        let _searching = self.searching();
        let matrices = self.matrices_of(sessions);
        // Read locks are held through the scan and the rescoring, so rows cannot move between them.
        let guards: Vec<RwLockReadGuard<'_, SessionMatrix>> =
            matrices.iter().map(|m| read(m)).collect();
        let keep = limit.saturating_mul(RESCORE_FACTOR);
        let mut top = TopK::new(keep);
        let mut dots = vec![0i32; SCAN_BLOCK];
        for (m, matrix) in guards.iter().enumerate() {
            let rows = matrix.ids.len();
            let want = match &matrix.signs {
                Some(signs) => signs.candidate_count(limit, rows),
                None => candidate_count(limit, rows),
            };
            // `Auto` scans exactly when the candidates would be so many that gathering them costs
            // more than reading every row in order; `Approximate` takes the first pass
            // regardless (with every row a candidate it returns what the exact scan does), so
            // that tests of small stores exercise it.
            let first = match leg {
                VectorLeg::Auto => want.saturating_mul(EXACT_WHEN_SHARE) < rows,
                VectorLeg::Approximate => true,
                VectorLeg::Exact => false,
            };
            if let Some(signs) = matrix.signs.as_ref().filter(|_| first) {
                if count && rows >= MIN_ROWS {
                    probe_due |= signs.probe_due();
                }
                first_pass::first_pass(
                    matrix,
                    signs,
                    query,
                    &query_codes,
                    want,
                    filter,
                    &mut top,
                    m,
                );
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
        (rescored, probe_due)
    }
}

#[path = "codes_upkeep.rs"]
mod codes_upkeep;
#[path = "first_pass.rs"]
mod first_pass;
#[path = "flat_matrix.rs"]
mod flat_matrix;
#[path = "recall_probe.rs"]
mod recall_probe;

#[cfg(test)]
#[path = "vector_index_tests.rs"]
mod tests;
