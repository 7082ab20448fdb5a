//! The near-duplicate threshold and the cost of the duplicate check.
//!
//! 1. Threshold: a hand-written corpus of labelled note pairs (below). `same` pairs say the same
//!    fact in other words (what a model saves twice); `different` pairs are about the same
//!    topic but say something else (what must NOT be merged: another date, another person, a
//!    changed preference). For each threshold the cosine of every pair's vectors classifies it;
//!    the report gives precision and recall of "near-duplicate" per threshold. We pick the lowest
//!    threshold with no `different` pair above it (precision 1.0), favouring never blocking a new
//!    fact over catching every paraphrase: a missed paraphrase costs one extra note, a false
//!    match makes the model update a note it should not.
//! 2. Latency: `check_duplicate` on a store of `n` synthetic notes, for new texts and exact
//!    duplicates, p50/p95/p99.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "bench report")]

use std::time::Instant;

use chrono::{Duration, Utc};
use memory::{DuplicateCheck, ExportedNote, MemoryStore, NoteMetadata};
use types::{NoteId, UserId};

use crate::corpus::Corpus;
use crate::stats::{Rng, TempDir, percentile};
use crate::{BenchResult, EmbedderKind};

/// The labelled pairs (`crates/memory-index/data/fact_pairs.tsv`): restatement?, first, second.
fn labelled_pairs() -> Vec<(bool, &'static str, &'static str)> {
    include_str!("../../../../memory-index/data/fact_pairs.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 4).then(|| (f[0] == "same", f[2], f[3]))
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b)).max(f32::EPSILON)
}

async fn pair_scores(
    embedder: &dyn memory::Embedder,
    pairs: &[(&str, &str)],
) -> BenchResult<Vec<f32>> {
    let texts: Vec<String> = pairs
        .iter()
        .flat_map(|(a, b)| [(*a).to_owned(), (*b).to_owned()])
        .collect();
    let vectors = embedder.embed(&texts).await?;
    Ok(vectors
        .chunks_exact(2)
        .map(|v| cosine(&v[0], &v[1]))
        .collect())
}

pub async fn run(n: usize, kind: EmbedderKind, checks: usize) -> BenchResult<()> {
    let embedder = kind.build()?;
    let pairs = labelled_pairs();
    let texts: Vec<(&str, &str)> = pairs.iter().map(|(_, a, b)| (*a, *b)).collect();
    let scores = pair_scores(embedder.as_ref(), &texts).await?;
    let restates: Vec<bool> = texts
        .iter()
        .map(|(a, b)| memory_index::restates(a, b))
        .collect();
    let same = pairs.iter().filter(|p| p.0).count();
    let different = pairs.len() - same;
    println!(
        "\nthreshold on {same} restatement and {different} different-fact pairs ({})\n",
        kind.as_str()
    );
    println!(
        "| threshold | cosine alone: restatements caught / different facts refused | cosine + fact check: caught / refused |\n|---|---|---|"
    );
    for step in 0..=15 {
        let t = 0.80 + 0.01 * f32::from(u8::try_from(step).unwrap_or(0));
        let count = |label: bool, checked: bool| {
            pairs
                .iter()
                .zip(&scores)
                .zip(&restates)
                .filter(|(((l, _, _), s), r)| *l == label && **s >= t && (!checked || **r))
                .count()
        };
        let share = |k: usize, of: usize| 100.0 * k as f64 / of.max(1) as f64;
        println!(
            "| {t:.2} | {:.1} % / {:.1} % | {:.1} % / {:.1} % |",
            share(count(true, false), same),
            share(count(false, false), different),
            share(count(true, true), same),
            share(count(false, true), different),
        );
    }

    // Latency of the check at n notes.
    embedder.embed(&["load the model".to_owned()]).await?;
    let dir = TempDir::new(&format!("duplicates{n}"))?;
    let store = MemoryStore::open(
        memory::Target::File(&dir.0.join("memory.db")),
        memory::OpenOptions::with_embedder(embedder),
    )
    .await?;
    let user = UserId::parse("bench")?;
    let corpus = Corpus::default();
    let mut rng = Rng::new(42);
    let at = Utc::now() - Duration::days(30);
    let mut stored = Vec::with_capacity(n);
    let mut done = 0;
    while done < n {
        let batch = 5000.min(n - done);
        let mut notes = Vec::with_capacity(batch);
        for _ in 0..batch {
            let content = corpus.note(&mut rng);
            stored.push(content.clone());
            notes.push(ExportedNote {
                note_id: NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string())?,
                content,
                metadata: NoteMetadata::default(),
                created_at: at,
                updated_at: at,
            });
        }
        store
            .import(&user, None, notes, memory::Similar::Unchecked, None)
            .await
            .map(|report| report.imported)?;
        done += batch;
    }
    let mut qrng = Rng::new(7);
    let mut fresh = Vec::with_capacity(checks);
    let mut exact = Vec::with_capacity(checks);
    for i in 0..checks + 50 {
        let (text, is_copy) = match i % 2 {
            0 => (corpus.note(&mut qrng), false),
            _ => (stored[qrng.below(stored.len())].to_uppercase(), true),
        };
        let t = Instant::now();
        let found = store.check_duplicate(&user, &text).await?;
        let took = t.elapsed().as_secs_f64() * 1000.0;
        if is_copy && !matches!(found, DuplicateCheck::Duplicate { .. }) {
            return Err(format!("an exact copy was not found: {text}").into());
        }
        if i >= 50 {
            match is_copy {
                true => exact.push(took),
                false => fresh.push(took),
            }
        }
    }
    println!("\nduplicate check at {n} notes (ms)\n");
    println!("| text | p50 | p95 | p99 |\n|---|---|---|---|");
    for (label, v) in [
        ("new (hash miss, then cosine)", &fresh),
        ("exact copy (hash hit)", &exact),
    ] {
        println!(
            "| {label} | {:.3} | {:.3} | {:.3} |",
            percentile(v, 50.0),
            percentile(v, 95.0),
            percentile(v, 99.0)
        );
    }
    Ok(())
}
