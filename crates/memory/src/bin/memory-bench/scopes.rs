//! `memory_search` with `scope = "all"` at scale, and what a message costs (issue 38).
//!
//! A store of `--notes` synthetic notes (`import_notes`, as `latency` loads them) and
//! `--messages` conversation messages, written the way the product writes them
//! (`Sessions::append_message_at`, one transaction each), in sessions of 50–300 turns spread
//! over the last year, user and assistant in turn, each session titled. The texts are turn-like
//! (the first part of one LoCoMo turn joined to the last part of another, see
//! [`crate::conversations::turn_like`]); the queries are LoCoMo's questions.
//!
//! Sizes: after the notes and again after the messages, the database (file and WAL, and per table
//! or index when the SQLite build has `dbstat`), the index snapshot beside it and the resident
//! memory of a fresh open (in a child process), each divided per message; the message's own text
//! (its content's UTF-8 bytes) is subtracted from the database's share.
//!
//! Latency, per `--busy-cores` value (threads spinning for that part of the run), three ways in
//! turn on each query: what the tool does for `scope = "all"` (list the user's conversation
//! sessions, one hybrid query over them and the notes namespace at top 10, then the contexts of
//! the conversation hits), the same as it was done before (every session listed with its event
//! count, two reads per hit), and the bare `MemoryStore::search` with the sessions listed
//! beforehand.
//! Before the searches, the live recall probe runs on every query
//! ([`MemoryStore::settle_vector_leg`]): its share only grows, and which searches it would
//! sample depends on the code measured, so two binaries compare at the same reach.
//! `--dir` keeps the store for later runs (sizes are measured only by the run that loads it).
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "bench report")]

use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Duration, Utc};
use memory::{HitSource, HybridQuery, MemoryStore, QueryTime};
use types::{Message, SessionId, UserId};

use crate::conversations::{turn_like, turns_and_questions};
use crate::corpus::Corpus;
use crate::latency::{busy, load_notes, ms};
use crate::stats::{Rng, TempDir, percentile, rss_bytes};
use crate::{BenchResult, EmbedderKind};

const TOP_K: usize = 10;
/// Turns on each side of a conversation hit (what `memory_search` shows).
const NEIGHBOURS: usize = 2;
const WARMUP_QUERIES: usize = 30;
/// Marks the line a child prints for its parent.
const RSS_PREFIX: &str = "RSS ";

/// What a `scopes` run does.
#[derive(Debug, Clone)]
pub struct ScopesRun {
    pub notes: usize,
    pub messages: usize,
    pub queries: usize,
    pub busy_cores: Vec<usize>,
    pub dir: Option<PathBuf>,
}

/// The store's footprint at one point of the load.
#[derive(Debug, Clone, Copy, Default)]
struct Footprint {
    db: u64,
    snapshot: u64,
    rss: u64,
}

pub async fn run(file: &Path, kind: EmbedderKind, run: ScopesRun) -> BenchResult<()> {
    let (turns, questions) = turns_and_questions(file)?;
    let embedder = kind.build()?;
    let temp;
    let dir = match &run.dir {
        Some(dir) => dir.clone(),
        None => {
            temp = TempDir::new("scopes")?;
            temp.0.clone()
        }
    };
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("memory.db");
    let options = || memory::OpenOptions::with_embedder(embedder.clone());
    let user = UserId::parse("heavy")?;
    println!(
        "# Scope all and what a message costs ({} embedder, {} notes + {} messages)\n",
        kind.as_str(),
        run.notes,
        run.messages
    );
    if !path.exists() {
        let store = MemoryStore::open(memory::Target::File(&path), options()).await?;
        let t = Instant::now();
        load_notes(&store, &user, run.notes, &Corpus::default()).await?;
        eprintln!("notes loaded in {:.1} s", t.elapsed().as_secs_f64());
        settle(store).await;
        let before = footprint(&path, kind)?;
        let before_tables = table_sizes(&path).await.ok();
        let store = MemoryStore::open(memory::Target::File(&path), options()).await?;
        let t = Instant::now();
        let text_bytes = load_messages(&store, &user, &turns, run.messages).await?;
        let secs = t.elapsed().as_secs_f64();
        println!(
            "messages loaded in {secs:.1} s ({:.0} messages/s, one append_message_at each)\n",
            run.messages as f64 / secs.max(1e-9)
        );
        settle(store).await;
        let after = footprint(&path, kind)?;
        let after_tables = table_sizes(&path).await.ok();
        print_sizes(run.messages, text_bytes, before, after);
        if let (Some(b), Some(a)) = (before_tables, after_tables) {
            print_tables(run.messages, &b, &a);
        }
    }
    let store = MemoryStore::open(memory::Target::File(&path), options()).await?;
    println!("load average before the searches: {}\n", load_average());
    let mut rng = Rng::new(0x5C0_9E5);
    let queries: Vec<&String> = (0..WARMUP_QUERIES + run.queries)
        .map(|_| &questions[rng.below(questions.len())])
        .collect();
    // The live probes' share only grows, and which searches they sample depends on the code
    // being measured: settled on every query first, two binaries compare at the same reach.
    let listed = all_sessions(&store, &user).await?;
    let vectors = crate::unit_vectors(embedder.as_ref(), &queries).await?;
    store.settle_vector_leg(&listed, &vectors);
    println!(
        "first pass settled on the {} queries: (rows, share kept) {:?}\n",
        vectors.len(),
        store.vector_reach(&listed)
    );
    let sessions = listed.len();
    println!(
        "{sessions} sessions searched; top {TOP_K}, {} queries after {WARMUP_QUERIES} warm-up, the three ways in turn, each first on a third of the queries\n",
        run.queries
    );
    println!(
        "| busy cores | way | total p50 / p95 / p99 ms | listing p50 / p95 | search p50 / p95 | contexts p50 / p95 (hits read per query) |"
    );
    println!("|---|---|---|---|---|---|");
    for &cores in &run.busy_cores {
        let stop = busy(cores);
        let [tool, before, bare] = measure(&store, &user, &queries).await?;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        println!("| {cores} | {} |", tool.row("tool, scope all"));
        println!("| {cores} | {} |", before.row("tool as before"));
        println!("| {cores} | {} |", bare.row("`MemoryStore::search` alone"));
        eprintln!("load average after {cores} busy: {}", load_average());
    }
    crate::scopes_leg::vector_leg(&store, &listed, &vectors).await?;
    crate::scopes_leg::current_conversation(
        &store,
        &listed,
        SessionId::user_memory(&user),
        &queries,
    )
    .await?;
    println!("\nload average at the end: {}", load_average());
    store.close().await;
    Ok(())
}

/// Times of one way of searching, per query.
#[derive(Debug, Default)]
struct Times {
    total: Vec<f64>,
    listing: Vec<f64>,
    search: Vec<f64>,
    contexts: Vec<f64>,
    /// Conversation hits whose context was read.
    read: usize,
}

impl Times {
    fn row(&self, name: &str) -> String {
        let p = |v: &[f64], q: f64| percentile(v, q);
        format!(
            "{name} | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} ({:.1})",
            p(&self.total, 50.0),
            p(&self.total, 95.0),
            p(&self.total, 99.0),
            p(&self.listing, 50.0),
            p(&self.listing, 95.0),
            p(&self.search, 50.0),
            p(&self.search, 95.0),
            p(&self.contexts, 50.0),
            p(&self.contexts, 95.0),
            self.read as f64 / self.total.len().max(1) as f64,
        )
    }
}

/// How a search of scope `all` lists the sessions and reads the hits' contexts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// What the tool does now: one small read of the session ids, one of all contexts.
    Tool,
    /// What it did before: every session listed with its event count, two reads per hit.
    Before,
    /// `MemoryStore::search` alone, the sessions listed beforehand.
    Bare,
}

/// Every query each way, in turn (each way first on a third of them); the first
/// [`WARMUP_QUERIES`] are not counted.
async fn measure(
    store: &MemoryStore,
    user: &UserId,
    queries: &[&String],
) -> BenchResult<[Times; 3]> {
    let mut times: [Times; 3] = Default::default();
    let listed = all_sessions(store, user).await?;
    for (i, q) in queries.iter().enumerate() {
        // Each way goes first on a third of the queries.
        let mut order = [(0, Way::Tool), (1, Way::Before), (2, Way::Bare)];
        order.rotate_left(i % 3);
        for (w, way) in order {
            let t = Instant::now();
            let sessions = match way {
                Way::Tool => all_sessions(store, user).await?,
                Way::Before => sessions_before(store, user).await?,
                Way::Bare => listed.clone(),
            };
            let listing = ms(t);
            let s = Instant::now();
            let hits = store.search(&query(sessions, q)).await?;
            let search = ms(s);
            let c = Instant::now();
            let wanted: Vec<(SessionId, u64)> = hits
                .iter()
                .filter(|h| h.source == HitSource::Conversation)
                .map(|h| (h.session_id.clone(), h.event_seq))
                .collect();
            match way {
                Way::Tool => {
                    store
                        .conversation_contexts(user, &wanted, NEIGHBOURS)
                        .await?;
                }
                Way::Before => {
                    for (session, seq) in &wanted {
                        context_before(store, session, *seq).await?;
                    }
                }
                Way::Bare => {}
            }
            let contexts = ms(c);
            let total = ms(t);
            if i >= WARMUP_QUERIES {
                let into = &mut times[w];
                into.total.push(total);
                into.listing.push(listing);
                into.search.push(search);
                into.contexts.push(contexts);
                into.read += if way == Way::Bare { 0 } else { wanted.len() };
            }
        }
    }
    Ok(times)
}

/// The listing as it was: every session of the user with its event count, filtered.
async fn sessions_before(store: &MemoryStore, user: &UserId) -> BenchResult<Vec<SessionId>> {
    let mut sessions: Vec<SessionId> = store
        .sessions()
        .list_sessions(user)
        .await?
        .into_iter()
        .filter(|s| s.kind == memory::SessionKind::Conversation)
        .map(|s| s.session_id)
        .collect();
    sessions.push(SessionId::user_memory(user));
    Ok(sessions)
}

/// A hit's context as it was read: the session's row (with its event count), then the events
/// around the message, each on a reader thread.
async fn context_before(store: &MemoryStore, session: &SessionId, seq: u64) -> BenchResult<()> {
    let window = NEIGHBOURS * 4 + 1;
    store.sessions().session_info(session).await?;
    let before = seq.saturating_add(1 + NEIGHBOURS as u64 * 2);
    store
        .sessions()
        .history(session, Some(before), window * 2)
        .await?;
    Ok(())
}

/// What `scope = "all"` searches: every conversation session of the user, and their notes.
async fn all_sessions(store: &MemoryStore, user: &UserId) -> BenchResult<Vec<SessionId>> {
    let mut sessions = store.conversation_sessions(user).await?;
    sessions.push(SessionId::user_memory(user));
    Ok(sessions)
}

fn query(sessions: Vec<SessionId>, text: &str) -> HybridQuery {
    let mut q = HybridQuery::new(sessions, text, TOP_K);
    q.time = Some(QueryTime::now_in(chrono_tz::Tz::UTC));
    q
}

/// Writes `n` messages in sessions of 50–300 turns, each started at a random time of the last
/// year, a minute or two between turns; returns the bytes of their texts.
async fn load_messages(
    store: &MemoryStore,
    user: &UserId,
    turns: &[String],
    n: usize,
) -> BenchResult<u64> {
    let mut rng = Rng::new(0xC4A7);
    let year_ago = Utc::now() - Duration::days(365);
    let (mut written, mut text_bytes, mut session_no) = (0usize, 0u64, 0usize);
    let started = Instant::now();
    while written < n {
        session_no += 1;
        let session = SessionId::parse(&format!("chat-{session_no:05}"))?;
        let length = (50 + rng.below(251)).min(n - written);
        let minutes = i64::try_from(rng.below(365 * 24 * 60)).unwrap_or(0);
        let mut at: DateTime<Utc> = year_ago + Duration::minutes(minutes);
        for turn in 0..length {
            let text = turn_like(turns, &mut rng);
            text_bytes += text.len() as u64;
            let message = match turn % 2 {
                0 => Message::user(text),
                _ => Message::assistant(text),
            };
            store
                .sessions()
                .append_message_at(&session, user, &message, Some(at))
                .await?;
            at += Duration::seconds(60 + i64::try_from(rng.below(60)).unwrap_or(0));
            written += 1;
            if written % 10_000 == 0 {
                eprintln!(
                    "  {written} messages in {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            }
        }
        store
            .sessions()
            .set_session_title(&session, &format!("Chat number {session_no}"))
            .await?;
    }
    Ok(text_bytes)
}

/// Writes the index snapshot and closes the store (its WAL checkpointed).
async fn settle(store: MemoryStore) {
    store.upkeep().write_index_snapshot().await;
    store.close().await;
}

/// The database (with its WAL), the snapshot, and what a fresh open holds in memory.
fn footprint(path: &Path, kind: EmbedderKind) -> BenchResult<Footprint> {
    let size = |p: PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let mut snapshot = path.as_os_str().to_owned();
    snapshot.push(".index");
    Ok(Footprint {
        db: size(path.to_owned()) + size(PathBuf::from(wal)),
        snapshot: size(PathBuf::from(snapshot)),
        rss: open_rss(path, kind)?,
    })
}

/// Resident memory a fresh open of `path` adds, measured in a child process.
fn open_rss(path: &Path, kind: EmbedderKind) -> BenchResult<u64> {
    let output = std::process::Command::new(std::env::current_exe()?)
        .args(["open-rss", "--db"])
        .arg(path)
        .args(["--embedder", kind.as_str()])
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(RSS_PREFIX))
        .ok_or("the open-rss child printed no result")?;
    Ok(line.trim().parse()?)
}

/// The child of [`open_rss`]: prints the resident memory an open of `db` adds (the embedder is
/// built and warmed first, so that only the store and its index count).
pub async fn open_rss_child(db: &Path, kind: EmbedderKind) -> BenchResult<()> {
    let embedder = kind.build()?;
    embedder.embed(&["warm up".to_owned()]).await?;
    let before = rss_bytes();
    let store = MemoryStore::open(
        memory::Target::File(db),
        memory::OpenOptions::with_embedder(embedder),
    )
    .await?;
    let after = rss_bytes();
    println!("{RSS_PREFIX}{}", after.saturating_sub(before));
    store.close().await;
    Ok(())
}

/// Bytes per table and index (`dbstat`), when the SQLite build has it.
async fn table_sizes(path: &Path) -> BenchResult<Vec<(String, u64)>> {
    let db = libsql::Builder::new_local(path).build().await?;
    let conn = db.connect()?;
    let mut rows = conn
        .query(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC",
            (),
        )
        .await?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().await? {
        out.push((row.get::<String>(0)?, u64::try_from(row.get::<i64>(1)?)?));
    }
    Ok(out)
}

fn per(bytes: i128, n: usize) -> f64 {
    bytes as f64 / n.max(1) as f64
}

fn print_sizes(messages: usize, text_bytes: u64, before: Footprint, after: Footprint) {
    let delta = |a: u64, b: u64| i128::from(a) - i128::from(b);
    let text = per(i128::from(text_bytes), messages);
    let db = per(delta(after.db, before.db), messages);
    println!("| per message | bytes |\n|---|---|");
    println!("| its text (mean, UTF-8) | {text:.0} |");
    println!("| database file + WAL | {db:.0} |");
    println!("| **database beyond the text** | **{:.0}** |", db - text);
    println!(
        "| index snapshot (`.index`) | {:.0} |",
        per(delta(after.snapshot, before.snapshot), messages)
    );
    println!(
        "| resident memory of a fresh open | {:.0} |",
        per(delta(after.rss, before.rss), messages)
    );
    println!(
        "\n(database {} → {} bytes, snapshot {} → {}, open RSS {} → {})\n",
        before.db, after.db, before.snapshot, after.snapshot, before.rss, after.rss
    );
}

fn print_tables(messages: usize, before: &[(String, u64)], after: &[(String, u64)]) {
    println!("| table or index (dbstat) | bytes per message |\n|---|---|");
    for (name, bytes) in after {
        let was = before
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, b)| *b);
        let grew = i128::from(*bytes) - i128::from(was);
        if grew != 0 {
            println!("| {name} | {:.0} |", per(grew, messages));
        }
    }
    println!();
}

/// The 1-minute load average, as `/proc/loadavg` says.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}
