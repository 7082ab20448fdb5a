//! The vector leg alone over what `scope = "all"` searches (issue 38): the store's default leg
//! against the exact scan on every query — recall@10 of the default against the exact, and each
//! one's time — plus the share of rows each coded matrix's first pass keeps (the pool of small
//! sessions among them).
#![allow(clippy::print_stdout, reason = "bench report")]

use std::time::Instant;

use memory::{MemoryStore, VectorLeg};
use types::SessionId;

use crate::BenchResult;
use crate::latency::ms;
use crate::stats::percentile;

const TOP_K: usize = 10;

pub async fn vector_leg(
    store: &MemoryStore,
    sessions: &[SessionId],
    queries: &[Vec<f32>],
) -> BenchResult<()> {
    let (mut recalls, mut default_t, mut exact_t) = (Vec::new(), Vec::new(), Vec::new());
    for v in queries {
        let t = Instant::now();
        let exact = store.vector_leg_alone(sessions, v, TOP_K, VectorLeg::Exact);
        exact_t.push(ms(t));
        let t = Instant::now();
        let got = store.vector_leg_alone(sessions, v, TOP_K, VectorLeg::Auto);
        default_t.push(ms(t));
        if exact.is_empty() {
            continue;
        }
        let found = exact.iter().filter(|e| got.iter().any(|g| g.0 == e.0));
        recalls.push(found.count() as f64 / exact.len() as f64);
    }
    let recall = recalls.iter().sum::<f64>() / recalls.len().max(1) as f64;
    let worst = recalls.iter().copied().fold(1.0, f64::min);
    let p = |t: &[f64], q: f64| percentile(t, q);
    println!(
        "\n| vector leg alone, {} queries | recall@10 vs exact | worst query | default p50 / p95 ms | exact p50 / p95 ms | coded matrices searched (rows, share kept) |",
        recalls.len()
    );
    println!("|---|---|---|---|---|---|");
    let reach: Vec<String> = store
        .vector_reach(sessions)
        .iter()
        .map(|(rows, share)| format!("{rows}: {share:.4}"))
        .collect();
    println!(
        "| scope all | {recall:.4} | {worst:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {} |",
        p(&default_t, 50.0),
        p(&default_t, 95.0),
        p(&exact_t, 50.0),
        p(&exact_t, 95.0),
        reach.join(", ")
    );
    Ok(())
}

/// What a search of the notes and the current conversation (`memory_search`'s default with
/// `include_conversation`) costs in a store holding many other conversations, the conversation
/// being `sessions`' last one (a pooled session among hundreds); then the same of every session
/// (scope "all"), each leg alone and both: see [`each_leg`].
pub async fn current_conversation(
    store: &MemoryStore,
    sessions: &[SessionId],
    user_memory: SessionId,
    queries: &[&String],
) -> BenchResult<()> {
    let Some(current) = sessions.iter().rev().find(|s| **s != user_memory) else {
        return Ok(());
    };
    let scope = vec![user_memory.clone(), current.clone()];
    let title = format!("notes + the current conversation ({current})");
    each_leg(store, &title, &scope, queries).await?;
    each_leg(store, "scope all", sessions, queries).await
}

/// `search` p50 / p95 over `queries` in `scope`, each as a keyword-only, a vector-only and a
/// hybrid search, then the hybrid reading the query's time as `memory_search` does — each way
/// over every query before the next (the table above interleaves its ways); then the time-aware
/// searches by what the query's words name ([`Kind`]), where the tail is.
async fn each_leg(
    store: &MemoryStore,
    title: &str,
    scope: &[SessionId],
    queries: &[&String],
) -> BenchResult<()> {
    println!(
        "\n| {title}, {} queries | search p50 / p95 ms |",
        queries.len()
    );
    println!("|---|---|");
    let mut kinds = Vec::with_capacity(queries.len());
    let mut times = Vec::with_capacity(queries.len());
    for (name, vector, fts, timed) in [
        ("keyword only", 0.0, 1.0, false),
        ("vector only", 1.0, 0.0, false),
        ("hybrid", 0.8, 0.2, false),
        ("hybrid, time-aware (as `memory_search`)", 0.8, 0.2, true),
    ] {
        times.clear();
        for q in queries {
            let mut query = memory::HybridQuery::new(scope.to_vec(), q.as_str(), TOP_K);
            query.weights = memory::Weights { vector, fts };
            if timed {
                query.time = Some(memory::QueryTime::now_in(chrono_tz::Tz::UTC));
            }
            let t = Instant::now();
            store.search(&query).await?;
            times.push(ms(t));
            if timed {
                kinds.push(Kind::of(store.read_time(&query).await?));
            }
        }
        println!(
            "| {name} | {:.3} / {:.3} |",
            percentile(&times, 50.0),
            percentile(&times, 95.0)
        );
    }
    println!(
        "\n| time-aware, by what the query names | queries | search p50 / p95 ms | share of the slowest 5 % |"
    );
    println!("|---|---|---|---|");
    let slow = percentile(&times, 95.0);
    let slowest = times.iter().filter(|t| **t >= slow).count().max(1);
    for kind in [Kind::Plain, Kind::Time, Kind::Event] {
        let mine: Vec<f64> = times
            .iter()
            .zip(&kinds)
            .filter(|(_, k)| **k == kind)
            .map(|(t, _)| *t)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let tail = mine.iter().filter(|t| **t >= slow).count();
        println!(
            "| {} | {} | {:.3} / {:.3} | {:.0} % |",
            kind.name(),
            mine.len(),
            percentile(&mine, 50.0),
            percentile(&mine, 95.0),
            100.0 * tail as f64 / slowest as f64
        );
    }
    Ok(())
}

/// What a query's words name, as the time-aware search reads them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No time: one pass of each leg.
    Plain,
    /// A date or span ("last week", "in May"): the whole and the span in one walk.
    Time,
    /// An event as anchor ("before the trip"): a keyword lookup dates it first.
    Event,
}

impl Kind {
    fn of(range: Option<memory::TimeRange>) -> Self {
        match range {
            None => Self::Plain,
            Some(r) if r.event.is_some() => Self::Event,
            Some(_) => Self::Time,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Plain => "no time",
            Self::Time => "a date or span",
            Self::Event => "an event as anchor",
        }
    }
}
