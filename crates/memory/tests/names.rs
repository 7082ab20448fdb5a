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

/// Whom a query asks about is read from how the user's own text writes its words, not from how
/// the query is typed: "what did caroline say about pottery" ranks and scores every note as "What
/// did Caroline say about pottery?" does (the name lift is Caroline's notes' in both), and a word
/// the user also writes in lowercase ("rose") is no name even when a question capitalises it.
#[tokio::test]
async fn a_query_names_whom_the_users_text_names_however_it_is_typed() -> Result<(), MemoryError> {
    let f = fixture().await;
    let alice = user("alice");
    for text in [
        "Melanie said the pottery class was fun and the pottery was lovely.",
        "I told Caroline about the pottery class.",
        "Yesterday Caroline said she wants to try pottery.",
        "We planted a rose bush by the pottery shed.",
        "My sister Rose visited the pottery fair.",
    ] {
        save_note(&f.store, &alice, text).await;
    }
    let search = |text: &str| {
        let query = HybridQuery::new(vec![memory_of("alice")], text, 10);
        let store = f.store.clone();
        async move { store.search(&query).await }
    };
    let scored = |hits: Vec<memory::SearchHit>| -> Vec<(String, i64)> {
        hits.into_iter()
            .map(|h| (h.text, (h.score * 1e9).round() as i64))
            .collect()
    };
    let typed = scored(search("What did Caroline say about pottery?").await?);
    let lower = scored(search("what did caroline say about pottery").await?);
    assert_eq!(lower, typed);
    // Caroline's notes come first.
    let first_two: BTreeSet<&str> = typed[..2].iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        first_two,
        BTreeSet::from([
            "I told Caroline about the pottery class.",
            "Yesterday Caroline said she wants to try pottery.",
        ]),
        "{typed:#?}"
    );
    // "rose" is a word of the user's as well as a name: a capital in the query lifts neither.
    let rose = scored(search("What did Rose say about pottery?").await?);
    let rose_lower = scored(search("what did rose say about pottery").await?);
    assert_eq!(rose, rose_lower);
    Ok(())
}
