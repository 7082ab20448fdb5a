//! Names in stored text: one used to address someone ("Thanks, Caroline!") is no mention of
//! them, for the keyword leg and for the name lift.

use std::collections::BTreeSet;

use crate::common::{fixture, save_note, user};
use crate::search::{memory_of, texts};
use memory::{HybridQuery, MemoryError, Weights};

/// The keyword leg finds the notes that speak of Caroline, not those that speak to her, and with
/// both legs the notes about her come first (the name lift is theirs alone).
#[tokio::test]
async fn a_name_that_addresses_someone_is_no_mention_of_them() -> Result<(), MemoryError> {
    let f = fixture().await;
    let alice = user("alice");
    let spoken_to = [
        "Thanks, Caroline! That sounds like a lot of fun.",
        "Hey Caroline! Great to hear from you, hope the week was good.",
    ];
    let spoken_of = [
        "Caroline went to an LGBTQ support group yesterday.",
        "My friend Caroline is researching adoption agencies.",
    ];
    for text in spoken_to.iter().chain(&spoken_of) {
        save_note(&f.store, &alice, text).await;
    }
    let about: BTreeSet<String> = spoken_of.iter().map(|t| (*t).to_owned()).collect();
    let by_words = HybridQuery {
        weights: Weights {
            vector: 0.0,
            fts: 1.0,
        },
        ..HybridQuery::new(vec![memory_of("alice")], "Caroline", 10)
    };
    assert_eq!(texts(&f.store.search(&by_words).await?), about);
    let asked = HybridQuery::new(
        vec![memory_of("alice")],
        "What has Caroline been up to?",
        10,
    );
    let hits = f.store.search(&asked).await?;
    assert_eq!(hits.len(), 4, "{hits:?}");
    assert_eq!(texts(&hits[..2]), about, "{hits:#?}");
    Ok(())
}
