//! Local file, encrypted local file, remote server and embedded replica side by side, in one run.
//!
//! Starts the given `sqld` on a free loopback port with a fresh data directory (no auth), then:
//! a local store loaded with `n` synthetic notes; the same in an encrypted file (and both reopened
//! with their notes, for the open time with encryption); a remote store on the server loaded with the same
//! notes; an embedded replica of that server (its first sync pulls them). Each is measured the same
//! way: hybrid searches (top 5) after a warm-up, then sequential single-note saves, plus the open
//! time. The latency bench's corpus and seeds are reused, so the figures compare with its table.
//! The remote store then searches again with its last read sent as one batch and statement by
//! statement, alternating query by query (the before and after of issue 33 §8 in one run).
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "bench report")]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use chrono::{Duration, Utc};
use memory::{Embedder, EncryptionKey, HybridQuery, MemoryStore, NoteMetadata};
use types::{SessionId, UserId};

use crate::corpus::Corpus;
use crate::latency::synthetic_notes;
use crate::stats::{Rng, TempDir, percentile};
use crate::{BenchResult, EmbedderKind};

/// Notes per `import_notes` call: sqld interrupts a transaction held open for more than a few
/// seconds (`SQLITE_INTERRUPT`), and one remote import of 1,000 notes takes longer than that.
const LOAD_BATCH: usize = 25;
const WARMUP_QUERIES: usize = 50;
const TOP_K: usize = 5;
/// Reopens of a loaded store per open-time figure.
const REOPENS: usize = 5;

/// The server for the run; killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_sqld(sqld: &Path, dir: &Path) -> BenchResult<(Server, String)> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let child = Command::new(sqld)
        .arg("--no-welcome")
        .arg("--db-path")
        .arg(dir.join("bench.sqld"))
        .arg("--http-listen-addr")
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let server = Server(child);
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("sqld did not start".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok((server, format!("http://127.0.0.1:{port}")))
}

struct Row {
    mode: &'static str,
    open_ms: f64,
    load_secs: Option<f64>,
    search: Vec<f64>,
    save: Vec<f64>,
    /// Saves that failed (interrupted by the server); not in the percentiles.
    failed: usize,
}

/// Attempts per import batch.
const MAX_TRIES: usize = 20;

/// Import batches the server interrupted and that were sent again.
static INTERRUPTED: AtomicUsize = AtomicUsize::new(0);

pub async fn run(
    sqld: &Path,
    n: usize,
    kind: EmbedderKind,
    queries: usize,
    saves: usize,
) -> BenchResult<()> {
    let embedder = kind.build()?;
    embedder.embed(&["load the model".to_owned()]).await?;
    let dir = TempDir::new("stores")?;
    let (_server, url) = start_sqld(sqld, &dir.0)?;
    let mut rows = Vec::new();

    let local = memory::Target::File(&dir.0.join("local.db"));
    let plain = || memory::OpenOptions::with_embedder(embedder.clone());
    rows.push(loaded("local file", local, plain(), n, queries, saves).await?);

    let key = EncryptionKey::parse(&"0f".repeat(32))?;
    let encrypted_path = dir.0.join("encrypted.db");
    let encrypted = memory::Target::File(&encrypted_path);
    let keyed = || memory::OpenOptions {
        encryption_key: Some(key.clone()),
        ..plain()
    };
    rows.push(
        loaded(
            "local file, encrypted",
            encrypted,
            keyed(),
            n,
            queries,
            saves,
        )
        .await?,
    );
    // Opening a store with its notes (schema check, vector index load), plain and encrypted.
    let reopen = [
        ("plain", reopen_ms(local, &plain).await?),
        ("encrypted", reopen_ms(encrypted, &keyed).await?),
    ];

    let remote = memory::Target::Remote {
        url: &url,
        token: "",
    };
    let t = Instant::now();
    let store = MemoryStore::open(remote, plain()).await?;
    let open_ms = ms(t);
    let load_secs = load(&store, n).await?;
    let mode = "remote (sqld, loopback)";
    rows.push(measure(mode, &store, open_ms, Some(load_secs), queries, saves).await?);
    let (reads, failed_reads) = remote_reads(&store, queries).await?;
    drop(store);
    // What one request to the server costs on this machine now: the floor under a remote save.
    let trip = round_trip(&url).await?;

    let t = Instant::now();
    let replica = open_replica(&dir.0.join("replica.db"), &url, embedder.clone()).await?;
    let open_ms = ms(t);
    rows.push(measure("embedded replica", &replica, open_ms, None, queries, saves).await?);

    println!(
        "## Stores side by side ({n} notes, {} embedder, {queries} searches, {saves} saves)\n",
        kind.as_str()
    );
    println!("| store | open ms | load | search p50 / p95 ms | save p50 / p95 ms | failed saves |");
    println!("|---|---|---|---|---|---|");
    for r in rows {
        let load = r
            .load_secs
            .map_or("synced at open".to_owned(), |s| format!("{s:.1} s"));
        println!(
            "| {} | {:.1} | {load} | {:.2} / {:.2} | {:.2} / {:.2} | {} |",
            r.mode,
            r.open_ms,
            percentile(&r.search, 50.0),
            percentile(&r.search, 95.0),
            percentile(&r.save, 50.0),
            percentile(&r.save, 95.0),
            r.failed,
        );
    }
    println!(
        "\none round trip to the server (`SELECT 1`, {ROUND_TRIPS} in a row): p50 {:.2} ms, p95 {:.2} ms",
        percentile(&trip, 50.0),
        percentile(&trip, 95.0)
    );
    println!(
        "\nremote search, its last read as one batch or statement by statement (alternating, \
         {queries} searches each):\n"
    );
    println!("| reads | search p50 / p95 ms | failed searches |");
    println!("|---|---|---|");
    for (i, what) in ["one batch", "one by one"].into_iter().enumerate() {
        println!(
            "| {what} | {:.2} / {:.2} | {} |",
            percentile(&reads[i], 50.0),
            percentile(&reads[i], 95.0),
            failed_reads[i]
        );
    }
    for (what, p50) in reopen {
        println!("\nopen with {n} notes, {what}: {p50:.1} ms (p50 of {REOPENS})");
    }
    println!(
        "\nimport batches interrupted by the server and sent again: {}",
        INTERRUPTED.load(Ordering::Relaxed)
    );
    Ok(())
}

/// Opens a store (timed), loads `n` notes into it and measures it; the store is closed after.
async fn loaded(
    mode: &'static str,
    target: memory::Target<'_>,
    options: memory::OpenOptions,
    n: usize,
    queries: usize,
    saves: usize,
) -> BenchResult<Row> {
    let t = Instant::now();
    let store = MemoryStore::open(target, options).await?;
    let open_ms = ms(t);
    let load_secs = load(&store, n).await?;
    measure(mode, &store, open_ms, Some(load_secs), queries, saves).await
}

/// The p50 of [`REOPENS`] opens of a loaded store, in milliseconds.
async fn reopen_ms(
    target: memory::Target<'_>,
    options: &dyn Fn() -> memory::OpenOptions,
) -> BenchResult<f64> {
    let mut times = Vec::with_capacity(REOPENS);
    for _ in 0..REOPENS {
        let t = Instant::now();
        let store = MemoryStore::open(target, options()).await?;
        times.push(ms(t));
        drop(store);
    }
    Ok(percentile(&times, 50.0))
}

/// Requests timed by [`round_trip`].
const ROUND_TRIPS: usize = 200;

/// Times `SELECT 1` on the server, each on a new stream as the store's jobs do; milliseconds.
async fn round_trip(url: &str) -> BenchResult<Vec<f64>> {
    let db = libsql::Builder::new_remote(url.to_owned(), String::new())
        .build()
        .await?;
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    for _ in 0..ROUND_TRIPS {
        let conn = db.connect()?;
        let t = Instant::now();
        let mut rows = conn.query("SELECT 1", ()).await?;
        while rows.next().await?.is_some() {}
        times.push(ms(t));
    }
    Ok(times)
}

async fn open_replica(
    path: &Path,
    url: &str,
    embedder: Arc<dyn Embedder>,
) -> BenchResult<MemoryStore> {
    Ok(MemoryStore::open(
        memory::Target::Replica {
            path,
            url,
            token: "",
        },
        memory::OpenOptions::with_embedder(embedder),
    )
    .await?)
}

/// Imports `n` synthetic notes (seed 42, as the latency bench); returns seconds.
async fn load(store: &MemoryStore, n: usize) -> BenchResult<f64> {
    let user = UserId::parse("bench")?;
    let corpus = Corpus::default();
    let mut rng = Rng::new(42);
    let started = Instant::now();
    let base = Utc::now() - Duration::days(365);
    let mut done = 0;
    while done < n {
        let batch = LOAD_BATCH.min(n - done);
        let notes = synthetic_notes(&corpus, &mut rng, base, done..done + batch)?;
        // sqld sometimes interrupts a write transaction (`SQLITE_INTERRUPT`, see
        // docs/benchmarks.md): the batch rolled back, so it is sent again (ids make it idempotent).
        let mut tries = 0;
        while let Err(e) = store
            .import(&user, None, notes.clone(), memory::Similar::Unchecked, None)
            .await
            .map(|report| report.imported)
        {
            tries += 1;
            if tries >= MAX_TRIES {
                return Err(e.into());
            }
            INTERRUPTED.fetch_add(1, Ordering::Relaxed);
        }
        done += batch;
    }
    Ok(started.elapsed().as_secs_f64())
}

async fn measure(
    mode: &'static str,
    store: &MemoryStore,
    open_ms: f64,
    load_secs: Option<f64>,
    queries: usize,
    saves: usize,
) -> BenchResult<Row> {
    eprintln!("  measuring {mode}");
    let user = UserId::parse("bench")?;
    let session = SessionId::user_memory(&user);
    let corpus = Corpus::default();
    let mut qrng = Rng::new(7);
    let all: Vec<String> = (0..WARMUP_QUERIES + queries)
        .map(|_| corpus.query(&mut qrng))
        .collect();
    let (warmup, measured) = all.split_at(WARMUP_QUERIES.min(all.len()));
    for q in warmup {
        store
            .search(&HybridQuery::new(vec![session.clone()], q.clone(), TOP_K))
            .await?;
    }
    let mut search = Vec::with_capacity(measured.len());
    for q in measured {
        let query = HybridQuery::new(vec![session.clone()], q.clone(), TOP_K);
        let t = Instant::now();
        store.search(&query).await?;
        search.push(ms(t));
    }
    let mut rng = Rng::new(99);
    let mut save = Vec::with_capacity(saves);
    let mut failed = 0;
    for _ in 0..saves {
        let text = corpus.note(&mut rng);
        let t = Instant::now();
        match store
            .save(
                &user,
                None,
                &text,
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)
        {
            Ok(_) => save.push(ms(t)),
            Err(e) => {
                eprintln!("  save failed: {e:?}");
                failed += 1;
            }
        }
    }
    Ok(Row {
        mode,
        open_ms,
        load_secs,
        search,
        save,
        failed,
    })
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// Remote searches with the reads batched and one by one on the same store, the same queries,
/// alternating (which of the two goes first alternates too): milliseconds and failed searches,
/// batched first.
async fn remote_reads(
    store: &MemoryStore,
    queries: usize,
) -> BenchResult<([Vec<f64>; 2], [usize; 2])> {
    let user = UserId::parse("bench")?;
    let session = SessionId::user_memory(&user);
    let corpus = Corpus::default();
    let mut qrng = Rng::new(11);
    let mut times = [Vec::with_capacity(queries), Vec::with_capacity(queries)];
    let mut failed = [0; 2];
    for i in 0..queries {
        let query = HybridQuery::new(vec![session.clone()], corpus.query(&mut qrng), TOP_K);
        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        for way in order {
            store.set_read_batching(way == 0);
            let t = Instant::now();
            match store.search(&query).await {
                Ok(_) => times[way].push(ms(t)),
                Err(e) => {
                    eprintln!("  search failed (batched: {}): {e:?}", way == 0);
                    failed[way] += 1;
                }
            }
        }
    }
    store.set_read_batching(true);
    Ok((times, failed))
}
