//! Filtered search and paged listing on a store of synthetic notes carrying categories and tags.
//!
//! Loads `n` notes (category cycling through the four, one of eight tags each), then times the
//! same queries unfiltered, filtered by category (a quarter of the notes) and by tag (an eighth),
//! and listing pages of 50 (the first page, by category, and pages deep in the store via cursors).
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "bench report")]

use std::time::Instant;

use chrono::{Duration, Utc};
use memory::{
    Category, ExportedNote, HybridQuery, ListQuery, MemoryStore, NoteMetadata, QueryFilters,
};
use types::{NoteId, SessionId, UserId};

use crate::corpus::Corpus;
use crate::stats::{Rng, TempDir, percentile};
use crate::{BenchResult, EmbedderKind};

const LOAD_BATCH: usize = 5000;
const TAGS: [&str; 8] = [
    "work", "home", "travel", "health", "food", "family", "money", "hobby",
];

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn row(label: &str, v: &[f64]) {
    println!(
        "| {label} | {:.2} | {:.2} | {:.2} |",
        percentile(v, 50.0),
        percentile(v, 95.0),
        percentile(v, 99.0)
    );
}

pub async fn run(n: usize, kind: EmbedderKind, queries: usize) -> BenchResult<()> {
    let embedder = kind.build()?;
    embedder.embed(&["load the model".to_owned()]).await?;
    let dir = TempDir::new(&format!("organised{n}"))?;
    let store = MemoryStore::open(
        memory::Target::File(&dir.0.join("memory.db")),
        memory::OpenOptions::with_embedder(embedder),
    )
    .await?;
    let user = UserId::parse("bench")?;
    let session = SessionId::user_memory(&user);
    let corpus = Corpus::default();
    let mut rng = Rng::new(42);
    let base = Utc::now() - Duration::days(365);
    let started = Instant::now();
    let mut done = 0;
    while done < n {
        let batch = LOAD_BATCH.min(n - done);
        let mut notes = Vec::with_capacity(batch);
        for i in done..done + batch {
            let at = base + Duration::seconds(i64::try_from(i).unwrap_or(0) * 60);
            notes.push(ExportedNote {
                note_id: NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string())?,
                content: corpus.note(&mut rng),
                metadata: NoteMetadata {
                    category: Some(Category::ALL[i % 4]),
                    tags: vec![TAGS[i % 8].to_owned()],
                    ..NoteMetadata::default()
                },
                created_at: at,
                updated_at: at,
            });
        }
        store
            .import(&user, None, notes, memory::Similar::Unchecked, None)
            .await
            .map(|report| report.imported)?;
        done += batch;
        eprintln!(
            "  loaded {done} notes in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }

    let mut qrng = Rng::new(7);
    let texts: Vec<String> = (0..queries + 50).map(|_| corpus.query(&mut qrng)).collect();
    let variants = [
        ("unfiltered", QueryFilters::default()),
        (
            "category = preference (1/4)",
            QueryFilters {
                category: Some(Category::Preference),
                ..QueryFilters::default()
            },
        ),
        (
            "tag travel (1/8)",
            QueryFilters {
                tags_any: vec!["travel".into()],
                ..QueryFilters::default()
            },
        ),
    ];
    println!("\n{n} notes, top 5, {queries} queries (ms)\n");
    println!("| search | p50 | p95 | p99 |\n|---|---|---|---|");
    for (label, filters) in &variants {
        let mut times = Vec::with_capacity(queries);
        for (i, text) in texts.iter().enumerate() {
            let q = HybridQuery {
                filters: filters.clone(),
                ..HybridQuery::new(vec![session.clone()], text.clone(), 5)
            };
            let t = Instant::now();
            store.search(&q).await?;
            if i >= 50 {
                times.push(ms(t));
            }
        }
        row(label, &times);
    }

    println!("\n| list a page of 50 | p50 | p95 | p99 |\n|---|---|---|---|");
    let pages = queries.max(50);
    for (label, category) in [
        ("newest first", None),
        ("by category", Some(Category::Fact)),
    ] {
        let mut first = Vec::new();
        let mut deep = Vec::new();
        let mut query = ListQuery {
            category,
            limit: 50,
            ..ListQuery::default()
        };
        for _ in 0..pages {
            let t = Instant::now();
            let page = store.list(&user, &query).await?;
            let took = ms(t);
            if query.cursor.is_none() {
                first.push(took);
            } else {
                deep.push(took);
            }
            // Every tenth page starts again from the top; the others follow the cursor.
            query.cursor = if (first.len() + deep.len()) % 10 == 0 {
                None
            } else {
                page.next_cursor
            };
        }
        row(&format!("{label}, first page (with total)"), &first);
        row(&format!("{label}, following pages"), &deep);
    }
    Ok(())
}
