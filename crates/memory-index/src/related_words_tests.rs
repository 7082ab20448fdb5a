//! The related-words table: what a query word brings, what brings nothing, and the table
//! checked against the builtin model it was generated from.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use super::build::{Words, vocabulary};
use super::*;
use crate::terms::{query_index_terms, query_names};

fn related(query: &str) -> Vec<(String, f64)> {
    related_terms(query, &query_index_terms(query), &query_names(query))
}

fn terms_of(query: &str) -> Vec<String> {
    related(query).into_iter().map(|(t, _)| t).collect()
}

#[test]
fn a_word_brings_its_neighbours_as_terms_at_a_share_of_their_weight() {
    let dog = TABLE.get("dog").expect("dog is in the table");
    assert!(!dog.is_empty() && dog.len() <= NEIGHBOURS);
    let got = related("Does Maria have a dog?");
    assert_eq!(got.len(), dog.len(), "{got:?}");
    for ((t, w), (n, cos)) in got.iter().zip(dog) {
        assert_eq!(t, n);
        assert!(*cos >= f64::from(MIN_COSINE) - 0.005 && *cos <= 1.0);
        assert!((w - RELATED_WEIGHT * cos).abs() < 1e-12);
    }
    assert!(
        !terms_of("Does Maria have a dog?").contains(&"dog".to_owned()),
        "a word is never its own neighbour"
    );
}

#[test]
fn names_stop_words_unknown_words_and_the_querys_own_terms_bring_nothing() {
    assert!(TABLE.contains_key("caroline") || TABLE.contains_key("john"));
    assert!(related("What about Caroline and John?").is_empty());
    assert!(related("the of and what").is_empty());
    assert!(related("zxqvwk").is_empty());
    // A neighbour the query names itself is not added twice.
    let (neighbour, _) = TABLE.get("dog").unwrap()[0].clone();
    let word = TABLE_TEXT
        .lines()
        .find_map(|l| {
            let (w, rest) = l.split_once(' ')?;
            (w == "dog").then(|| rest.split(' ').next()?.split(':').next())?
        })
        .unwrap();
    assert_eq!(term(word), neighbour);
    let both = terms_of(&format!("dog {word}"));
    assert!(!both.contains(&neighbour), "{both:?}");
}

#[test]
fn a_neighbour_of_two_words_weighs_as_the_nearer() {
    let mut counts: FxHashMap<&str, Vec<(&str, f64)>> = FxHashMap::default();
    for (word, neighbours) in TABLE.iter() {
        for (n, cos) in neighbours {
            counts.entry(n.as_str()).or_default().push((word, *cos));
        }
    }
    let (shared, from) = counts
        .iter()
        .find(|(_, from)| from.len() >= 2 && from[0].1 != from[1].1)
        .expect("some neighbour is shared");
    let query = format!("{} {}", from[0].0, from[1].0);
    let got = related(&query);
    let w = got.iter().find(|(t, _)| t == shared).unwrap().1;
    assert!((w - RELATED_WEIGHT * from[0].1.max(from[1].1)).abs() < 1e-12);
}

#[test]
fn the_table_is_what_the_builtin_model_gives() {
    let tokenizer = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../models/minilm-l6-static/tokenizer.json"
    ))
    .unwrap();
    let words = Words::embed(vocabulary(&tokenizer).unwrap()).unwrap();
    assert!(words.words.len() > 20_000, "{}", words.words.len());
    let lines: FxHashMap<&str, &str> = TABLE_TEXT
        .lines()
        .map(|l| (l.split(' ').next().unwrap(), l))
        .collect();
    let sample = ["dog", "married", "kids", "career", "painting", "hiking"];
    let every = (0..words.words.len()).step_by(997);
    let mut listed = 0;
    for i in every.chain(
        sample
            .iter()
            .map(|w| words.words.binary_search(&(*w).to_owned()).unwrap()),
    ) {
        let want = words.line(i);
        let word = words.words[i].as_str();
        assert_eq!(want.as_deref(), lines.get(word).copied(), "{word}");
        listed += usize::from(want.is_some());
    }
    assert!(listed >= sample.len());
    // Every line of the table is a vocabulary word's.
    assert!(
        lines
            .keys()
            .all(|w| words.words.binary_search(&(*w).to_owned()).is_ok())
    );
}
