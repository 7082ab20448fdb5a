//! The coarse partition in front of the binary first pass (inverted lists, "IVF"): a large
//! matrix's rows are split into lists around centroids trained on the rows, and a search reads
//! the binary codes of only the lists whose centroids lie closest to the query, instead of every
//! row's. The work of a search then grows with the share of rows it reads, not with the store.
//!
//! - **Training** (when the codes are built, or when a matrix first reaches
//!   [`crate::vector_leg::PARTITION_MIN_ROWS`]): spherical k-means over an evenly spaced sample
//!   of [`TRAIN_PER_LIST`] rows per list, [`ITERATIONS`] rounds, one list per
//!   [`ROWS_PER_LIST`] rows (at most [`MAX_LISTS`]). Centroids are unit vectors kept as int8
//!   rows, so a row's list is found with the same integer kernel as the exact scan. Every row is
//!   then assigned to its nearest centroid, on as many threads as the machine has (~1 s at a
//!   million rows of 384 dimensions on two cores).
//! - **Upkeep**: a new or changed row goes to its nearest list (one pass over the centroids,
//!   ~5 µs); a removed row leaves its list, and the row moved into its place is renamed there.
//!   Each list keeps its rows' binary codes contiguously (a copy: 48 B a row at 384 dimensions),
//!   so reading a list is a scan in order. Centroids are trained again with the codes (a four-fold
//!   change of size).
//! - **Reach**: a search ranks the lists by the query's int8 dot product with their centroids and
//!   reads lists in that order until they hold [`Partition::needed_share`] of the rows (and at
//!   least the first pass's candidate count; more when a filter lets few rows through). The share
//!   starts at [`START_SHARE`]; live recall probes ([`crate::calibration`]) measure, for each
//!   exact neighbour of a real query, the share of rows held by the lists up to and including the
//!   neighbour's, and once [`SETTLED_PROBES`] probes were taken the share follows their measure
//!   (the [`crate::calibration`] quantile and margin) over the last 32 queries, up or down.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::calibration::LiveShares;
use crate::dot::{dot_f32_i8, dot_i8_rows, quantize};

/// One list per this many rows.
const ROWS_PER_LIST: usize = 2048;
/// At most this many lists (ranking them costs a query ~`MAX_LISTS × dims` multiply-adds).
const MAX_LISTS: usize = 256;
/// Rows sampled per list to train the centroids.
const TRAIN_PER_LIST: usize = 64;
/// Rounds of k-means.
const ITERATIONS: usize = 8;
/// The share of rows read before live probes measured any.
const START_SHARE: f64 = 0.25;
/// Probes after which the measured share replaces [`START_SHARE`].
const SETTLED_PROBES: u32 = 8;
/// Never read less than this share of the rows.
const MIN_SHARE: f64 = 0.005;

/// Lists for `rows` rows (at least two, never more than rows).
fn lists_for(rows: usize) -> usize {
    (rows / ROWS_PER_LIST).clamp(2, MAX_LISTS).min(rows).max(1)
}

/// The binary codes of some rows, and those rows.
pub(crate) type Segment<'a> = (&'a [u64], &'a [u32]);

/// One list: its rows and their binary codes, in step.
#[derive(Debug, Default)]
struct List {
    rows: Vec<u32>,
    bits: Vec<u64>,
}

/// A matrix's rows in lists around trained centroids.
#[derive(Debug)]
pub(crate) struct Partition {
    words: usize,
    centroids: Centroids,
    lists: Vec<List>,
    /// Per row: its list and its place in the list.
    place: Vec<(u32, u32)>,
    /// The share of rows a search reads at least (`f64` bits).
    share: AtomicU64,
    live: Mutex<LiveShares>,
    probes: AtomicU32,
}

impl Partition {
    /// Trains centroids on the rows (`codes` int8 row-major, `scales`, `bits` their binary codes
    /// with `words` words a row, `centre` the codes' centre) and puts every row in its nearest
    /// centroid's list; `None` below two rows.
    pub(crate) fn build(
        codes: &[i8],
        scales: &[f32],
        dims: usize,
        centre: &[f32],
        (bits, words): (&[u64], usize),
    ) -> Option<Self> {
        let n = scales.len();
        if n < 2 || dims == 0 || centre.len() != dims {
            return None;
        }
        if codes.len() < n * dims || bits.len() < n * words {
            return None;
        }
        let centroids = train(codes, scales, centre, lists_for(n));
        let mut partition = Self {
            words,
            lists: (0..centroids.len()).map(|_| List::default()).collect(),
            centroids,
            place: vec![(0, 0); n],
            share: AtomicU64::new(START_SHARE.to_bits()),
            live: Mutex::new(LiveShares::default()),
            probes: AtomicU32::new(0),
        };
        let assigned = partition.centroids.assign_all(codes, scales);
        for (row, list) in assigned.into_iter().enumerate() {
            partition.attach(row, list, &bits[row * words..(row + 1) * words]);
        }
        Some(partition)
    }

    /// Rows held.
    pub(crate) fn rows(&self) -> usize {
        self.place.len()
    }

    /// The share of rows a search reads at least.
    pub(crate) fn needed_share(&self) -> f64 {
        f64::from_bits(self.share.load(Ordering::Relaxed))
    }

    /// Places row `row` (new when it equals the rows so far) with int8 `code` and `scale`, and
    /// binary `bits`.
    pub(crate) fn set(&mut self, row: usize, (code, scale): (&[i8], f32), bits: &[u64]) {
        if row < self.place.len() {
            self.detach(row);
        } else {
            self.place.resize(row + 1, (0, 0));
        }
        let mut dots = vec![0i32; self.centroids.len()];
        let list = self.centroids.nearest(code, scale, &mut dots);
        self.attach(row, list, bits);
    }

    /// Mirrors the matrix's swap-remove: `row` leaves, and `last` (the last row) takes its index.
    pub(crate) fn remove(&mut self, row: usize, last: usize) {
        if row >= self.place.len() || last >= self.place.len() {
            return;
        }
        self.detach(row);
        if row != last {
            let (list, at) = self.place[last];
            self.lists[list as usize].rows[at as usize] = row_u32(row);
            self.place[row] = (list, at);
        }
        self.place.truncate(last);
    }

    fn attach(&mut self, row: usize, list: u32, bits: &[u64]) {
        let l = &mut self.lists[list as usize];
        self.place[row] = (list, row_u32(l.rows.len()));
        l.rows.push(row_u32(row));
        l.bits.extend_from_slice(bits);
    }

    /// Takes `row` out of its list (the list's last entry moves into its place).
    fn detach(&mut self, row: usize) {
        let (list, at) = self.place[row];
        let words = self.words;
        let l = &mut self.lists[list as usize];
        let (at, end) = (at as usize, l.rows.len() - 1);
        if at != end {
            let moved = l.rows[end];
            l.rows[at] = moved;
            l.bits
                .copy_within(end * words..(end + 1) * words, at * words);
            self.place[moved as usize].1 = row_u32(at);
        }
        l.rows.truncate(end);
        l.bits.truncate(end * words);
    }

    /// The lists, closest centroid to `query` first.
    pub(crate) fn order(&self, query: &[f32]) -> Vec<u32> {
        let scores: Vec<f32> = (0..self.centroids.len())
            .map(|l| self.centroids.score_f32(l, query))
            .collect();
        let mut order: Vec<u32> = (0..row_u32(scores.len())).collect();
        order.sort_unstable_by(|a, b| {
            let (a_score, b_score) = (scores[*a as usize], scores[*b as usize]);
            b_score.total_cmp(&a_score).then(a.cmp(b))
        });
        order
    }

    /// The first lists of `order` that together hold at least `rows` rows (all when they must),
    /// as (binary codes, rows) segments, and the rows they hold.
    pub(crate) fn reach<'a>(
        &'a self,
        order: &[u32],
        rows: usize,
    ) -> (Vec<Segment<'a>>, usize) {
        let mut held = 0;
        let mut segments = Vec::new();
        for &l in order {
            if held >= rows {
                break;
            }
            let list = &self.lists[l as usize];
            held += list.rows.len();
            segments.push((list.bits.as_slice(), list.rows.as_slice()));
        }
        (segments, held)
    }

    /// For each row of `neighbours`, the share of rows held by the lists of `order` up to and
    /// including the row's own.
    pub(crate) fn shares(&self, order: &[u32], neighbours: &[usize]) -> Vec<f64> {
        let mut held_through = vec![0usize; self.lists.len()];
        let mut held = 0;
        for &l in order {
            held += self.lists[l as usize].rows.len();
            held_through[l as usize] = held;
        }
        let rows = self.rows().max(1) as f64;
        neighbours
            .iter()
            .filter_map(|&row| self.place.get(row))
            .map(|&(list, _)| held_through[list as usize] as f64 / rows)
            .collect()
    }

    /// Takes in what a live probe measured (see the module doc).
    pub(crate) fn observe(&self, shares: &[f64]) {
        let measured = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(shares);
        let probes = self.probes.fetch_add(1, Ordering::Relaxed) + 1;

        let share = match probes >= SETTLED_PROBES {
            true => measured.max(MIN_SHARE),
            false => measured.max(START_SHARE),
        };
        self.share.store(share.to_bits(), Ordering::Relaxed);
    }

    /// Lists (for tests).
    #[cfg(test)]
    pub(crate) fn list_rows(&self) -> Vec<Vec<u32>> {
        self.lists.iter().map(|l| l.rows.clone()).collect()
    }

    /// A row's list and the binary codes kept for it there (for tests).
    #[cfg(test)]
    pub(crate) fn placed(&self, row: usize) -> Option<(u32, &[u64])> {
        let &(list, at) = self.place.get(row)?;
        let l = self.lists.get(list as usize)?;
        let at = at as usize;
        (l.rows.get(at) == Some(&row_u32(row)))
            .then(|| (list, &l.bits[at * self.words..(at + 1) * self.words]))
    }
}

/// Unit centroids of the rows' differences from their centre, as int8 rows: the codes' centre is
/// taken out because the builtin model gives every text a large shared component, which would
/// otherwise pull every row to the centroid with the most of it (see [`crate::sign_codes`]).
/// A row `x` is scored against centroid `c` as `(x − centre)·c = x·c − centre·c`: one int8 dot
/// product and a per-centroid constant.
#[derive(Debug)]
struct Centroids {
    dims: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
    /// `centre · c` per centroid.
    bias: Vec<f32>,
}

impl Centroids {
    fn len(&self) -> usize {
        self.scales.len()
    }

    /// Sets centroid `l` to the direction of `v` (left as it is when `v` is zero).
    fn set(&mut self, l: usize, v: &[f32], centre: &[f32]) {
        let dims = self.dims;
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm <= 0.0 {
            return;
        }
        let unit: Vec<f32> = v.iter().map(|x| x / norm).collect();
        let code = &mut self.codes[l * dims..(l + 1) * dims];
        self.scales[l] = quantize(&unit, code);
        self.bias[l] = dot_f32_i8(centre, code) * self.scales[l];
    }

    /// The closest centroid to the int8 row (`code`, `scale`); `dots` holds one value per centroid.
    fn nearest(&self, code: &[i8], scale: f32, dots: &mut [i32]) -> u32 {
        dot_i8_rows(code, &self.codes, self.dims, dots);
        let mut best = (0, f32::NEG_INFINITY);
        for (l, ((&dot, &c_scale), &bias)) in
            dots.iter().zip(&self.scales).zip(&self.bias).enumerate()
        {
            let score = scale * dot as f32 * c_scale - bias;
            if score > best.1 {
                best = (l, score);
            }
        }
        row_u32(best.0)
    }

    /// Centroid `l`'s score for an f32 vector.
    fn score_f32(&self, l: usize, v: &[f32]) -> f32 {
        let code = &self.codes[l * self.dims..(l + 1) * self.dims];
        dot_f32_i8(v, code) * self.scales[l] - self.bias[l]
    }

    /// Every row's nearest centroid, on up to as many threads as the machine has cores.
    fn assign_all(&self, codes: &[i8], scales: &[f32]) -> Vec<u32> {
        let dims = self.dims.max(1);
        let n = scales.len();
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get().min(8));
        let per_thread = n.div_ceil(threads).max(1);
        let mut assigned = vec![0u32; n];
        std::thread::scope(|scope| {
            let parts = codes
                .chunks(per_thread * dims)
                .zip(scales.chunks(per_thread))
                .zip(assigned.chunks_mut(per_thread));
            for ((codes, scales), out) in parts {
                scope.spawn(move || {
                    let mut dots = vec![0i32; self.len()];
                    for ((code, &scale), o) in codes.chunks_exact(dims).zip(scales).zip(out) {
                        *o = self.nearest(code, scale, &mut dots);
                    }
                });
            }
        });
        assigned
    }
}

/// Spherical k-means of the rows' differences from `centre`, over an evenly spaced sample of the
/// rows: `lists` centroids.
fn train(codes: &[i8], scales: &[f32], centre: &[f32], lists: usize) -> Centroids {
    let dims = centre.len();
    let n = scales.len();
    let samples = lists.saturating_mul(TRAIN_PER_LIST).min(n).max(1);
    let sample_row = |s: usize| s * n / samples;
    let mut centroids = Centroids {
        dims,
        codes: vec![0i8; lists * dims],
        scales: vec![0f32; lists],
        bias: vec![0f32; lists],
    };
    let mut residual = vec![0f32; dims];
    let residual_of = |row: usize, out: &mut [f32]| {
        let code = &codes[row * dims..(row + 1) * dims];
        for ((o, &c), &m) in out.iter_mut().zip(code).zip(centre) {
            *o = scales[row] * f32::from(c) - m;
        }
    };
    // Seeds: rows spread evenly over the sample.
    for l in 0..lists {
        residual_of(sample_row(l * samples / lists.max(1)), &mut residual);
        centroids.set(l, &residual, centre);
    }
    let mut dots = vec![0i32; lists];
    let mut sums = vec![0f32; lists * dims];
    let mut counts = vec![0usize; lists];
    for round in 0..ITERATIONS {
        sums.iter_mut().for_each(|s| *s = 0.0);
        counts.iter_mut().for_each(|c| *c = 0);
        for s in 0..samples {
            let row = sample_row(s);
            let code = &codes[row * dims..(row + 1) * dims];
            let l = centroids.nearest(code, scales[row], &mut dots) as usize;
            counts[l] += 1;
            residual_of(row, &mut residual);
            for (sum, &r) in sums[l * dims..(l + 1) * dims].iter_mut().zip(&residual) {
                *sum += r;
            }
        }
        for l in 0..lists {
            if counts[l] == 0 {
                // An empty list takes a sample row somewhere else in the store.
                residual_of(
                    sample_row((l * 7919 + round * 104_729) % samples),
                    &mut residual,
                );
                centroids.set(l, &residual, centre);
            } else {
                centroids.set(l, &sums[l * dims..(l + 1) * dims], centre);
            }
        }
    }
    centroids
}

/// Row indices fit in `u32` (the index holds far fewer than 4 billion rows).
fn row_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;
