//! LoCoMo retrieval quality (protocol: `bench/locomo/README.md` of the shared material).
//!
//! Each conversation is its own store; each turn is one note of one user's memory namespace, or
//! (`--load conversations`) one message of a conversation session per LoCoMo session, dated as
//! LoCoMo dates it (see `locomo_load`). Every question of categories 1–4 is asked in several modes
//! (keyword only, vector only, the store's default hybrid, the same with the question's time
//! expressions read relative to the last turn, and unless `--sweep off` a sweep of fusion ×
//! weights); NDCG@10 and Recall@10 are averaged over
//! questions, overall and per category. `--vector-leg` sets how the vector leg finds its
//! candidates (to compare the approximate leg with the exact scan), and the recall@10 of the
//! vector leg alone against the exact scan is reported.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "bench report")]

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Instant;

use chrono_tz::Tz;
use memory::{Fusion, HybridQuery, MemoryStore, QueryTime, VectorLeg, Weights};
use serde::Deserialize;
use types::UserId;

pub use crate::locomo_load::Load;
use crate::locomo_load::{Conversation, hit_key, load_turns, turns_of};

use crate::stats::{TempDir, mean, ndcg_at, recall_at};
use crate::{BenchResult, EmbedderKind};

const TOP_K: usize = 10;
const CATEGORIES: [u8; 4] = [1, 2, 3, 4];
const CATEGORY_NAMES: [&str; 4] = ["multi-hop", "temporal", "open-domain", "single-hop"];
/// Fused-score floors tried on the default hybrid: results at or below are dropped.
const FLOORS: [f64; 8] = [0.0, 0.3, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75];

#[derive(Debug, Deserialize)]
pub(crate) struct Qa {
    pub(crate) question: String,
    #[serde(default)]
    evidence: Vec<serde_json::Value>,
    category: serde_json::Value,
}

/// A question kept by the protocol.
#[derive(Debug)]
struct Question {
    text: String,
    category: u8,
    evidence: HashSet<String>,
}

/// One retrieval setting.
#[derive(Debug, Clone)]
struct Mode {
    name: String,
    weights: Weights,
    fusion: Fusion,
    /// Time expressions in the question read relative to the conversation's last turn.
    time: bool,
}

/// What a run reports besides the store default.
#[derive(Debug, Default)]
pub struct Options {
    /// The sweep of fusion × weights.
    pub sweep: bool,
    /// Per-question NDCG@10 of every mode written here (JSON).
    pub save: Option<std::path::PathBuf>,
    /// A file written by `save` by an earlier run: each mode's paired Δ to its store default.
    pub baseline: Option<std::path::PathBuf>,
}

fn modes(sweep: bool) -> Vec<Mode> {
    let mut modes = vec![
        Mode {
            name: "keyword only".into(),
            weights: Weights {
                vector: 0.0,
                fts: 1.0,
            },
            fusion: Fusion::MinMax,
            time: false,
        },
        Mode {
            name: "vector only".into(),
            weights: Weights {
                vector: 1.0,
                fts: 0.0,
            },
            fusion: Fusion::MinMax,
            time: false,
        },
        Mode {
            name: "hybrid (store default)".into(),
            weights: Weights::default(),
            fusion: Fusion::default(),
            time: false,
        },
        Mode {
            name: "hybrid, time-aware".into(),
            weights: Weights::default(),
            fusion: Fusion::default(),
            time: true,
        },
    ];
    if !sweep {
        return modes;
    }
    for (label, fusion) in [
        ("default fusion", Fusion::default()),
        ("minmax", Fusion::MinMax),
        ("maxnorm", Fusion::MaxNorm),
        ("rrf60", Fusion::Rrf { k: 60.0 }),
    ] {
        for vector in [0.3, 0.4, 0.5, 0.6, 0.7, 0.8] {
            modes.push(Mode {
                name: format!("{label} v{vector:.1}/f{:.1}", 1.0 - vector),
                weights: Weights {
                    vector,
                    fts: 1.0 - vector,
                },
                fusion,
                time: false,
            });
        }
    }
    modes
}

/// Per-question outcome of one mode.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    category: u8,
    ndcg: f64,
    recall: f64,
}

#[derive(Debug, Default)]
struct Tally {
    outcomes: Vec<Outcome>,
    /// Results returned with a fused score of exactly 0, and all results returned.
    zero_hits: usize,
    hits: usize,
    zero_relevant: usize,
}

#[derive(Debug, Default)]
struct FloorTally {
    outcomes: Vec<Outcome>,
    kept: usize,
    dropped: usize,
    dropped_relevant: usize,
}

pub async fn run(
    file: &Path,
    kind: EmbedderKind,
    load: Load,
    leg: VectorLeg,
    options: &Options,
) -> BenchResult<()> {
    let raw =
        std::fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    let conversations: Vec<Conversation> = serde_json::from_str(&raw)?;
    let embedder = kind.build()?;
    let modes = modes(options.sweep);
    let mut tallies: Vec<Tally> = modes.iter().map(|_| Tally::default()).collect();
    let mut floors: Vec<FloorTally> = FLOORS.iter().map(|_| FloorTally::default()).collect();
    let (mut turns_total, mut load_secs, mut query_secs, mut queries) =
        (0usize, 0.0f64, 0.0f64, 0usize);
    let (mut dropped_ids, mut skipped_questions) = (0usize, 0usize);
    // The vector leg alone, top 10 chunks: exact hits the chosen leg also finds.
    let (mut recalled, mut relevant) = (0usize, 0usize);
    let user = UserId::parse("locomo")?;

    for (index, conv) in conversations.iter().enumerate() {
        let turns = turns_of(conv)?;
        let known: HashSet<&str> = turns.iter().map(|t| t.dia_id.as_str()).collect();
        let questions = questions_of(conv, &known, &mut dropped_ids, &mut skipped_questions);
        let dir = TempDir::new(&format!("locomo{index}"))?;
        let store = MemoryStore::open(
            memory::Target::File(&dir.0.join("memory.db")),
            memory::OpenOptions::with_embedder(embedder.clone()),
        )
        .await?;
        store.set_vector_leg(leg);
        let started = Instant::now();
        let data = load_turns(&store, &user, &turns, load).await?;
        let sessions = &data.sessions;
        for q in &questions {
            let mut v = embedder
                .embed(std::slice::from_ref(&q.text))
                .await?
                .remove(0);
            memory::embedding::normalize(&mut v);
            let exact = store.vector_leg_alone(sessions, &v, TOP_K, VectorLeg::Exact);
            let got = store.vector_leg_alone(sessions, &v, TOP_K, leg);
            relevant += exact.len();
            recalled += exact
                .iter()
                .filter(|e| got.iter().any(|g| g.0 == e.0))
                .count();
        }
        let loaded = started.elapsed().as_secs_f64();
        load_secs += loaded;
        turns_total += turns.len();
        eprintln!(
            "conversation {index}: {} turns loaded in {loaded:.2} s ({:.0} turns/s), {} questions",
            turns.len(),
            turns.len() as f64 / loaded.max(1e-9),
            questions.len()
        );

        let started = Instant::now();
        for (mode, tally) in modes.iter().zip(tallies.iter_mut()) {
            for q in &questions {
                let query = HybridQuery {
                    weights: mode.weights,
                    fusion: mode.fusion,
                    time: mode.time.then_some(QueryTime {
                        now: data.now,
                        tz: Tz::UTC,
                    }),
                    ..HybridQuery::new(sessions.clone(), q.text.clone(), TOP_K)
                };
                let hits = store.search(&query).await?;
                queries += 1;
                let ranked: Vec<(bool, f64)> = hits
                    .iter()
                    .map(|h| {
                        let dia = data.dia_of.get(&hit_key(h));
                        (dia.is_some_and(|d| q.evidence.contains(d)), h.score)
                    })
                    .collect();
                let rel: Vec<bool> = ranked.iter().map(|(r, _)| *r).collect();
                tally.outcomes.push(score(q, &rel));
                tally.hits += ranked.len();
                tally.zero_hits += ranked.iter().filter(|(_, s)| *s <= 0.0).count();
                tally.zero_relevant += ranked.iter().filter(|(r, s)| *r && *s <= 0.0).count();
                if mode.name == "hybrid (store default)" {
                    for (floor, ft) in FLOORS.iter().zip(floors.iter_mut()) {
                        let kept: Vec<bool> = ranked
                            .iter()
                            .filter(|(_, s)| *s > *floor)
                            .map(|(r, _)| *r)
                            .collect();
                        ft.kept += kept.len();
                        ft.dropped += ranked.len() - kept.len();
                        ft.dropped_relevant += rel.iter().filter(|r| **r).count()
                            - kept.iter().filter(|r| **r).count();
                        ft.outcomes.push(score(q, &kept));
                    }
                }
            }
        }
        query_secs += started.elapsed().as_secs_f64();
    }

    let questions = tallies.first().map_or(0, |t| t.outcomes.len());
    println!(
        "# LoCoMo retrieval ({} embedder, top {TOP_K})\n",
        kind.as_str()
    );
    println!(
        "{} conversations, {turns_total} turns, {questions} questions (categories 1-4; {skipped_questions} \
         skipped for lack of evidence, {dropped_ids} evidence ids matching no turn dropped)",
        conversations.len()
    );
    println!(
        "load as {}: {load_secs:.2} s ({:.0} turns/s); {queries} queries in {query_secs:.2} s ({:.2} ms each)\n",
        load.describe(),
        turns_total as f64 / load_secs.max(1e-9),
        query_secs * 1000.0 / queries.max(1) as f64
    );
    println!(
        "vector leg {leg:?}: recall@10 of the vector leg alone vs the exact scan {:.4} ({relevant} exact hits)\n",
        recalled as f64 / relevant.max(1) as f64
    );
    let mut counts = BTreeMap::new();
    for o in tallies.first().map_or(&[][..], |t| &t.outcomes[..]) {
        *counts.entry(o.category).or_insert(0usize) += 1;
    }
    let head: Vec<String> = CATEGORIES
        .iter()
        .zip(CATEGORY_NAMES)
        .map(|(c, n)| format!("{c} {n} (n={})", counts.get(c).copied().unwrap_or(0)))
        .collect();
    println!(
        "store default: {:?}, {:?}\n",
        Fusion::default(),
        Weights::default()
    );
    println!("NDCG@10 / Recall@10\n");
    println!(
        "| mode | all (n={questions}) | NDCG Δ vs store default ± s.e. | {} | zero-score hits |",
        head.join(" | ")
    );
    println!("|---|---|---|{}---|", "---|".repeat(CATEGORIES.len()));
    let baseline = tallies.get(2).map_or(&[][..], |t| &t.outcomes[..]);
    for (mode, tally) in modes.iter().zip(&tallies) {
        println!(
            "| {} | {} | {} | {} | {}/{} ({} relevant) |",
            mode.name,
            cell(&tally.outcomes, None),
            paired_delta(&tally.outcomes, baseline),
            CATEGORIES
                .map(|c| cell(&tally.outcomes, Some(c)))
                .join(" | "),
            tally.zero_hits,
            tally.hits,
            tally.zero_relevant
        );
    }
    println!("\nDefault hybrid with results at or below a fused-score floor dropped:\n");
    println!(
        "| floor | NDCG@10 / R@10 | results kept per question | dropped | dropped that were relevant |"
    );
    println!("|---|---|---|---|---|");
    for (floor, ft) in FLOORS.iter().zip(&floors) {
        println!(
            "| > {floor:.2} | {} | {:.2} | {} | {} |",
            cell(&ft.outcomes, None),
            ft.kept as f64 / ft.outcomes.len().max(1) as f64,
            ft.dropped,
            ft.dropped_relevant
        );
    }
    let per_mode: Vec<(String, Vec<(u8, f64)>)> = modes
        .iter()
        .zip(&tallies)
        .map(|(m, t)| {
            let o = t.outcomes.iter().map(|o| (o.category, o.ndcg)).collect();
            (m.name.clone(), o)
        })
        .collect();
    crate::locomo_compare::save_and_compare(&per_mode, options)
}

fn score(q: &Question, ranked: &[bool]) -> Outcome {
    Outcome {
        category: q.category,
        ndcg: ndcg_at(ranked, q.evidence.len(), TOP_K),
        recall: recall_at(ranked, q.evidence.len(), TOP_K),
    }
}

/// Mean per-question NDCG difference to `baseline` (same questions, same order) ± its standard error.
fn paired_delta(outcomes: &[Outcome], baseline: &[Outcome]) -> String {
    let pairs = |o: &[Outcome]| o.iter().map(|o| (o.category, o.ndcg)).collect::<Vec<_>>();
    crate::locomo_compare::delta(&pairs(outcomes), &pairs(baseline), None)
}

/// "ndcg / recall" over the outcomes of `category` (all when `None`).
fn cell(outcomes: &[Outcome], category: Option<u8>) -> String {
    let picked: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| category.is_none_or(|c| o.category == c))
        .collect();
    let ndcg: Vec<f64> = picked.iter().map(|o| o.ndcg).collect();
    let recall: Vec<f64> = picked.iter().map(|o| o.recall).collect();
    format!("{:.3} / {:.3}", mean(&ndcg), mean(&recall))
}

fn questions_of(
    conv: &Conversation,
    known: &HashSet<&str>,
    dropped_ids: &mut usize,
    skipped: &mut usize,
) -> Vec<Question> {
    let mut out = Vec::new();
    for qa in &conv.qa {
        let category = qa
            .category
            .as_u64()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(0);
        if !CATEGORIES.contains(&category) {
            continue;
        }
        let mut evidence = HashSet::new();
        for id in qa
            .evidence
            .iter()
            .filter_map(|e| e.as_str())
            .flat_map(|e| e.split(|c: char| c == ';' || c == ',' || c.is_whitespace()))
            .filter(|id| !id.is_empty())
        {
            if known.contains(id) {
                evidence.insert(id.to_owned());
            } else {
                *dropped_ids += 1;
            }
        }
        if evidence.is_empty() {
            *skipped += 1;
            continue;
        }
        out.push(Question {
            text: qa.question.clone(),
            category,
            evidence,
        });
    }
    out
}
