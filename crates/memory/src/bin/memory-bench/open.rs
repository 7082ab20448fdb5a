//! Opening a large store, and searching it with each Hamming kernel of the binary first pass.
//!
//! `open` keeps its store in `--dir` (loaded once with `--notes` synthetic notes, then reused by
//! later runs), opens it `--reopens` times (each a fresh `MemoryStore`: what an agent's start
//! costs), then times hybrid searches and the vector leg alone with each Hamming kernel this CPU
//! has (forced in turn). `kernels` times the Hamming distances alone over `--rows` random
//! 384-bit codes, per kernel, in the blocks the first pass uses.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "bench report")]

use std::path::Path;
use std::time::Instant;

use memory::{HybridQuery, MemoryStore, VectorLeg};
use memory_index::hamming::{Kernel, QueryCode, distances, force_kernel};
use types::{SessionId, UserId};

use crate::corpus::Corpus;
use crate::latency::{busy, load_notes, ms};
use crate::stats::{Rng, percentile};
use crate::{BenchResult, EmbedderKind};

const WARMUP_QUERIES: usize = 30;
const TOP_K: usize = 5;
const VECTOR_CANDIDATES: usize = 50;

/// What an `open` run does.
#[derive(Debug, Clone, Copy)]
pub struct OpenRun {
    pub notes: usize,
    pub reopens: usize,
    pub queries: usize,
    pub busy_cores: usize,
}

pub async fn run(dir: &Path, kind: EmbedderKind, run: OpenRun) -> BenchResult<()> {
    let embedder = kind.build()?;
    let path = dir.join("memory.db");
    let options = || memory::OpenOptions::with_embedder(embedder.clone());
    let user = UserId::parse("bench")?;
    let corpus = Corpus::default();
    if !path.exists() {
        std::fs::create_dir_all(dir)?;
        let store = MemoryStore::open(memory::Target::File(&path), options()).await?;
        let t = Instant::now();
        load_notes(&store, &user, run.notes, &corpus).await?;
        eprintln!(
            "loaded {} notes in {:.1} s",
            run.notes,
            t.elapsed().as_secs_f64()
        );
    }
    let stop = busy(run.busy_cores);
    println!(
        "# Open and search ({} embedder, store {}, {} busy core(s))\n",
        kind.as_str(),
        path.display(),
        run.busy_cores
    );
    let mut opens = Vec::new();
    for _ in 0..run.reopens.max(1) {
        let t = Instant::now();
        let store = MemoryStore::open(memory::Target::File(&path), options()).await?;
        opens.push(t.elapsed().as_secs_f64());
        eprintln!("  opened in {:.2} s", opens[opens.len() - 1]);
        drop(store);
    }
    let list: Vec<String> = opens.iter().map(|s| format!("{s:.2}")).collect();
    println!("open s: {}\n", list.join(", "));

    let store = MemoryStore::open(memory::Target::File(&path), options()).await?;
    let session = SessionId::user_memory(&user);
    let sessions = [session.clone()];
    let mut qrng = Rng::new(7);
    let queries: Vec<String> = (0..WARMUP_QUERIES + run.queries)
        .map(|_| corpus.query(&mut qrng))
        .collect();
    let vectors = crate::unit_vectors(embedder.as_ref(), &queries).await?;
    println!("| Hamming kernel | search p50 / p95 / p99 ms | vector leg alone p50 / p95 ms |");
    println!("|---|---|---|");
    for kernel in Kernel::ALL.into_iter().filter(|k| k.available()) {
        force_kernel(Some(kernel)).map_err(|k| format!("kernel {} unavailable", k.name()))?;
        store.set_vector_leg(VectorLeg::Auto);
        let (mut search, mut alone) = (Vec::new(), Vec::new());
        for (i, (q, v)) in queries.iter().zip(&vectors).enumerate() {
            let query = HybridQuery::new(vec![session.clone()], q.clone(), TOP_K);
            let t = Instant::now();
            store.search(&query).await?;
            let search_ms = ms(t);
            let t = Instant::now();
            std::hint::black_box(store.vector_leg_alone(
                &sessions,
                v,
                VECTOR_CANDIDATES,
                VectorLeg::Auto,
            ));
            if i >= WARMUP_QUERIES {
                search.push(search_ms);
                alone.push(ms(t));
            }
        }
        println!(
            "| {} | {:.2} / {:.2} / {:.2} | {:.3} / {:.3} |",
            kernel.name(),
            percentile(&search, 50.0),
            percentile(&search, 95.0),
            percentile(&search, 99.0),
            percentile(&alone, 50.0),
            percentile(&alone, 95.0),
        );
    }
    force_kernel(None).map_err(|k| format!("kernel {} unavailable", k.name()))?;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Rows per call of the kernel, as the first pass counts them.
const BLOCK: usize = 1024;

/// The first pass's distances alone, per kernel: `rows` random 384-bit codes, `passes` passes each.
pub fn kernels(rows: usize, passes: usize, busy_cores: usize) -> BenchResult<()> {
    let stop = busy(busy_cores);
    let mut rng = Rng::new(11);
    let codes: Vec<u64> = (0..rows * 6).map(|_| rng.next_u64()).collect();
    // A query's centred components, uniform in [-1, 1): the kernels' work is the same whatever the
    // mask is.
    let centred: Vec<f32> = (0..384)
        .map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        .collect();
    let query = QueryCode::new(&centred);
    let mut dist = vec![0u16; rows];
    println!(
        "# First-pass distances (masked Hamming) of {rows} 384-bit codes ({passes} passes, {busy_cores} busy core(s))\n"
    );
    println!("| kernel | p50 / p95 ms | rows/µs (p50) |");
    println!("|---|---|---|");
    let mut reference: Option<Vec<u16>> = None;
    for kernel in Kernel::ALL.into_iter().filter(|k| k.available()) {
        force_kernel(Some(kernel)).map_err(|k| format!("kernel {} unavailable", k.name()))?;
        let mut times = Vec::with_capacity(passes);
        for _ in 0..passes.max(1) {
            let t = Instant::now();
            for (codes, out) in codes.chunks(BLOCK * 6).zip(dist.chunks_mut(BLOCK)) {
                distances(&query, codes, out);
            }
            std::hint::black_box(&dist);
            times.push(ms(t));
        }
        match &reference {
            None => reference = Some(dist.clone()),
            Some(r) if *r != dist => return Err(format!("{} differs", kernel.name()).into()),
            Some(_) => {}
        }
        let p50 = percentile(&times, 50.0);
        println!(
            "| {} | {p50:.2} / {:.2} | {:.0} |",
            kernel.name(),
            percentile(&times, 95.0),
            rows as f64 / (p50 * 1000.0)
        );
    }
    force_kernel(None).map_err(|k| format!("kernel {} unavailable", k.name()))?;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}
