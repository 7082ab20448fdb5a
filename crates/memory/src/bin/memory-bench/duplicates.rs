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

/// Pairs that say the same thing.
const SAME: &[(&str, &str)] = &[
    ("The user's cat is called Mia", "User has a cat named Mia"),
    (
        "Alice drinks green tea every morning",
        "Every morning Alice has a cup of green tea",
    ),
    (
        "The user prefers dark mode in all editors",
        "User likes dark mode in every editor",
    ),
    (
        "User is allergic to peanuts",
        "The user has a peanut allergy",
    ),
    (
        "The user's birthday is on 3 May",
        "User was born on May 3rd",
    ),
    (
        "The user works as a nurse at the city hospital",
        "User is a nurse at the city hospital",
    ),
    (
        "User lives in Lisbon, Portugal",
        "The user's home is in Lisbon, Portugal",
    ),
    (
        "The user wants replies in British English",
        "Reply to the user in British English",
    ),
    (
        "User's favourite programming language is Rust",
        "The user likes Rust best among programming languages",
    ),
    (
        "The user's daughter is named Sofia",
        "User has a daughter called Sofia",
    ),
    (
        "User runs 5 km every Saturday morning",
        "Every Saturday morning the user goes for a 5 km run",
    ),
    (
        "The user's manager is Priya Nair",
        "Priya Nair is the user's manager",
    ),
    (
        "User prefers aisle seats on flights",
        "On flights the user likes an aisle seat",
    ),
    (
        "The project deadline is 14 March",
        "Project is due on 14 March",
    ),
    (
        "The user speaks Portuguese and Spanish",
        "User speaks Spanish and Portuguese",
    ),
    (
        "The staging server runs on port 8443",
        "Staging server uses port 8443",
    ),
    ("The user is vegetarian", "User follows a vegetarian diet"),
    (
        "User's car is a blue Toyota Corolla",
        "The user drives a blue Toyota Corolla",
    ),
    (
        "The user takes the 7:40 train to work",
        "User commutes on the 7:40 train",
    ),
    (
        "The user does not like meetings before 10am",
        "User dislikes meetings earlier than 10am",
    ),
    (
        "The user's dentist is Dr. Rui Costa",
        "Dr. Rui Costa is the user's dentist",
    ),
    (
        "User plays the cello in an amateur orchestra",
        "The user is a cellist in an amateur orchestra",
    ),
    (
        "The user's wifi network is called Casa5G",
        "User's home wifi is named Casa5G",
    ),
    (
        "The user wants code examples in Python",
        "Give the user code examples in Python",
    ),
    ("User is learning Japanese", "The user is studying Japanese"),
    (
        "The user's partner is called Tomás",
        "User's partner's name is Tomás",
    ),
    ("The user has two kids", "User has two children"),
    (
        "The user uses Neovim as their editor",
        "User's editor is Neovim",
    ),
    (
        "Backups run every night at 2am",
        "Nightly backups run at 2am",
    ),
    (
        "User prefers metric units",
        "The user wants measurements in metric units",
    ),
];

/// Pairs about the same topic that say different things.
const DIFFERENT: &[(&str, &str)] = &[
    (
        "The user's cat is called Mia",
        "The user's dog is called Mia",
    ),
    (
        "Alice drinks green tea every morning",
        "Alice drinks coffee every morning",
    ),
    (
        "The user prefers dark mode in all editors",
        "The user prefers light mode in all editors",
    ),
    (
        "User is allergic to peanuts",
        "User is allergic to penicillin",
    ),
    (
        "The user's birthday is on 3 May",
        "The user's wedding anniversary is on 3 May",
    ),
    (
        "The user works as a nurse at the city hospital",
        "The user's sister works as a nurse at the city hospital",
    ),
    (
        "User lives in Lisbon, Portugal",
        "User used to live in Porto, Portugal",
    ),
    (
        "The user wants replies in British English",
        "The user wants replies in Portuguese",
    ),
    (
        "User's favourite programming language is Rust",
        "User's least favourite programming language is Rust",
    ),
    (
        "The user's daughter is named Sofia",
        "The user's niece is named Sofia",
    ),
    (
        "User runs 5 km every Saturday morning",
        "User swims 2 km every Sunday evening",
    ),
    (
        "The user's manager is Priya Nair",
        "The user's manager is Daniel Okafor",
    ),
    (
        "User prefers aisle seats on flights",
        "User prefers window seats on trains",
    ),
    (
        "The project deadline is 14 March",
        "The project kickoff is 2 February",
    ),
    (
        "The user speaks Portuguese and Spanish",
        "The user is learning German",
    ),
    (
        "The staging server runs on port 8443",
        "The production server runs on port 443",
    ),
    ("The user is vegetarian", "The user's son is vegan"),
    (
        "User's car is a blue Toyota Corolla",
        "User's bike is a red Trek",
    ),
    (
        "The user takes the 7:40 train to work",
        "The user takes the bus home at 18:10",
    ),
    (
        "The user does not like meetings before 10am",
        "The user has a standing meeting at 10am on Mondays",
    ),
    (
        "The user's dentist is Dr. Rui Costa",
        "The user's doctor is Dr. Ana Lima",
    ),
    (
        "User plays the cello in an amateur orchestra",
        "User's son plays the violin at school",
    ),
    (
        "The user's wifi network is called Casa5G",
        "The user's office wifi password is stored in the vault",
    ),
    (
        "The user wants code examples in Python",
        "The user writes production code in Go",
    ),
    ("User is learning Japanese", "User is teaching English"),
    (
        "The user's partner is called Tomás",
        "The user's brother is called Tomás",
    ),
    ("The user has two kids", "The user has two cats"),
    (
        "The user uses Neovim as their editor",
        "The user uses VS Code at work",
    ),
    (
        "Backups run every night at 2am",
        "Log rotation runs every Sunday at 3am",
    ),
    ("User prefers metric units", "User prefers 24-hour time"),
];

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
    let same = pair_scores(embedder.as_ref(), SAME).await?;
    let different = pair_scores(embedder.as_ref(), DIFFERENT).await?;
    println!(
        "\nthreshold on {} same-fact and {} different-fact pairs ({})\n",
        same.len(),
        different.len(),
        kind.as_str()
    );
    println!(
        "| threshold | recall (same caught) | precision | different flagged |\n|---|---|---|---|"
    );
    for step in 0..=14 {
        let t = 0.70 + 0.02 * f32::from(u8::try_from(step).unwrap_or(0));
        let caught = same.iter().filter(|s| **s >= t).count();
        let wrong = different.iter().filter(|s| **s >= t).count();
        let precision = match caught + wrong {
            0 => 1.0,
            all => caught as f64 / all as f64,
        };
        println!(
            "| {t:.2} | {:.2} | {precision:.2} | {wrong} |",
            caught as f64 / same.len() as f64
        );
    }
    let max_different = different.iter().copied().fold(f32::MIN, f32::max);
    let min_same = same.iter().copied().fold(f32::MAX, f32::min);
    println!(
        "\nhighest different-fact cosine {max_different:.3}, lowest same-fact cosine {min_same:.3}"
    );

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
