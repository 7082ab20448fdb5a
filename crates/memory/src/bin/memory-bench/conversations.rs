//! Recall of the approximate vector leg on conversation-like text at scale.
//!
//! The synthetic notes of `latency` are easy for one bit per dimension; chat turns are not (short,
//! alike, a large shared component), and a heavy user's store is mostly turns. LoCoMo's
//! conversations are too small to leave the exact scan, so this builds sessions of `--rows`
//! turn-like texts from them: each text joins the first part of one LoCoMo turn to the last part
//! of another (words and phrasing stay those of real chat; no text is kept). Queries are
//! LoCoMo's questions, each asked once, in order; the store probes its first pass on them as
//! hybrid search does (see `memory_index::calibration`), so the first questions run before any live
//! probe. Reported per size: recall@10 of the vector leg (store default) against the exact scan,
//! over all questions and over the second half (after the live probes settled), and both legs'
//! times.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "bench report")]

use std::path::Path;
use std::time::Instant;

use chrono::{Duration, Utc};
use memory::{ExportedNote, MemoryStore, NoteMetadata, VectorLeg};
use types::{NoteId, SessionId, UserId};

use crate::latency::ms;
use crate::locomo_load::{Conversation, note_text, turns_of};
use crate::stats::{Rng, TempDir, percentile};
use crate::{BenchResult, EmbedderKind};

const TOP_K: usize = 10;
const IMPORT_BATCH: usize = 5000;

/// One size's outcome.
struct Row {
    rows: usize,
    queries: usize,
    recall: f64,
    late_recall: f64,
    worst: f64,
    default_ms: (f64, f64),
    exact_ms: (f64, f64),
    /// The share of rows the first pass keeps at least, after the questions (1: no codes).
    reach: f64,
}

pub async fn run(file: &Path, sizes: &[usize], kind: EmbedderKind) -> BenchResult<()> {
    let (turns, questions) = turns_and_questions(file)?;
    eprintln!(
        "{} turns and {} questions read; building sessions of {sizes:?} texts",
        turns.len(),
        questions.len()
    );
    let embedder = kind.build()?;
    let mut out = Vec::new();
    for &n in sizes {
        let dir = TempDir::new(&format!("conversations{n}"))?;
        let store = MemoryStore::open(
            memory::Target::File(&dir.0.join("memory.db")),
            memory::OpenOptions::with_embedder(embedder.clone()),
        )
        .await?;
        let user = UserId::parse("talker")?;
        let started = Instant::now();
        load(&store, &user, &turns, n).await?;
        eprintln!("{n}: loaded in {:.1} s", started.elapsed().as_secs_f64());
        let sessions = [SessionId::user_memory(&user)];
        let (mut recalls, mut default_t, mut exact_t) = (Vec::new(), Vec::new(), Vec::new());
        for q in &questions {
            let mut v = embedder.embed(std::slice::from_ref(q)).await?.remove(0);
            memory::embedding::normalize(&mut v);
            let t = Instant::now();
            let exact = store.vector_leg_alone(&sessions, &v, TOP_K, VectorLeg::Exact);
            exact_t.push(ms(t));
            let t = Instant::now();
            let got = store.vector_leg_alone(&sessions, &v, TOP_K, VectorLeg::Auto);
            default_t.push(ms(t));
            // What a search does off its path now and then (`hybrid_query` runs it on the
            // blocking pool): measure the first pass's reach on this query.
            store.probe_vector_leg(&sessions, &v);
            if exact.is_empty() {
                continue;
            }
            let found = exact.iter().filter(|e| got.iter().any(|g| g.0 == e.0));
            recalls.push(found.count() as f64 / exact.len() as f64);
        }
        let recall = recalls.iter().sum::<f64>() / recalls.len().max(1) as f64;
        let late = &recalls[recalls.len() / 2..];
        let late_recall = late.iter().sum::<f64>() / late.len().max(1) as f64;
        let worst = recalls.iter().copied().fold(1.0, f64::min);
        let pair = |t: &mut Vec<f64>| (percentile(t, 50.0), percentile(t, 95.0));
        let reach = store
            .vector_reach(&sessions)
            .first()
            .map_or(1.0, |&(_, share)| share);
        out.push(Row {
            rows: n,
            queries: recalls.len(),
            recall,
            late_recall,
            worst,
            default_ms: pair(&mut default_t),
            exact_ms: pair(&mut exact_t),
            reach,
        });
        store.close().await;
    }
    println!(
        "\n| turn-like texts | queries | recall@10 vs exact (vector leg, default) | second half | worst query | default leg p50 / p95 ms | exact scan p50 / p95 ms | first pass keeps ≥ (share of rows) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in &out {
        println!(
            "| {} | {} | {:.4} | {:.4} | {:.1} | {:.3} / {:.3} | {:.3} / {:.3} | {:.4} |",
            r.rows,
            r.queries,
            r.recall,
            r.late_recall,
            r.worst,
            r.default_ms.0,
            r.default_ms.1,
            r.exact_ms.0,
            r.exact_ms.1,
            r.reach
        );
    }
    Ok(())
}

/// Reads LoCoMo's turns (as notes' texts) and questions from `file`.
pub fn turns_and_questions(file: &Path) -> BenchResult<(Vec<String>, Vec<String>)> {
    let raw =
        std::fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    let conversations: Vec<Conversation> = serde_json::from_str(&raw)?;
    let mut turns = Vec::new();
    let mut questions = Vec::new();
    for conv in &conversations {
        turns.extend(turns_of(conv)?.iter().map(note_text));
        questions.extend(conv.qa.iter().map(|q| q.question.clone()));
    }
    if turns.len() < 2 || questions.is_empty() {
        return Err("the LoCoMo file holds no turns or no questions".into());
    }
    Ok((turns, questions))
}

/// One turn-like text: the first part of one turn joined to the last part of another.
pub fn turn_like(turns: &[String], rng: &mut Rng) -> String {
    let a: Vec<&str> = turns[rng.below(turns.len())].split_whitespace().collect();
    let b: Vec<&str> = turns[rng.below(turns.len())].split_whitespace().collect();
    let cut_a = 1 + rng.below(a.len().max(1));
    let cut_b = rng.below(b.len().max(1));
    a[..cut_a.min(a.len())]
        .iter()
        .chain(&b[cut_b..])
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Imports `n` texts, each the first part of one turn and the last part of another.
async fn load(store: &MemoryStore, user: &UserId, turns: &[String], n: usize) -> BenchResult<()> {
    let mut rng = Rng::new(0xC0_4E55);
    let base = Utc::now() - Duration::days(30);
    let mut batch = Vec::with_capacity(IMPORT_BATCH);
    for i in 0..n {
        let text = turn_like(turns, &mut rng);
        let at = base + Duration::seconds(i64::try_from(i).unwrap_or(0));
        batch.push(ExportedNote {
            note_id: NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string())?,
            content: text,
            metadata: NoteMetadata::default(),
            created_at: at,
            updated_at: at,
        });
        if batch.len() == IMPORT_BATCH || i + 1 == n {
            let sent = batch.len();
            let added = store
                .import(
                    user,
                    None,
                    std::mem::take(&mut batch),
                    memory::Similar::Unchecked,
                    None,
                )
                .await
                .map(|report| report.imported)?;
            if added != sent {
                return Err(format!("imported {added} of {sent} texts").into());
            }
        }
    }
    Ok(())
}
