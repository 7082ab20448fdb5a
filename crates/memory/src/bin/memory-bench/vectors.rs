//! Writes the benches' vectors to files, for measuring other index structures on the same data.
//!
//! `memory-bench vectors <locomo.json> --rows N --out DIR` writes, as little-endian `f32` rows of
//! 384 (unit length, the store's embedder): `turns.f32` (N turn-like texts, as `conversations`
//! builds them) and `questions.f32` (LoCoMo's questions), `notes.f32` (N synthetic notes, as
//! `latency` builds them) and `queries.f32` (1,000 of its queries). Nothing of LoCoMo's text is
//! written. `scripts/bench/graph-reference.py` reads them (docs/benchmarks.md).
#![allow(clippy::print_stderr, reason = "bench progress")]

use std::io::Write;
use std::path::Path;

use crate::conversations::{turn_like, turns_and_questions};
use crate::corpus::Corpus;
use crate::stats::Rng;
use crate::{BenchResult, EmbedderKind};

const QUERIES: usize = 1000;
const BATCH: usize = 5000;

pub async fn run(file: &Path, rows: usize, out: &Path, kind: EmbedderKind) -> BenchResult<()> {
    let (turns, questions) = turns_and_questions(file)?;
    std::fs::create_dir_all(out)?;
    let embedder = kind.build()?;
    let write = |name: &str, texts: Vec<String>| {
        let embedder = embedder.clone();
        let path = out.join(name);
        async move {
            let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
            for batch in texts.chunks(BATCH) {
                for mut v in embedder.embed(batch).await? {
                    memory::embedding::normalize(&mut v);
                    for x in v {
                        file.write_all(&x.to_le_bytes())?;
                    }
                }
            }
            file.flush()?;
            eprintln!("{}: {} rows", path.display(), texts.len());
            BenchResult::Ok(())
        }
    };
    let mut rng = Rng::new(0xC0_4E55);
    write(
        "turns.f32",
        (0..rows).map(|_| turn_like(&turns, &mut rng)).collect(),
    )
    .await?;
    write("questions.f32", questions).await?;
    let corpus = Corpus::default();
    let mut rng = Rng::new(42);
    write(
        "notes.f32",
        (0..rows).map(|_| corpus.note(&mut rng)).collect(),
    )
    .await?;
    let mut rng = Rng::new(7);
    write(
        "queries.f32",
        (0..QUERIES).map(|_| corpus.query(&mut rng)).collect(),
    )
    .await?;
    Ok(())
}
