//! Related words for the keyword leg: a query word also matches, at a fraction of its weight, the
//! words the builtin model places nearest to it (`dog` → `canine`, `married` → `spouse`, `kids` →
//! `children`), so a turn that says it in other words still scores.
//!
//! The neighbours come from a table generated once from the builtin model's vocabulary
//! (`data/related-words.txt`, written by `cargo run --release -p memory-index --example
//! related_words`; [`build`] holds the computation, a test checks the table against the model).
//! Each whole word of the vocabulary lists its [`NEIGHBOURS`] nearest whole words of another stem
//! with cosine ≥ [`MIN_COSINE`]. A query word outside the vocabulary (mostly a name or a rare word)
//! brings none, and names never do: another name is not the same person. The table is parsed
//! once per process, off the search's path ([`warm`]).
//!
//! A related term weighs [`RELATED_WEIGHT`] × its cosine × its idf: it reorders the candidates and
//! rarely outranks an exact match. On LoCoMo's development half it gained NDCG@10 on a plateau of
//! weights 0.2–0.4, and two neighbours did better than one or three (docs/benchmarks.md).

pub mod build;

use std::sync::LazyLock;

use rustc_hash::FxHashMap;

use crate::query_words::{is_stop_word, query_terms};
use crate::terms::term;

/// Neighbours listed per word.
pub const NEIGHBOURS: usize = 2;
/// The least cosine between a word and a listed neighbour.
pub const MIN_COSINE: f32 = 0.6;
/// A related term's share of its own idf, times its cosine.
pub const RELATED_WEIGHT: f64 = 0.3;

/// The generated table: a line per word, `word neighbour:cosine-in-hundredths …`.
static TABLE_TEXT: &str = include_str!("../data/related-words.txt");

/// Each word's neighbours as index terms, with their cosines.
static TABLE: LazyLock<FxHashMap<&'static str, Vec<(String, f64)>>> =
    LazyLock::new(|| parse(TABLE_TEXT));

fn parse(text: &'static str) -> FxHashMap<&'static str, Vec<(String, f64)>> {
    let mut table = FxHashMap::default();
    for line in text.lines() {
        let mut fields = line.split(' ');
        let Some(word) = fields.next().filter(|w| !w.is_empty()) else {
            continue;
        };
        let neighbours = fields
            .filter_map(|f| {
                let (w, cos) = f.split_once(':')?;
                let cos: u8 = cos.parse().ok()?;
                Some((term(w), f64::from(cos) / 100.0))
            })
            .collect();
        table.insert(word, neighbours);
    }
    table
}

/// The related index terms of a query's words, each with its weight (a share of its idf): words
/// that are names (`names`, index terms) bring none, and a term the query already holds (`terms`)
/// is not added again. Where two words share a neighbour it weighs as the nearer one.
pub fn related_terms(query: &str, terms: &[String], names: &[String]) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for word in query_terms(query) {
        let Some(neighbours) = TABLE.get(word.as_str()) else {
            continue;
        };
        if names.contains(&term(&word)) {
            continue;
        }
        for (neighbour, cos) in neighbours {
            if terms.contains(neighbour) {
                continue;
            }
            let weight = RELATED_WEIGHT * cos;
            match out.iter_mut().find(|(t, _)| t == neighbour) {
                Some((_, w)) => *w = w.max(weight),
                None => out.push((neighbour.clone(), weight)),
            }
        }
    }
    out
}

/// Parses the table now (~40 ms of stemming, once per process) so that the first search does
/// not: stores call it on the blocking pool when they open.
pub fn warm() {
    LazyLock::force(&TABLE);
}

/// Whether a vocabulary word may be listed or looked up: a whole word of ASCII letters that is
/// not a stop word (no query looks those up).
pub fn listable(word: &str) -> bool {
    word.len() >= 2 && word.bytes().all(|b| b.is_ascii_lowercase()) && !is_stop_word(word)
}

#[cfg(test)]
#[path = "related_words_tests.rs"]
mod tests;
