//! What a tiny memory returns for related and unrelated questions, under each fusion.
//!
//! Relative normalizations (min-max, max-norm, rank) always give some candidate a high score, and
//! min-max gives the worst candidate of each leg 0; this shows which notes come back, with which
//! scores, when the memory holds only a few notes and most are unrelated to the question.
#![allow(clippy::print_stdout, reason = "bench report")]

use memory::{Fusion, HybridQuery, MemoryStore, NoteMetadata, Weights};
use types::{SessionId, UserId};

use crate::stats::TempDir;
use crate::{BenchResult, EmbedderKind};

const NOTES: [&str; 5] = [
    "Alice's favourite tea is a smoky oolong.",
    "The car needs new winter tyres before November.",
    "Bob's birthday is on the 3rd of March; he likes board games.",
    "The wifi password is written on the back of the fridge calendar.",
    "Dentist appointment moved to Thursday at 9am.",
];

const QUERIES: [&str; 4] = [
    "what tea does Alice like",
    "when is Bob's birthday",
    "which programming language does the user prefer",
    "recommend a hotel in Lisbon",
];

pub async fn run(kind: EmbedderKind) -> BenchResult<()> {
    let dir = TempDir::new("probe")?;
    let store = MemoryStore::open(
        memory::Target::File(&dir.0.join("memory.db")),
        memory::OpenOptions::with_embedder(kind.build()?),
    )
    .await?;
    let user = UserId::parse("probe")?;
    for note in NOTES {
        store
            .save(
                &user,
                None,
                note,
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)?;
    }
    let session = SessionId::user_memory(&user);
    let fusions = [
        ("default", Fusion::default()),
        ("minmax", Fusion::MinMax),
        ("maxnorm", Fusion::MaxNorm),
        ("rrf60", Fusion::Rrf { k: 60.0 }),
    ];
    println!(
        "# Tiny-store probe ({} embedder, {} notes, top 5, weights {:?})\n",
        kind.as_str(),
        NOTES.len(),
        Weights::default()
    );
    for q in QUERIES {
        println!("## {q:?}\n");
        println!("| fusion | results (score: note start) |");
        println!("|---|---|");
        for (label, fusion) in fusions {
            let query = HybridQuery {
                fusion,
                ..HybridQuery::new(vec![session.clone()], q, 5)
            };
            let hits = store.search(&query).await?;
            let shown: Vec<String> = hits
                .iter()
                .map(|h| {
                    format!(
                        "{:.2}: {}",
                        h.score,
                        h.text.chars().take(18).collect::<String>()
                    )
                })
                .collect();
            println!("| {label} | {} |", shown.join("; "));
        }
        println!();
    }
    Ok(())
}
