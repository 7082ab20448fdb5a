//! Latency, size and memory on synthetic notes.
//!
//! Each store size runs in its own child process (the same binary with one `--notes` value), so that
//! resident memory is measured from a clean start. Per size: bulk-load with `import_notes`, then
//! hybrid searches (top 5) with the default vector leg (binary first pass above
//! `memory_index::APPROX_MIN_ROWS` rows) and with the exact scan, alternating query by query; the vector
//! leg alone (its own time, default and exact, and recall@10 of the default leg against the exact
//! scan on chunks), then sequential single-note saves on top of the loaded store, then a
//! breakdown of one search into its parts (query embedding, the keyword leg alone, the details read,
//! an exact f32 scan of the same number of vectors).
//!
//! `--busy-cores N` is the load generator: the parent process keeps N threads spinning on integer
//! arithmetic for the whole run (children included), so that the measurement shares the machine
//! with N busy cores, as an agent host with other users' work would.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "bench report")]

use std::time::Instant;

use chrono::{Duration, Utc};
use memory::{ExportedNote, HybridQuery, MemoryStore, NoteMetadata, VectorLeg};
use serde::{Deserialize, Serialize};
use types::{NoteId, SessionId, UserId};

use crate::breakdown::{details_alone, scan_alone};
use crate::corpus::Corpus;
use crate::stats::{Rng, TempDir, mean, peak_rss_bytes, percentile, rss_bytes};
use crate::{BenchResult, EmbedderKind};

const LOAD_BATCH: usize = 5000;
const WARMUP_QUERIES: usize = 50;
const TOP_K: usize = 5;
/// Chunks hybrid search asks of the vector leg for top `TOP_K` (`(10 × top k).clamp(50, 1000)`).
const VECTOR_CANDIDATES: usize = 50;
/// Chunks whose details search reads first (3 × top k).
pub(crate) const DETAILS: usize = 3 * TOP_K;
/// Marks the machine-readable line a child prints for its parent.
const RESULT_PREFIX: &str = "RESULT ";

#[derive(Debug, Clone, Copy)]
pub struct Counts {
    pub queries: usize,
    pub saves: usize,
    /// Threads kept spinning for the whole run (the load generator).
    pub busy_cores: usize,
}

/// Spins `n` threads until the returned flag is set (the load generator).
pub(crate) fn busy(n: usize) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for i in 0..n {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut x = i as u64 + 1;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for _ in 0..100_000 {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                }
                std::hint::black_box(x);
            }
        });
    }
    stop
}

/// Everything measured for one store size (milliseconds unless named otherwise).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SizeResult {
    notes: usize,
    chunks: u64,
    load_secs: f64,
    search_p50: f64,
    search_p95: f64,
    search_p99: f64,
    search_mean: f64,
    /// The same queries with the exact scan.
    exact_p50: f64,
    exact_p95: f64,
    exact_p99: f64,
    /// Vector leg alone (top 10 chunks): share of the exact scan's hits the default leg finds.
    recall10: f64,
    /// The vector leg alone (index search, query embedded beforehand), default leg and exact scan.
    vector_p50: f64,
    vector_p95: f64,
    vector_exact_p50: f64,
    vector_exact_p95: f64,
    hits_mean: f64,
    save_p50: f64,
    save_p95: f64,
    save_max: f64,
    saves_per_sec: f64,
    db_bytes: u64,
    wal_bytes: u64,
    rss_start: u64,
    rss_model: u64,
    rss_empty: u64,
    rss_loaded: u64,
    /// Peak resident memory up to the end of the load.
    rss_peak_load: u64,
    /// Opening the loaded store again (vectors read, texts tokenized, codes built), seconds.
    reopen_secs: f64,
    embed_p50: f64,
    embed_blocking_p50: f64,
    /// The keyword leg alone (in-memory BM25, 50 candidates as hybrid search asks at top 5).
    keyword_p50: f64,
    keyword_p95: f64,
    /// Chunks it returned (mean).
    keyword_found_mean: f64,
    /// Reading the details of 3 × top k chunks by id (what search does first after fusing).
    details_p50: f64,
    scan_p50: f64,
    /// After the searches: the share of rows the first pass keeps at least (1: no binary codes).
    candidate_share: f64,
}

pub async fn run(sizes: &[usize], kind: EmbedderKind, counts: Counts) -> BenchResult<()> {
    let stop = busy(counts.busy_cores);
    let results = match sizes {
        [n] => vec![measure(*n, kind, counts).await?],
        _ => {
            let exe = std::env::current_exe()?;
            let mut results = Vec::new();
            for n in sizes {
                let output = std::process::Command::new(&exe)
                    .args([
                        "latency",
                        "--notes",
                        &n.to_string(),
                        "--embedder",
                        kind.as_str(),
                    ])
                    .args(["--busy-cores", "0"])
                    .args([
                        "--queries",
                        &counts.queries.to_string(),
                        "--saves",
                        &counts.saves.to_string(),
                    ])
                    .stderr(std::process::Stdio::inherit())
                    .output()?;
                let stdout = String::from_utf8_lossy(&output.stdout);
                let line = stdout
                    .lines()
                    .find_map(|l| l.strip_prefix(RESULT_PREFIX))
                    .ok_or_else(|| format!("the run with {n} notes failed ({})", output.status))?;
                results.push(serde_json::from_str(line)?);
            }
            results
        }
    };
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    print_report(&results, kind, counts);
    Ok(())
}

async fn measure(n: usize, kind: EmbedderKind, counts: Counts) -> BenchResult<SizeResult> {
    let rss_start = rss_bytes();
    let embedder = kind.build()?;
    embedder.embed(&["load the model".to_owned()]).await?;
    let rss_model = rss_bytes();
    let dir = TempDir::new(&format!("latency{n}"))?;
    let path = dir.0.join("memory.db");
    let store = MemoryStore::open(
        memory::Target::File(&path),
        memory::OpenOptions::with_embedder(embedder.clone()),
    )
    .await?;
    let rss_empty = rss_bytes();
    let user = UserId::parse("bench")?;
    let session = SessionId::user_memory(&user);
    let corpus = Corpus::default();

    // Bulk load.
    let started = Instant::now();
    let mut rng = load_notes(&store, &user, n, &corpus).await?;
    let load_secs = started.elapsed().as_secs_f64();
    let rss_loaded = rss_bytes();
    let rss_peak_load = peak_rss_bytes();
    let stats = store.upkeep().stats().await?;
    let wal_bytes = std::fs::metadata(dir.0.join("memory.db-wal")).map_or(0, |m| m.len());

    // Searches.
    let mut qrng = Rng::new(7);
    let queries: Vec<String> = (0..WARMUP_QUERIES + counts.queries)
        .map(|_| corpus.query(&mut qrng))
        .collect();
    let (warmup, measured) = queries.split_at(WARMUP_QUERIES.min(queries.len()));
    for q in warmup {
        store
            .search(&HybridQuery::new(vec![session.clone()], q.clone(), TOP_K))
            .await?;
    }
    let mut search_ms = Vec::with_capacity(measured.len());
    let mut exact_ms = Vec::with_capacity(measured.len());
    let mut hits = Vec::with_capacity(measured.len());
    for (i, q) in measured.iter().enumerate() {
        let query = HybridQuery::new(vec![session.clone()], q.clone(), TOP_K);
        // The first search of a text warms the CPU caches for the second; the legs take turns at
        // going first, so neither gets the warm cache every time.
        let legs = if i % 2 == 0 {
            [VectorLeg::Auto, VectorLeg::Exact]
        } else {
            [VectorLeg::Exact, VectorLeg::Auto]
        };
        for leg in legs {
            store.set_vector_leg(leg);
            let t = Instant::now();
            let found = store.search(&query).await?;
            if leg == VectorLeg::Auto {
                search_ms.push(ms(t));
                hits.push(found.len() as f64);
            } else {
                exact_ms.push(ms(t));
            }
        }
    }
    store.set_vector_leg(VectorLeg::Auto);

    // The vector leg alone: its own time at the candidate count hybrid search asks of it, and
    // recall@10 of the default leg against the exact scan, on chunks.
    let sessions = [session.clone()];
    let mut vector_ms = Vec::with_capacity(measured.len());
    let mut vector_exact_ms = Vec::with_capacity(measured.len());
    let mut recalled = 0usize;
    let mut relevant = 0usize;
    for (i, q) in measured.iter().enumerate() {
        let mut v = embedder.embed(std::slice::from_ref(q)).await?.remove(0);
        memory::embedding::normalize(&mut v);
        let legs = if i % 2 == 0 {
            [VectorLeg::Auto, VectorLeg::Exact]
        } else {
            [VectorLeg::Exact, VectorLeg::Auto]
        };
        for leg in legs {
            let t = Instant::now();
            std::hint::black_box(store.vector_leg_alone(&sessions, &v, VECTOR_CANDIDATES, leg));
            match leg {
                VectorLeg::Exact => vector_exact_ms.push(ms(t)),
                _ => vector_ms.push(ms(t)),
            }
        }
        let exact = store.vector_leg_alone(&sessions, &v, 10, VectorLeg::Exact);
        let approx = store.vector_leg_alone(&sessions, &v, 10, VectorLeg::Auto);
        relevant += exact.len();
        recalled += exact
            .iter()
            .filter(|e| approx.iter().any(|a| a.0 == e.0))
            .count();
    }

    let candidate_share = store
        .vector_reach(&sessions)
        .first()
        .map_or(1.0, |&(_, share)| share);

    // Single-note saves on top of the loaded store.
    let mut save_ms = Vec::with_capacity(counts.saves);
    let saves_started = Instant::now();
    for _ in 0..counts.saves {
        let text = corpus.note(&mut rng);
        let t = Instant::now();
        store
            .save(
                &user,
                None,
                &text,
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)?;
        save_ms.push(ms(t));
    }
    let saves_per_sec = counts.saves as f64 / saves_started.elapsed().as_secs_f64().max(1e-9);

    // Parts of one search.
    let sample = &measured[..measured.len().min(200)];
    let mut embed_ms = Vec::new();
    for q in sample {
        let t = Instant::now();
        embedder.embed(std::slice::from_ref(q)).await?;
        embed_ms.push(ms(t));
    }
    let embed_blocking_p50 = match kind {
        EmbedderKind::Builtin => {
            let builtin = memory::embedding::BuiltinEmbedder::new(64)?;
            let mut v = Vec::new();
            for q in sample {
                let t = Instant::now();
                builtin.embed_blocking(std::slice::from_ref(q))?;
                v.push(ms(t));
            }
            percentile(&v, 50.0)
        }
        EmbedderKind::Hash => 0.0,
    };
    let mut keyword_ms = Vec::with_capacity(sample.len());
    let mut keyword_found = Vec::with_capacity(sample.len());
    for q in sample {
        let t = Instant::now();
        let found = store.keyword_leg_alone(&sessions, q, VECTOR_CANDIDATES);
        keyword_ms.push(ms(t));
        keyword_found.push(found.len() as f64);
    }
    let details = details_alone(&path, sample.len()).await?;
    drop(store);
    let t = Instant::now();
    let store = MemoryStore::open(
        memory::Target::File(&path),
        memory::OpenOptions::with_embedder(embedder.clone()),
    )
    .await?;
    let reopen_secs = t.elapsed().as_secs_f64();
    let scan_p50 = scan_alone(stats.chunks as usize, embedder.dimensions(), sample.len());
    drop(store);

    let result = SizeResult {
        notes: n,
        chunks: stats.chunks,
        load_secs,
        search_p50: percentile(&search_ms, 50.0),
        search_p95: percentile(&search_ms, 95.0),
        search_p99: percentile(&search_ms, 99.0),
        search_mean: mean(&search_ms),
        exact_p50: percentile(&exact_ms, 50.0),
        exact_p95: percentile(&exact_ms, 95.0),
        exact_p99: percentile(&exact_ms, 99.0),
        recall10: recalled as f64 / relevant.max(1) as f64,
        vector_p50: percentile(&vector_ms, 50.0),
        vector_p95: percentile(&vector_ms, 95.0),
        vector_exact_p50: percentile(&vector_exact_ms, 50.0),
        vector_exact_p95: percentile(&vector_exact_ms, 95.0),
        hits_mean: mean(&hits),
        save_p50: percentile(&save_ms, 50.0),
        save_p95: percentile(&save_ms, 95.0),
        save_max: percentile(&save_ms, 100.0),
        saves_per_sec,
        db_bytes: stats.db_bytes,
        wal_bytes,
        rss_start,
        rss_model,
        rss_empty,
        rss_loaded,
        rss_peak_load,
        reopen_secs,
        embed_p50: percentile(&embed_ms, 50.0),
        embed_blocking_p50,
        keyword_p50: percentile(&keyword_ms, 50.0),
        keyword_p95: percentile(&keyword_ms, 95.0),
        keyword_found_mean: mean(&keyword_found),
        details_p50: percentile(&details, 50.0),
        scan_p50,
        candidate_share,
    };
    println!("{RESULT_PREFIX}{}", serde_json::to_string(&result)?);
    Ok(result)
}

/// Imports `n` synthetic notes in batches (one a minute over the past year); returns the
/// generator, for more notes of the same kind.
pub(crate) async fn load_notes(
    store: &MemoryStore,
    user: &UserId,
    n: usize,
    corpus: &Corpus,
) -> BenchResult<Rng> {
    let mut rng = Rng::new(42);
    let started = Instant::now();
    let base = Utc::now() - Duration::days(365);
    let mut done = 0;
    while done < n {
        let batch = LOAD_BATCH.min(n - done);
        let notes = synthetic_notes(corpus, &mut rng, base, done..done + batch)?;
        store
            .import(user, None, notes, memory::Similar::Unchecked, None)
            .await
            .map(|report| report.imported)?;
        done += batch;
        eprintln!(
            "  {n}: loaded {done} notes in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(rng)
}

/// Synthetic notes number `range` of a load: one a minute from `base`, texts from `corpus`.
pub(crate) fn synthetic_notes(
    corpus: &Corpus,
    rng: &mut Rng,
    base: chrono::DateTime<Utc>,
    range: std::ops::Range<usize>,
) -> BenchResult<Vec<ExportedNote>> {
    let mut notes = Vec::with_capacity(range.len());
    for i in range {
        let at = base + Duration::seconds(i64::try_from(i).unwrap_or(0) * 60);
        notes.push(ExportedNote {
            note_id: NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string())?,
            content: corpus.note(rng),
            metadata: NoteMetadata::default(),
            created_at: at,
            updated_at: at,
        });
    }
    Ok(notes)
}

pub(crate) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn print_report(results: &[SizeResult], kind: EmbedderKind, counts: Counts) {
    println!(
        "# Latency ({} embedder; search: hybrid default, top {TOP_K}, {} queries after {WARMUP_QUERIES} warm-up; \
         saves: {} sequential store_note; {} busy core(s))\n",
        kind.as_str(),
        counts.queries,
        counts.saves,
        counts.busy_cores
    );
    println!(
        "| notes | load (import_notes) | search p50 / p95 / p99 ms (default leg) | exact scan p50 / p95 / p99 ms | vector leg alone p50 / p95 ms, default vs exact | recall@10 vs exact (vector leg) | save p50 / p95 / max ms | saves/s | bytes/note (db+wal) | RSS loaded MiB | RSS Δ over empty store MiB | peak RSS during load MiB | reopen s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in results {
        println!(
            "| {} | {:.1} s ({:.0} notes/s) | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} / {:.2} | {:.3} / {:.3} vs {:.3} / {:.3} | {:.4} | {:.2} / {:.2} / {:.2} | {:.0} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} |",
            r.notes,
            r.load_secs,
            r.notes as f64 / r.load_secs.max(1e-9),
            r.search_p50,
            r.search_p95,
            r.search_p99,
            r.exact_p50,
            r.exact_p95,
            r.exact_p99,
            r.vector_p50,
            r.vector_p95,
            r.vector_exact_p50,
            r.vector_exact_p95,
            r.recall10,
            r.save_p50,
            r.save_p95,
            r.save_max,
            r.saves_per_sec,
            (r.db_bytes + r.wal_bytes) as f64 / r.notes.max(1) as f64,
            mib(r.rss_loaded),
            mib(r.rss_loaded.saturating_sub(r.rss_empty)),
            mib(r.rss_peak_load),
            r.reopen_secs,
        );
    }
    println!("\nSearch breakdown (p50 ms unless noted) and memory baseline:\n");
    println!(
        "| notes | chunks | search mean | hits returned | query embed (async) | embed on caller thread | keyword leg alone p50 / p95 | keyword chunks found (mean, ≤ 50) | details of 15 chunks | old f32 scan | RSS start / model loaded / empty store MiB | first pass keeps ≥ (share of rows) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in results {
        println!(
            "| {} | {} | {:.2} | {:.1} | {:.3} | {:.3} | {:.3} / {:.3} | {:.1} | {:.3} | {:.3} | {:.1} / {:.1} / {:.1} | {:.4} |",
            r.notes,
            r.chunks,
            r.search_mean,
            r.hits_mean,
            r.embed_p50,
            r.embed_blocking_p50,
            r.keyword_p50,
            r.keyword_p95,
            r.keyword_found_mean,
            r.details_p50,
            r.scan_p50,
            mib(r.rss_start),
            mib(r.rss_model),
            mib(r.rss_empty),
            r.candidate_share,
        );
    }
}
