//! The vector leg's search of a set of sessions: each session's own matrix by its binary first
//! pass or an exact scan, the pooled sessions as one (see `vector_index_pool.rs`), the best
//! candidates of all of them rescored with the f32 query.

use std::sync::RwLockReadGuard;

use super::gathered::{MOST_LISTS, scored, scored_each};
use super::pool::Pool;
use super::{SessionMatrix, VectorIndex, VectorLeg, read};
use crate::calibration::MIN_ROWS;
use crate::dot::{dot_f32_i8, dot_i8_rows, quantize};
use crate::facets::FacetFilter;
use crate::sign_codes::{Span as Keyed, candidate_count};
use crate::time_keys::{count_within, rows_within};
use crate::topk::TopK;

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

/// Where the first pass runs, a narrow span's rows are gathered and scored only when they are at
/// most this many times the candidates the pass would take among as many rows; a larger span
/// takes its candidates from the pass (distances the search's other filters computed anyway),
/// so that a span of a tenth of 100k rows gathers ~1,000 rows rather than 10,000.
const SPAN_GATHERED: usize = 2;

/// The pool is searched as a whole (its first pass, or every row in order with the other
/// sessions' rows skipped) when the sessions searched hold at least one of its rows in this
/// many; the rows of fewer are gathered and scanned exactly (a gathered row costs about five
/// read in order).
const POOL_WHOLE_SHARE: usize = 4;

/// What one search looks for.
struct Query<'q> {
    leg: VectorLeg,
    query: &'q [f32],
    codes: Vec<i8>,
    /// How many chunks each filter's search returns.
    limits: &'q [usize],
    /// One search per filter (a narrow span's rows are gathered and scored exactly rather than
    /// searched for among all, see [`Query::span`]).
    filters: &'q [Option<&'q FacetFilter>],
    /// A user's query: first passes count towards their next live probe.
    count: bool,
}

impl VectorIndex {
    /// Per coded matrix searched for `sessions`: its rows and the share of them its first pass
    /// keeps.
    pub fn reach(&self, sessions: &[String]) -> Vec<(usize, f64)> {
        let pool = read(&self.pool);
        let reach_of = |m: &SessionMatrix| Some((m.ids.len(), m.signs.as_ref()?.needed_share()));
        let mut out: Vec<_> = self
            .matrices_of(sessions)
            .iter()
            .filter_map(|m| reach_of(&read(m)))
            .collect();
        if pool.select(sessions).rows > 0 {
            out.extend(reach_of(&pool.matrix));
        }
        out
    }

    /// Number of vector components a search of `sessions` reads (to decide where it runs): the
    /// int8 rows, or an eighth of them (bytes of binary codes) where the first pass runs.
    pub fn scan_size(&self, sessions: &[String]) -> usize {
        let pool = read(&self.pool);
        let exact = self.leg() == VectorLeg::Exact;
        let size = |m: &SessionMatrix, rows: usize| match m.signs.is_some() && !exact {
            true => m.ids.len() * self.dims / 8,
            false => rows * self.dims,
        };
        let own: usize = self
            .matrices_of(sessions)
            .iter()
            .map(|m| {
                let m = read(m);
                size(&m, m.ids.len())
            })
            .sum();
        let pooled = pool.select(sessions).rows;
        own + if pooled > 0 {
            size(&pool.matrix, pooled)
        } else {
            0
        }
    }

    /// The ids of the chunks of `sessions` that `filter` allows, ascending, when its time bounds
    /// hold few of them (under one in [`EXACT_WHEN_SHARE`]); `None` when they hold more or the
    /// filter bounds no time. A leg that would check its candidates one by one checks them
    /// against this list instead (a narrow span refuses most, and each check by id is a hash
    /// look-up); an empty list means there is nothing to search.
    pub fn chunks_within(&self, sessions: &[String], filter: &FacetFilter) -> Option<Vec<i64>> {
        if !filter.bounds_time() {
            return None;
        }
        let pool = read(&self.pool);
        let matrices = self.matrices_of(sessions);
        let guards: Vec<RwLockReadGuard<'_, SessionMatrix>> =
            matrices.iter().map(|m| read(m)).collect();
        let selection = pool.select(sessions);
        let rows = selection.rows + guards.iter().map(|g| g.ids.len()).sum::<usize>();
        let most = rows / EXACT_WHEN_SHARE;
        // The keys alone first (one compare per row, vectorized): a wide span is known by them
        // before any row is listed. The pool's count holds when every pooled session is searched.
        let pooled = match selection.rows == pool.matrix.ids.len() {
            true => keyed_rows(&pool.matrix, filter),
            false => 0,
        };
        if guards.iter().map(|g| keyed_rows(g, filter)).sum::<usize>() + pooled > most {
            return None;
        }
        let mut ids = Vec::new();
        let mut inside = Vec::new();
        let mut take = |m: &SessionMatrix, admit: &dyn Fn(usize) -> bool| -> Option<()> {
            inside.clear();
            rows_within(&m.created, filter.key_window(), &mut inside);
            for row in inside.iter().map(|&row| row as usize) {
                if admit(row) && m.allowed(Some(filter), row) {
                    if ids.len() >= most {
                        return None;
                    }
                    ids.push(m.ids[row]);
                }
            }
            Some(())
        };
        if selection.rows > 0 {
            take(&pool.matrix, &|row| selection.admits(&pool, row))?;
        }
        for matrix in &guards {
            take(matrix, &|_| true)?;
        }
        ids.sort_unstable();
        Some(ids)
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
        let (mut found, due) = self.search_each(leg, sessions, query, &[limit], &[filter], count);
        (found.pop().unwrap_or_default(), due)
    }

    /// [`Self::search_counted`] under several filters at once, one list per filter in their
    /// order, of at most `limits[i]` chunks for `filters[i]`: each matrix's Hamming distances (or
    /// its exact dot products) are computed once and serve every filter, each of which then
    /// takes its own candidates and rescoring. Nothing is found when a limit is 0 or the limits
    /// are not one per filter (a caller's mistake, never a partial answer).
    pub fn search_each(
        &self,
        leg: VectorLeg,
        sessions: &[String],
        query: &[f32],
        limits: &[usize],
        filters: &[Option<&FacetFilter>],
        count: bool,
    ) -> (Vec<Vec<(i64, f32)>>, bool) {
        let dims = self.dims;
        let nothing = || (vec![Vec::new(); filters.len()], false);
        if query.len() != dims || limits.len() != filters.len() || limits.contains(&0) {
            return nothing();
        }
        let mut q = Query {
            leg,
            query,
            codes: vec![0i8; dims],
            limits,
            filters,
            count,
        };
        if quantize(query, &mut q.codes) == 0.0 {
            return nothing();
        }
        let _searching = self.searching();
        // The pool first, then the map of sessions (the order writers take them in). Read locks
        // are held through the scan and the rescoring, so rows cannot move between them.
        let pool = read(&self.pool);
        let matrices = self.matrices_of(sessions);
        let guards: Vec<RwLockReadGuard<'_, SessionMatrix>> =
            matrices.iter().map(|m| read(m)).collect();
        let mut tops: Vec<TopK<(usize, usize)>> = limits
            .iter()
            .map(|limit| TopK::new(limit.saturating_mul(RESCORE_FACTOR)))
            .collect();
        let mut probe_due = false;
        for (m, matrix) in guards.iter().enumerate() {
            probe_due |= q.matrix(matrix, matrix.ids.len(), &|_| true, &mut tops, m);
        }
        let pooled = guards.len();
        probe_due |= q.pool(&pool, sessions, &mut tops, pooled);
        let matrix_of = |m: usize| match m == pooled {
            true => Some(&pool.matrix),
            false => guards.get(m).map(|g| &**g),
        };
        let found = tops
            .into_iter()
            .zip(limits)
            .map(|(top, &limit)| {
                let mut rescored: Vec<(i64, f32)> = top
                    .into_sorted()
                    .into_iter()
                    .filter_map(|((m, row), _)| {
                        let matrix = matrix_of(m)?;
                        let score = dot_f32_i8(query, matrix.row(dims, row)) * matrix.scales[row];
                        (score > 0.0).then(|| (matrix.ids[row], score))
                    })
                    .collect();
                rescored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                rescored.truncate(limit);
                rescored
            })
            .collect();
        (found, probe_due)
    }
}

/// How many of `matrix`'s rows `filter`'s time bounds may allow, by their keys alone.
fn keyed_rows(matrix: &SessionMatrix, filter: &FacetFilter) -> usize {
    count_within(&matrix.created, filter.key_window())
}

/// What a filter's span of time holds of a matrix (see [`Query::span`]).
enum Span {
    /// The filter bounds no time.
    Untimed,
    /// These rows, few.
    Few(Vec<u32>),
    /// Many rows: at most this many.
    Many(usize),
}

/// One filter's test of a row of the matrix being searched.
type Admit<'a> = Box<dyn Fn(usize) -> bool + 'a>;

impl Query<'_> {
    /// Searches `matrix` (the `rows` of it `admit` may accept) into `tops` as `(m, row)`, one
    /// per filter: a narrow span's rows gathered ([`Self::span`]); for the other filters, one
    /// binary first pass when the matrix has codes and the leg wants it, else one exact scan of
    /// every row. Whether a live probe of it is due.
    fn matrix(
        &self,
        matrix: &SessionMatrix,
        rows: usize,
        admit: &dyn Fn(usize) -> bool,
        tops: &mut [TopK<(usize, usize)>],
        m: usize,
    ) -> bool {
        let admits: Vec<Admit<'_>> = self
            .filters
            .iter()
            .map(|&f| Box::new(move |row| admit(row) && matrix.allowed(f, row)) as Admit<'_>)
            .collect();
        // Filter `p`'s candidates among `rows` rows.
        let want_of = |p: usize, rows: usize| match &matrix.signs {
            Some(signs) => signs.candidate_count(self.limits[p], rows),
            None => candidate_count(self.limits[p], rows),
        };
        // The largest filter's candidates decide between the first pass and the scan.
        let want = (0..self.limits.len())
            .map(|p| want_of(p, rows))
            .max()
            .unwrap_or(0);
        // `Auto` scans exactly when the candidates would be so many that gathering them costs
        // more than reading every row in order; `Approximate` takes the first pass
        // regardless (with every row a candidate it returns what the exact scan does), so
        // that tests of small stores exercise it.
        let first = matrix.signs.is_some()
            && match self.leg {
                VectorLeg::Auto => want.saturating_mul(EXACT_WHEN_SHARE) < rows,
                VectorLeg::Approximate => true,
                VectorLeg::Exact => false,
            };
        // Each filter's candidates: a narrow span's rows gathered, or the first pass (or the
        // scan) taking as many as a matrix of the span's rows would need.
        let mut rest: Vec<(usize, usize)> = Vec::new();
        for (p, top) in tops.iter_mut().enumerate() {
            match self.span(self.filters[p], matrix, rows, &admits[p], first) {
                Span::Few(inside) => {
                    let wanted = want_of(p, inside.len());
                    if first && inside.len() > SPAN_GATHERED * wanted {
                        rest.push((p, wanted));
                    } else {
                        scored(matrix, &self.codes, &inside, &mut |s, row| {
                            top.offer(s, (m, row));
                        });
                    }
                }
                Span::Many(most) => rest.push((p, want_of(p, most))),
                Span::Untimed => rest.push((p, want_of(p, rows))),
            }
        }
        if rest.is_empty() {
            return false;
        }
        if let Some(signs) = matrix.signs.as_ref().filter(|_| first) {
            let due = self.count && matrix.ids.len() >= MIN_ROWS && signs.probe_due();
            let asks: Vec<&dyn Fn(usize) -> bool> =
                rest.iter().map(|&(p, _)| &*admits[p]).collect();
            let wants: Vec<usize> = rest.iter().map(|&(_, want)| want).collect();
            let mut outs: Vec<Vec<u32>> = wants
                .iter()
                .map(|&want| Vec::with_capacity(want + want / 4))
                .collect();
            // A span's candidates come from the rows created inside it (see `sign_bands.rs`).
            let spans: Vec<Option<Keyed<'_>>> = rest
                .iter()
                .map(|&(p, _)| {
                    let filter = self.filters[p].filter(|f| f.bounds_time())?;
                    Some(Keyed {
                        keys: &matrix.created,
                        filter,
                    })
                })
                .collect();
            let code = signs.query_code(self.query);
            signs.candidates_each(&code, &wants, &asks, &spans, &mut outs);
            for (lists, rest) in outs.chunks(MOST_LISTS).zip(rest.chunks(MOST_LISTS)) {
                scored_each(matrix, &self.codes, lists, &mut |list, s, row| {
                    tops[rest[list].0].offer(s, (m, row));
                });
            }
            return due;
        }
        let rest: Vec<usize> = rest.into_iter().map(|(p, _)| p).collect();
        let dims = self.codes.len();
        let mut dots = vec![0i32; SCAN_BLOCK];
        for (block, ids) in matrix.ids.chunks(SCAN_BLOCK).enumerate() {
            let first = block * SCAN_BLOCK;
            let codes = &matrix.codes[first * dims..(first + ids.len()) * dims];
            dot_i8_rows(&self.codes, codes, dims, &mut dots);
            for (i, &dot) in dots.iter().take(ids.len()).enumerate() {
                let row = first + i;
                // The query's scale is a positive constant: left out of the ranking score.
                let approx = dot as f32 * matrix.scales[row];
                if approx <= 0.0 {
                    continue;
                }
                for &p in &rest {
                    if admits[p](row) {
                        tops[p].offer(approx, (m, row));
                    }
                }
            }
        }
        false
    }

    /// What `filter`'s time span holds of `matrix`'s `rows` that `admit` accepts: the rows
    /// themselves, ascending, when they are few (the rows whose time is inside are at most one in
    /// [`EXACT_WHEN_SHARE`]); else at most how many (those rows, counted without asking `admit`;
    /// `rows` without `count`, when no first pass will take candidates for the span). A check of
    /// a row's time key costs about a nanosecond.
    fn span(
        &self,
        filter: Option<&FacetFilter>,
        matrix: &SessionMatrix,
        rows: usize,
        admit: &dyn Fn(usize) -> bool,
        count: bool,
    ) -> Span {
        let Some(window) = filter.filter(|f| f.bounds_time()) else {
            return Span::Untimed;
        };
        let most = rows / EXACT_WHEN_SHARE;
        // The keys alone first (one compare per row, no call): a wide span is known by them.
        let keyed = keyed_rows(matrix, window);
        if keyed > most {
            return Span::Many(if count { keyed } else { rows });
        }
        let mut inside = Vec::with_capacity(keyed);
        rows_within(&matrix.created, window.key_window(), &mut inside);
        inside.retain(|&row| admit(row as usize));
        Span::Few(inside)
    }

    /// Searches the pooled sessions among `sessions` into `tops` as `(m, row)`: the pool as a
    /// whole when they hold much of it, else their rows gathered (scored once for every
    /// filter). Whether a probe is due.
    fn pool(
        &self,
        pool: &Pool,
        sessions: &[String],
        tops: &mut [TopK<(usize, usize)>],
        m: usize,
    ) -> bool {
        let selection = pool.select(sessions);
        let matrix = &pool.matrix;
        if selection.rows == 0 {
            return false;
        }
        let whole = self.leg == VectorLeg::Approximate
            || selection.rows.saturating_mul(POOL_WHOLE_SHARE) >= matrix.ids.len();
        if whole {
            let admit = |row: usize| selection.admits(pool, row);
            return self.matrix(matrix, selection.rows, &admit, tops, m);
        }
        let mut rows = selection.rows_of(pool);
        rows.retain(|&row| {
            self.filters
                .iter()
                .any(|&f| matrix.allowed(f, row as usize))
        });
        scored(matrix, &self.codes, &rows, &mut |s, row| {
            for (top, &f) in tops.iter_mut().zip(self.filters) {
                if matrix.allowed(f, row) {
                    top.offer(s, (m, row));
                }
            }
        });
        false
    }
}
