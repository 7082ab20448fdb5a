//! The binary first pass of the vector leg: one bit per dimension per row, and the cheap choice
//! of the rows worth scoring exactly.
//!
//! Each row's code holds the sign of every component of the row minus a per-matrix centre (the
//! mean of the rows when the codes were built), packed in `u64` words: `dims / 8` bytes per row
//! (48 B at 384 dimensions, an eighth of the int8 row), stored contiguously. Centring matters:
//! the builtin static-embedding model gives every text a large shared component, so without it
//! most bits are the same for every row and the Hamming distance tells rows apart poorly
//! (measured in `sign_codes_tests.rs`). Subtracting the centre does not change the ranking the
//! codes approximate: `q·x = q·(x − centre) + q·centre`, the last term the same for every row.
//!
//! A query is coded the same way, and keeps besides a mask of the dimensions that count
//! ([`crate::hamming::QueryCode`]: those where the query sits nearest the centre do not);
//! the masked distance to every row is computed in one pass ([`crate::hamming`]), counted in a
//! histogram of distances `0..=dims`, and the histogram gives the
//! cut-off distance below which at least the wanted number of rows lie: no heap, no sort. Rows up
//! to that cut-off are collected, and only those are checked against the search's filter; when the
//! filter rejected too many, the cut-off moves out (by the share the filter let through so far)
//! and the next band of rows is collected, until enough allowed rows are found or none are left.
//! The caller scores the collected rows with the int8 kernel, then the best with the f32 query.
//!
//! The codes follow every change of the rows (with the centre they were built with) and are
//! rebuilt, with a new centre, when the row count has moved four-fold since the last build.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

#[path = "sign_bands.rs"]
mod bands;

pub use bands::Span;

use crate::calibration::{LiveShares, probe_interval, sampled_share};
use crate::hamming::{QueryCode, distances};

/// Rebuild when the row count has moved this factor away from the one the centre was taken at.
const REBUILD_FACTOR: usize = 4;

/// Rows per call of the distance kernel.
const BLOCK: usize = 1024;

/// The binary first pass hands this many candidates per result wanted to the int8 scoring...
const CANDIDATES_PER_RESULT: usize = 10;
/// ... and at least this many ...
const MIN_CANDIDATES: usize = 1000;
/// ... and one more per this many rows (more rows crowd more near-ties around the cut-off).
const ROWS_PER_CANDIDATE: usize = 200;

/// Candidates the binary first pass keeps for `limit` results among `rows` rows. Measured with
/// `memory-bench latency` (synthetic notes, builtin model, recall@10 of the vector leg against the
/// exact scan): at 10k rows 220 candidates gave 0.983, 400 gave 0.994, 1,020 gave 0.999; at 100k,
/// 1,000 gave 0.9955 and 3,000 gave 1.0. LoCoMo's conversations (369–680 turns, questions as
/// queries) are harder for one bit per dimension: 50 candidates gave 0.82, 100 gave 0.93, 250 gave
/// 0.991 (`memory-bench locomo --vector-leg approximate` with these counts forced). Scoring a
/// candidate costs ~0.1 µs (a gathered int8 row), little next to the distance pass over all rows,
/// so the net is wide.
pub fn candidate_count(limit: usize, rows: usize) -> usize {
    limit
        .saturating_mul(CANDIDATES_PER_RESULT)
        .max(MIN_CANDIDATES)
        .saturating_add(rows / ROWS_PER_CANDIDATE)
}

/// Whether codes are taken around the rows' mean (the default) or around zero (to measure).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Centring {
    #[default]
    Mean,
    #[cfg(test)]
    Zero,
}

thread_local! {
    /// Each row's distance to the query, reused by the searches of one thread (2 B per row of the
    /// largest matrix searched): a fresh buffer per query would fault its pages in every time.
    static DISTANCES: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
}

/// One matrix's binary codes.
#[derive(Debug)]
pub struct SignCodes {
    /// `u64` words per row.
    words: usize,
    /// Subtracted from a row (or query) before its signs are taken.
    centre: Vec<f32>,
    /// `rows × words`, row-major; bit `i % 64` of word `i / 64` is set when component `i` is
    /// above the centre.
    bits: Vec<u64>,
    /// Rows when the centre was taken.
    built_rows: usize,
    /// The share of rows that caught the exact neighbours of sampled rows taken as queries, when
    /// the codes were built ([`crate::calibration`]).
    sampled: f64,
    /// The most live probes (of these codes or, carried over, of earlier codes of the matrix)
    /// called for (`f64` bits): what a rebuild keeps. The rows-as-queries share is not kept: it
    /// is measured again on the new rows, and on a small matrix it is large (a neighbour's rank
    /// is a larger share of fewer rows). The first pass keeps the larger of the two.
    learnt: AtomicU64,
    /// What live probes measured since the codes were built.
    live: Mutex<LiveShares>,
    /// Searches that took the first pass, and live probes taken, since the codes were built.
    searches: AtomicU32,
    probes: AtomicU32,
}

impl SignCodes {
    /// Codes of every row (`codes` row-major int8, `scales` one per row), around their mean.
    pub fn build(codes: &[i8], scales: &[f32], dims: usize, centring: Centring) -> Self {
        let n = scales.len();
        let centre = match centring {
            Centring::Mean => mean(codes, scales, dims),
            #[cfg(test)]
            Centring::Zero => vec![0.0; dims],
        };
        let words = dims.div_ceil(64);
        let mut signs = Self {
            words,
            centre,
            bits: vec![0; n * words],
            built_rows: n,
            sampled: 0.0,
            learnt: AtomicU64::new(0),
            live: Mutex::new(LiveShares::default()),
            searches: AtomicU32::new(0),
            probes: AtomicU32::new(0),
        };
        let rows = codes.chunks_exact(dims.max(1)).zip(scales);
        for ((code, &scale), out) in rows.zip(signs.bits.chunks_exact_mut(words.max(1))) {
            encode(&signs.centre, code, scale, out);
        }
        signs.sampled = sampled_share(codes, scales, dims, &signs.bits, &signs.centre);
        signs
    }

    /// Candidates the first pass keeps for `limit` results among `rows` rows: the fixed count of
    /// [`candidate_count`], or the share of rows these codes were measured to need, whichever
    /// is more.
    pub fn candidate_count(&self, limit: usize, rows: usize) -> usize {
        let measured = (self.needed_share() * rows as f64).ceil() as usize;
        candidate_count(limit, rows).max(measured)
    }

    /// The share of rows the first pass keeps at least.
    pub fn needed_share(&self) -> f64 {
        self.sampled.max(self.learnt_share())
    }

    /// Counts a search that took the first pass; true for the one to probe (see
    /// [`probe_interval`]).
    pub fn probe_due(&self) -> bool {
        let searched = self.searches.fetch_add(1, Ordering::Relaxed);
        searched.is_multiple_of(probe_interval(self.probes.load(Ordering::Relaxed)))
    }

    /// Takes in what a live probe measured: the share needed only grows (codes rebuilt after growth
    /// start from it, see [`Self::raise`]).
    pub fn observe(&self, shares: &[f64]) {
        let wanted = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(shares);
        self.probes.fetch_add(1, Ordering::Relaxed);
        let before = self.needed_share();
        raise_share(&self.learnt, wanted);
        if wanted > before {
            tracing::debug!(
                rows = self.rows(),
                share = wanted,
                "the first pass keeps more candidates"
            );
        }
    }

    /// Raises the share the first pass keeps to at least `share` (what earlier codes of the same
    /// session learnt).
    pub fn raise(&self, share: f64) {
        raise_share(&self.learnt, share);
    }

    /// The most live probes called for (see [`Self::raise`]).
    pub fn learnt_share(&self) -> f64 {
        f64::from_bits(self.learnt.load(Ordering::Relaxed))
    }

    /// The share of `truth` (each query's exact top ten, as row numbers) among the `want`
    /// candidates these codes pick for each of `queries` (with `masked` codes of the queries,
    /// else plain Hamming distances), for tests.
    #[cfg(test)]
    pub fn candidate_recall(
        &self,
        queries: &[Vec<f32>],
        truth: &[std::collections::HashSet<i64>],
        want: usize,
        masked: bool,
    ) -> f64 {
        let mut found = 0;
        for (q, truth) in queries.iter().zip(truth) {
            let mut candidates = Vec::new();
            let code = match masked {
                true => self.query_code(q),
                false => self.query_code(q).unmasked(),
            };
            self.candidates(&code, want, |_| true, &mut candidates);
            found += candidates
                .iter()
                .filter(|&&row| truth.contains(&i64::from(row)))
                .count();
        }
        found as f64 / truth.iter().map(|t| t.len()).sum::<usize>().max(1) as f64
    }

    /// Code words per row.
    pub fn words(&self) -> usize {
        self.words
    }

    /// The binary codes, `rows × words`.
    pub fn bits(&self) -> &[u64] {
        &self.bits
    }

    /// Whether a matrix of `rows` rows wants new codes around a new centre.
    pub fn is_stale(&self, rows: usize) -> bool {
        rows > self.built_rows.saturating_mul(REBUILD_FACTOR)
            || rows.saturating_mul(REBUILD_FACTOR) < self.built_rows
    }

    /// Rows coded (equal to the matrix's rows while in step with it).
    pub fn rows(&self) -> usize {
        self.bits.len() / self.words.max(1)
    }

    /// Rows when the centre was taken.
    pub fn built_rows(&self) -> usize {
        self.built_rows
    }

    /// The centre subtracted before the signs are taken (one value per dimension).
    pub fn centre(&self) -> &[f32] {
        &self.centre
    }

    /// The share of rows that caught sampled rows' exact neighbours when the codes were built.
    pub fn sampled_share(&self) -> f64 {
        self.sampled
    }

    /// Codes as [`Self::build`] made them and a snapshot kept them (`bits` of `dims`-dimensional
    /// rows around `centre`, built at `built_rows` rows, with the shares they were measured to
    /// need); `None` when the sizes do not fit each other. What live probes saw since is not kept:
    /// they start again from `learnt`.
    pub fn from_parts(
        dims: usize,
        centre: Vec<f32>,
        bits: Vec<u64>,
        built_rows: usize,
        (sampled, learnt): (f64, f64),
    ) -> Option<Self> {
        let words = dims.div_ceil(64);
        if centre.len() != dims || words == 0 || !bits.len().is_multiple_of(words) {
            return None;
        }
        let signs = Self {
            words,
            centre,
            bits,
            built_rows,
            sampled,
            learnt: AtomicU64::new(0),
            live: Mutex::new(LiveShares::default()),
            searches: AtomicU32::new(0),
            probes: AtomicU32::new(0),
        };
        signs.raise(learnt);
        Some(signs)
    }

    /// Re-codes row `row` (new when it equals the row count so far).
    pub fn set(&mut self, row: usize, code: &[i8], scale: f32) {
        let words = self.words;
        if row >= self.rows() {
            self.bits.resize((row + 1) * words, 0);
        }
        encode(
            &self.centre,
            code,
            scale,
            &mut self.bits[row * words..(row + 1) * words],
        );
    }

    /// Mirrors the matrix's swap-remove: `row` leaves, and `last` (the last row) takes its index.
    pub fn remove(&mut self, row: usize, last: usize) {
        let words = self.words;
        if row != last {
            self.bits
                .copy_within(last * words..(last + 1) * words, row * words);
        }
        self.bits.truncate(last * words);
    }

    /// The query's code, around the same centre as the rows.
    pub fn query_code(&self, query: &[f32]) -> QueryCode {
        QueryCode::around(query, &self.centre)
    }

    /// Appends to `out` the rows closest to `query` in masked distance that `admit` accepts: at
    /// least `want` of them when that many are admitted (all rows at the cut-off distance are
    /// taken, so a few more), `admit` being asked only about rows up to the cut-off.
    pub fn candidates(
        &self,
        query: &QueryCode,
        want: usize,
        admit: impl Fn(usize) -> bool,
        out: &mut Vec<u32>,
    ) {
        self.candidates_each(query, &[want], &[&admit], &[], std::slice::from_mut(out));
    }

    /// [`Self::candidates`] for several filters of one query at once (`outs[i]` for
    /// `admits[i]`, at least `wants[i]` of them): the distances are computed once, and each
    /// filter's bands read from them. A filter with a span of time (`spans[i]`: each row's time
    /// key and the filter) reads only the rows created inside it ([`bands::within`]).
    pub fn candidates_each(
        &self,
        query: &QueryCode,
        wants: &[usize],
        admits: &[&dyn Fn(usize) -> bool],
        spans: &[Option<Span<'_>>],
        outs: &mut [Vec<u32>],
    ) {
        let n = self.rows();
        DISTANCES.with_borrow_mut(|dist| {
            dist.resize(n, 0);
            let buckets = query.max_distance() + 1;
            // Four interleaved histograms: distances crowd around the middle, and consecutive
            // increments of one counter would wait on each other.
            let mut counts = vec![0u32; 4 * buckets];
            let blocks = self.bits.chunks(BLOCK * self.words);
            for (codes, out) in blocks.zip(dist.chunks_mut(BLOCK)) {
                distances(query, codes, out);
                let (quads, rest) = out.as_chunks::<4>();
                for quad in quads {
                    for (lane, &d) in quad.iter().enumerate() {
                        counts[lane * buckets + usize::from(d)] += 1;
                    }
                }
                for &d in rest {
                    counts[usize::from(d)] += 1;
                }
            }
            let histogram: Vec<usize> = (0..buckets)
                .map(|d| (0..4).map(|lane| counts[lane * buckets + d] as usize).sum())
                .collect();
            for (p, ((admit, out), &want)) in
                admits.iter().zip(outs.iter_mut()).zip(wants).enumerate()
            {
                match spans.get(p).copied().flatten() {
                    Some(span) => bands::within(dist, buckets, span, want, admit, out),
                    None => bands::bands(dist, &histogram, want, admit, out),
                }
            }
        });
    }
}

/// Raises the share kept as `f64` bits in `atomic` to at least `share`. Shares are non-negative,
/// and the bits of non-negative `f64`s order like the numbers.
fn raise_share(atomic: &AtomicU64, share: f64) {
    atomic.fetch_max(share.max(0.0).to_bits(), Ordering::Relaxed);
}

/// The bits of a row with int8 `code` and `scale` (component `i` is `scale · code[i]`).
fn encode(centre: &[f32], code: &[i8], scale: f32, out: &mut [u64]) {
    let (whole, rest) = code.as_chunks::<64>();
    let (centres, rest_centre) = centre.as_chunks::<64>();
    for ((word, code), centre) in out.iter_mut().zip(whole).zip(centres) {
        // Fixed length: LLVM unrolls it and compares several lanes per instruction (a rebuild
        // at a million rows is this loop 6 million times).
        let mut above = [0u8; 64];
        for i in 0..64 {
            above[i] = u8::from(f32::from(code[i]) * scale > centre[i]);
        }
        // Eight 0/1 bytes to eight bits at once: the multiplication moves byte `j` to bit
        // `56 + j`, with no carries (every product term lands on its own bit).
        let (bytes, _) = above.as_chunks::<8>();
        *word = bytes.iter().enumerate().fold(0u64, |w, (k, eight)| {
            let gathered = u64::from_le_bytes(*eight).wrapping_mul(0x0102_0408_1020_4080) >> 56;
            w | (gathered << (8 * k))
        });
    }
    if let Some(word) = out.get_mut(whole.len()) {
        *word = pack(
            rest.iter()
                .zip(rest_centre)
                .map(|(&c, &m)| f32::from(c) * scale > m),
        );
    }
}

/// Up to 64 bits, the first in the lowest place.
fn pack(bits: impl Iterator<Item = bool>) -> u64 {
    bits.enumerate()
        .fold(0u64, |word, (i, bit)| word | (u64::from(bit) << i))
}

/// The mean of the rows (dequantized), per dimension.
fn mean(codes: &[i8], scales: &[f32], dims: usize) -> Vec<f32> {
    let mut sums = vec![0f64; dims];
    let mut block = vec![0f32; dims];
    // f32 sums over blocks of rows (vectorized), added up in f64 so that a million rows keep
    // their precision.
    for (codes, scales) in codes.chunks(BLOCK * dims).zip(scales.chunks(BLOCK)) {
        block.iter_mut().for_each(|b| *b = 0.0);
        for (code, &scale) in codes.chunks_exact(dims).zip(scales) {
            for (b, &c) in block.iter_mut().zip(code) {
                *b += scale * f32::from(c);
            }
        }
        sums.iter_mut()
            .zip(&block)
            .for_each(|(s, &b)| *s += f64::from(b));
    }
    let n = scales.len().max(1) as f64;
    sums.iter().map(|s| (s / n) as f32).collect()
}

#[cfg(test)]
#[path = "sign_codes_tests.rs"]
mod tests;
