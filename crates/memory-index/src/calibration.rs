//! How many candidates the binary first pass must keep for a matrix's rows, measured, not assumed.
//!
//! One bit per dimension ranks some kinds of text far worse than others: on the synthetic notes
//! of `memory-bench latency` the exact top ten of a query lie within the closest 1 % of rows by
//! Hamming distance, but chat turns (short, alike, sharing most of their direction) scatter a
//! question's true neighbours much further (`memory-bench conversations`: with a fixed count,
//! recall@10 fell to 0.98 at 100k turn-like texts). So each matrix measures its codes:
//!
//! - **When its codes are built** (the load at open, a four-fold change of size): [`SAMPLES`] rows
//!   are taken as queries; a [`Probe`] finds each one's exact top ten by the int8 kernel and the
//!   first-pass rank of each neighbour (by the masked distance of [`crate::hamming`]: how many
//!   rows lie at its distance or closer).
//! - **While it is searched**: one search in [`CHECK_EVERY`] of a matrix that took the first pass
//!   (one in [`SETTLED_EVERY`] once [`SETTLED_PROBES`] were taken) is probed the same way with the
//!   real query, off the search's path: on one background thread at the lowest CPU priority
//!   ([`in_background`]; a probe due while another runs is skipped), taking the matrix's read lock
//!   one block of rows at a time so that writers never wait long, and reading no block while a
//!   search runs ([`Searching`], [`yield_to_searches`])
//!   ([`crate::vector_index::VectorIndex::check_recall`]). Real queries are what
//!   the rows-as-queries estimate misses: questions sit further from the rows than rows from each
//!   other.
//!
//! The share of rows that catches [`TARGET`] of the measured neighbours (times a margin for live
//! probes) is the
//! matrix's floor for its candidate count; a large share makes the search scan exactly (see
//! [`crate::sign_codes::SignCodes::candidate_count`]). A probe costs one int8 scan and one distance
//! pass over the rows: ~25 ms at a million rows of 384 dimensions.

use std::collections::VecDeque;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use crate::dot::dot_i8_rows;
use crate::hamming::{QueryCode, distances};
use crate::topk::TopK;

/// Rows sampled as queries when the codes are built.
const SAMPLES: usize = 16;
/// One search in this many (per matrix, the first after a build included) is probed until
/// [`SETTLED_PROBES`] probes were taken, one in [`SETTLED_EVERY`] after (~0.1 ms a search at a
/// million rows).
const CHECK_EVERY: u32 = 16;
const SETTLED_PROBES: u32 = 32;
const SETTLED_EVERY: u32 = 256;
/// Neighbours per query whose rank is measured (recall@10 is the target's measure).
const NEIGHBOURS: usize = 10;
/// The share of measured neighbours the candidates must catch.
const TARGET: f64 = 0.99;
/// Real queries' measured share gets this margin (rows-as-queries, easier, are taken as measured:
/// live probes raise what they miss).
const LIVE_MARGIN: f64 = 1.25;
/// The live estimate is taken over the last this many measured neighbours (32 queries).
const WINDOW: usize = 32 * NEIGHBOURS;
/// Below this many rows nothing is measured: every candidate count already takes them all.
pub const MIN_ROWS: usize = 1000;
/// Rows per call of the kernels.
const BLOCK: usize = 1024;
/// A probe waits at most this long before each block of rows while searches run (then reads the
/// block anyway, so that a stream of searches delays probes but never stops them).
const MAX_YIELD: Duration = Duration::from_millis(200);

/// Held for the length of a search of a vector index, on the index's count of running searches:
/// probes of that index read no rows meanwhile (a probe at a million rows streams 400 MB of int8
/// rows and would take the memory bandwidth the search needs).
#[derive(Debug)]
pub struct Searching<'a>(&'a AtomicUsize);

impl<'a> Searching<'a> {
    pub fn start(running: &'a AtomicUsize) -> Self {
        running.fetch_add(1, Ordering::AcqRel);
        Self(running)
    }
}

impl Drop for Searching<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Waits (up to [`MAX_YIELD`]) until no search counted in `running` runs: a probe calls it before
/// each block of rows.
pub fn yield_to_searches(running: &AtomicUsize) {
    let started = Instant::now();
    while running.load(Ordering::Acquire) > 0 && started.elapsed() < MAX_YIELD {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// How many searches pass between live probes, after `probes` probes since the codes were built.
pub fn probe_interval(probes: u32) -> u32 {
    match probes < SETTLED_PROBES {
        true => CHECK_EVERY,
        false => SETTLED_EVERY,
    }
}

/// One query's exact top ten, with their first-pass distances, and the histogram of every row's
/// distance: fed block by block, then read as shares.
#[derive(Debug)]
pub struct Probe {
    top: TopK<(u16, usize)>,
    histogram: Vec<usize>,
    rows: usize,
    dots: Vec<i32>,
    dist: Vec<u16>,
}

impl Probe {
    /// A probe of a query coded as `code`.
    pub fn new(code: &QueryCode) -> Self {
        Self {
            top: TopK::new(NEIGHBOURS),
            histogram: vec![0; code.max_distance() + 1],
            rows: 0,
            dots: vec![0; BLOCK],
            dist: vec![0; BLOCK],
        }
    }

    /// Adds rows `first..` (`codes` int8 row-major, `scales`, `bits` with `words` words per row):
    /// `query` is the query's int8 code, `query_code` its code for the first pass; row `skip` (a
    /// sampled row itself) is left out.
    #[allow(
        clippy::too_many_arguments,
        reason = "the slices of one block of a matrix, and the query's two codes"
    )]
    pub fn add(
        &mut self,
        query: &[i8],
        query_code: &QueryCode,
        first: usize,
        codes: &[i8],
        scales: &[f32],
        bits: &[u64],
        skip: Option<usize>,
    ) {
        let (dims, words) = (query.len().max(1), query_code.words().max(1));
        let blocks = codes
            .chunks(BLOCK * dims)
            .zip(scales.chunks(BLOCK))
            .zip(bits.chunks(BLOCK * words));
        for (b, ((codes, scales), bits)) in blocks.enumerate() {
            let start = first + b * BLOCK;
            dot_i8_rows(query, codes, dims, &mut self.dots);
            distances(query_code, bits, &mut self.dist);
            for (i, (&dot, &scale)) in self.dots.iter().zip(scales).enumerate() {
                let row = start + i;
                if Some(row) == skip {
                    continue;
                }
                let d = self.dist[i];
                if let Some(count) = self.histogram.get_mut(usize::from(d)) {
                    *count += 1;
                }
                self.rows += 1;
                self.top.offer(dot as f32 * scale, (d, row));
            }
        }
    }

    /// For each exact neighbour, the share of rows at its distance or closer.
    pub fn shares(self) -> Vec<f64> {
        let rows = self.rows.max(1) as f64;
        let mut at_or_below = self.histogram;
        for d in 1..at_or_below.len() {
            at_or_below[d] += at_or_below[d - 1];
        }
        self.top
            .into_sorted()
            .into_iter()
            .filter_map(|((d, _), _)| at_or_below.get(usize::from(d)))
            .map(|&caught_at| caught_at as f64 / rows)
            .collect()
    }
}

/// The share of rows (`0.0..=1.0`) the first pass must keep so that sampled rows, as queries, find
/// their exact top ten among the candidates; `bits` holds each row's code words in step with
/// `codes`, taken around `centre`.
pub fn sampled_share(
    codes: &[i8],
    scales: &[f32],
    dims: usize,
    bits: &[u64],
    centre: &[f32],
) -> f64 {
    let n = scales.len();
    let words = dims.div_ceil(64);
    if n < MIN_ROWS || dims == 0 || bits.len() < n * words || centre.len() != dims {
        return 0.0;
    }
    let mut shares = Vec::with_capacity(SAMPLES * NEIGHBOURS);
    for s in 0..SAMPLES {
        let sample = s * n / SAMPLES;
        let code = &codes[sample * dims..(sample + 1) * dims];
        let row: Vec<f32> = code
            .iter()
            .map(|&c| f32::from(c) * scales[sample])
            .collect();
        let query = QueryCode::around(&row, centre);
        let mut probe = Probe::new(&query);
        probe.add(code, &query, 0, codes, scales, bits, Some(sample));
        shares.extend(probe.shares());
    }
    quantile(&mut shares, TARGET)
}

/// What live probes measured: the last [`WINDOW`] neighbours' shares.
#[derive(Debug, Default)]
pub struct LiveShares {
    window: VecDeque<f64>,
}

impl LiveShares {
    /// Adds one probe's shares; returns the share they call for (margin included).
    pub fn observe(&mut self, shares: &[f64]) -> f64 {
        for &share in shares {
            if self.window.len() == WINDOW {
                self.window.pop_front();
            }
            self.window.push_back(share);
        }
        let mut all: Vec<f64> = self.window.iter().copied().collect();
        (quantile(&mut all, TARGET) * LIVE_MARGIN).min(1.0)
    }
}

/// The value below which `q` of `values` lie (0 when empty).
fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_unstable_by(f64::total_cmp);
    let at = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1;
    values[at]
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `job` on the probe thread (started on first use, at nice 19: it takes CPU time nothing
/// else wants); false, and `job` dropped, while the thread is busy with another or could not start.
pub fn in_background(job: impl FnOnce() + Send + 'static) -> bool {
    static PROBES: OnceLock<Option<SyncSender<Job>>> = OnceLock::new();
    let sender = PROBES.get_or_init(|| {
        let (tx, rx) = sync_channel::<Job>(0);
        let started = std::thread::Builder::new()
            .name("memory-probe".into())
            .spawn(move || {
                // On Linux the nice value is the calling thread's own.
                if let Err(e) = rustix::process::setpriority_process(None, 19) {
                    tracing::debug!(error = %e, "the probe thread keeps its priority");
                }
                while let Ok(job) = rx.recv() {
                    job();
                }
            });
        match started {
            Ok(_) => Some(tx),
            Err(e) => {
                tracing::warn!(error = %e, "no recall probes: the probe thread did not start");
                None
            }
        }
    });
    match sender.as_ref().map(|tx| tx.try_send(Box::new(job))) {
        Some(Ok(())) => true,
        Some(Err(TrySendError::Full(_) | TrySendError::Disconnected(_))) | None => false,
    }
}

#[cfg(test)]
#[path = "calibration_tests.rs"]
mod tests;
