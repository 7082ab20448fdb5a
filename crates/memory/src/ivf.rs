//! The approximate first pass of the vector leg: an inverted file (IVF) over one session's rows.
//!
//! The rows are split into `nlist` lists by spherical k-means: each list has a unit centroid, and
//! every row belongs to the list whose centroid is closest to it (largest cosine). A query ranks
//! the centroids (`nlist` dot products) and scans only the rows of the best `nprobe` lists with
//! the same int8 kernel as the exact scan; the caller rescores the best of them exactly. After
//! the first `nprobe ≈ nlist / 6` lists, a further list is read only when the most any of its rows
//! can score (from the angle between the query and its centroid and the list's angular radius)
//! reaches the worst candidate kept so far: lists that cannot contribute are skipped, the others
//! are read, so the candidates are those of the exact scan up to int8 rounding.
//!
//! Why an IVF and not a graph (HNSW): the rows' int8 codes stay the only copy of the vectors (the
//! IVF adds 8 bytes per row: its list entry and the row's list), an insert costs one pass over the
//! centroids (~10–20 µs at a million rows) and never a graph repair, a delete is a swap in one
//! list, and a filter that rejects most rows degrades the search to more lists, at worst to the
//! exact scan, never to a disconnected graph. Training is k-means on an evenly spaced sample of
//! the rows (about 32 rows per list, a few passes), then one assignment pass over all rows.
//!
//! Lists are retrained when the matrix has grown (or shrunk) four-fold since the last training, so
//! list lengths stay near `√n`; between trainings new rows join their nearest existing list.

use crate::dot::{dot_i8_rows, quantize};

/// Sample rows per list when training.
const SAMPLE_PER_LIST: usize = 32;
/// k-means passes over the sample.
const ITERATIONS: usize = 6;
/// Most lists of one matrix (bounds the per-query and per-insert centroid pass).
const MAX_LISTS: usize = 1024;
/// A list count of `√n / LIST_DIVISOR`.
const LIST_DIVISOR: f64 = 2.0;
/// A query probes at least `nlist / PROBE_DIVISOR` lists...
const PROBE_DIVISOR: usize = 6;
/// ... and at least this many.
const MIN_PROBE: usize = 4;
/// Retrain when the row count has moved this factor away from the one trained on.
const RETRAIN_FACTOR: usize = 4;

/// One matrix's lists.
#[derive(Debug, Clone)]
pub(crate) struct Ivf {
    dims: usize,
    /// int8 codes of the unit centroids, `nlist × dims`, row-major.
    centroids: Vec<i8>,
    centroid_scales: Vec<f32>,
    /// The rows of each list (row indices of the matrix).
    lists: Vec<Vec<u32>>,
    /// Each row's list.
    list_of: Vec<u32>,
    /// Per list, a lower bound of the cosine between its centroid and any of its rows (the list's
    /// angular radius): it bounds from above what any row of the list can score for a query.
    /// Lowered by inserts, never raised by removals (still a bound), recomputed by training.
    min_cos: Vec<f32>,
    /// Rows when the lists were trained.
    trained_rows: usize,
}

impl Ivf {
    /// Trains lists on `rows` (`codes` row-major, `scales` one per row) and assigns every row.
    pub(crate) fn train(codes: &[i8], scales: &[f32], dims: usize) -> Self {
        let n = scales.len();
        let nlist = list_count(n);
        let sample_size = n.min(nlist * SAMPLE_PER_LIST);
        // Evenly spaced over insertion order: unrelated to content, and deterministic.
        let sample: Vec<usize> = (0..sample_size).map(|i| i * n / sample_size).collect();
        let mut ivf = Self {
            dims,
            centroids: vec![0; nlist * dims],
            centroid_scales: vec![0.0; nlist],
            lists: vec![Vec::new(); nlist],
            list_of: Vec::with_capacity(n),
            min_cos: vec![1.0; nlist],
            trained_rows: n,
        };
        // Start from evenly spaced sample rows.
        for c in 0..nlist {
            let row = sample[c * sample_size / nlist];
            ivf.centroids[c * dims..(c + 1) * dims].copy_from_slice(&codes[row * dims..][..dims]);
            ivf.centroid_scales[c] = scales[row];
        }
        let mut scores = vec![0i32; nlist];
        let mut sums = vec![0f32; nlist * dims];
        let mut counts = vec![0usize; nlist];
        let mut unit = vec![0f32; dims];
        for pass in 0..ITERATIONS {
            sums.iter_mut().for_each(|s| *s = 0.0);
            counts.iter_mut().for_each(|c| *c = 0);
            for &row in &sample {
                let code = &codes[row * dims..][..dims];
                let (c, _) = ivf.nearest(code, &mut scores);
                counts[c] += 1;
                for (s, &x) in sums[c * dims..(c + 1) * dims].iter_mut().zip(code) {
                    *s += scales[row] * f32::from(x);
                }
            }
            for c in 0..nlist {
                let sum = &sums[c * dims..(c + 1) * dims];
                let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
                if counts[c] == 0 || norm == 0.0 {
                    // An empty list restarts from another sample row.
                    let row = sample[(pass * 7919 + c * 104_729) % sample_size];
                    ivf.centroids[c * dims..(c + 1) * dims]
                        .copy_from_slice(&codes[row * dims..][..dims]);
                    ivf.centroid_scales[c] = scales[row];
                    continue;
                }
                unit.iter_mut().zip(sum).for_each(|(u, s)| *u = s / norm);
                ivf.centroid_scales[c] =
                    quantize(&unit, &mut ivf.centroids[c * dims..(c + 1) * dims]);
            }
        }
        for row in 0..n {
            let (c, cos) = ivf.nearest(&codes[row * dims..][..dims], &mut scores);
            ivf.lists[c].push(row_u32(row));
            ivf.list_of.push(row_u32(c));
            ivf.min_cos[c] = ivf.min_cos[c].min(cos * scales[row]);
        }
        ivf
    }

    /// Whether a matrix of `rows` rows should be retrained (its lists grew or shrank too far).
    pub(crate) fn is_stale(&self, rows: usize) -> bool {
        rows > self.trained_rows.saturating_mul(RETRAIN_FACTOR)
            || rows.saturating_mul(RETRAIN_FACTOR) < self.trained_rows
    }

    #[cfg(test)]
    pub(crate) fn list_count(&self) -> usize {
        self.lists.len()
    }

    /// The list whose centroid has the largest cosine with `code`, and that cosine divided by the
    /// row's scale.
    fn nearest(&self, code: &[i8], scores: &mut [i32]) -> (usize, f32) {
        dot_i8_rows(code, &self.centroids, self.dims, scores);
        let mut best = (0, f32::NEG_INFINITY);
        for (c, (&dot, &scale)) in scores.iter().zip(&self.centroid_scales).enumerate() {
            let s = dot as f32 * scale;
            if s > best.1 {
                best = (c, s);
            }
        }
        best
    }

    /// Row `row` (new: equal to the row count so far; or existing, re-coded) joins its nearest list.
    pub(crate) fn place(&mut self, row: usize, code: &[i8], scale: f32) {
        let mut scores = vec![0i32; self.lists.len()];
        let (c, cos) = self.nearest(code, &mut scores);
        self.min_cos[c] = self.min_cos[c].min(cos * scale);
        if row < self.list_of.len() {
            self.take_out(row);
            self.list_of[row] = row_u32(c);
        } else {
            self.list_of.push(row_u32(c));
        }
        self.lists[c].push(row_u32(row));
    }

    /// Mirrors the matrix's swap-remove: `row` leaves, and `last` (the last row) takes its index.
    pub(crate) fn remove(&mut self, row: usize, last: usize) {
        self.take_out(row);
        if row != last {
            let list = self.list_of[last] as usize;
            if let Some(slot) = self.lists[list].iter_mut().find(|r| **r as usize == last) {
                *slot = row_u32(row);
            }
            self.list_of[row] = self.list_of[last];
        }
        self.list_of.truncate(last);
    }

    /// Removes `row` from its list (its `list_of` entry stays until overwritten or truncated).
    fn take_out(&mut self, row: usize) {
        let list = &mut self.lists[self.list_of[row] as usize];
        if let Some(pos) = list.iter().position(|r| *r as usize == row) {
            list.swap_remove(pos);
        }
    }

    /// The lists in the order a query visits them (closest centroid first) with the most any of
    /// their rows can score (a cosine), and how many lists it visits at least. The bound is the
    /// triangle inequality on angles: angle(q, x) ≥ angle(q, centroid) − the list's radius.
    pub(crate) fn probe_order(&self, query: &[i8], query_scale: f32) -> (Vec<(usize, f32)>, usize) {
        let mut scores = vec![0i32; self.lists.len()];
        dot_i8_rows(query, &self.centroids, self.dims, &mut scores);
        let mut order: Vec<(usize, f32, f32)> = scores
            .iter()
            .zip(&self.centroid_scales)
            .zip(&self.min_cos)
            .map(|((&d, &s), &radius_cos)| {
                let cos = (d as f32 * s * query_scale).clamp(-1.0, 1.0);
                let gap = cos.acos() - radius_cos.clamp(-1.0, 1.0).acos();
                (cos, gap.max(0.0).cos())
            })
            .enumerate()
            .map(|(c, (cos, bound))| (c, cos, bound))
            .collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let nprobe = (self.lists.len() / PROBE_DIVISOR).max(MIN_PROBE);
        (
            order.into_iter().map(|(c, _, bound)| (c, bound)).collect(),
            nprobe,
        )
    }

    pub(crate) fn list(&self, c: usize) -> &[u32] {
        &self.lists[c]
    }

    /// Rows placed in lists (equal to the matrix's rows while in step with it).
    #[cfg(test)]
    pub(crate) fn rows(&self) -> usize {
        debug_assert_eq!(
            self.list_of.len(),
            self.lists.iter().map(Vec::len).sum::<usize>()
        );
        self.list_of.len()
    }
}

/// `√n / 2` lists, at least one, at most [`MAX_LISTS`].
fn list_count(n: usize) -> usize {
    let lists = ((n as f64).sqrt() / LIST_DIVISOR).round() as usize;
    lists.clamp(1, MAX_LISTS)
}

/// Row and list indices fit in `u32` (the index holds far fewer than 4 billion rows).
fn row_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "ivf_tests.rs"]
mod tests;
