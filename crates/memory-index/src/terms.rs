//! Words to index terms, the same way for stored text and for queries.
//!
//! A word is a run of letters and digits (as the query side splits it, [`crate::query_words`]).
//! Each word is lowercased, stripped of Latin diacritics (`café` and `cafe` are one term), cut at [`MAX_TERM_CHARS`] characters and stemmed with the Snowball
//! English stemmer (`preferences` and `preferred` meet at `prefer`). Stop words count towards a
//! text's length, as BM25 wants, but are not indexed: no query ever looks them up. Nor are the
//! names a stored text uses to address someone ([`crate::vocatives`]: "Thanks, Caroline!" is not
//! about Caroline); a query keeps every name it writes.

use std::borrow::Cow;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::query_words::{MAX_TERM_CHARS, is_stop_word, query_terms};
use crate::vocatives::addressed;

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// One text's terms with their counts, and its length in words (stop words included).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TermBag {
    pub len: u32,
    pub terms: Vec<(String, u16)>,
    /// How each term (in the order of `terms`) was written: [`CAPITAL`] and / or [`LOWER`].
    pub cases: Vec<u8>,
}

/// A term written with a capital inside a sentence (as a name is).
pub const CAPITAL: u8 = 1;
/// A term written in lowercase.
pub const LOWER: u8 = 2;

/// The index terms of a stored text. Called for every chunk at open (a million at a time), so
/// ASCII words are lowercased into one reused buffer and counted in a small vector (a chunk has a
/// few dozen distinct terms), not a hash map.
pub fn text_terms(text: &str) -> TermBag {
    let mut counts: Vec<(String, u16, u8)> = Vec::new();
    let mut len = 0u32;
    let mut lower = String::new();
    for word in words(text) {
        len = len.saturating_add(1);
        if addressed(text, word) {
            continue;
        }
        lower.clear();
        if word.is_ascii() {
            lower.extend(word.chars().map(|c| c.to_ascii_lowercase()));
        } else {
            // As the query side lowercases (a final sigma differs from `char::to_lowercase`).
            lower.push_str(&word.to_lowercase());
        }
        if is_stop_word(&lower) {
            continue;
        }
        let t = term(&lower);
        let case = match word.chars().next() {
            Some(c) if c.is_uppercase() && !opens_sentence(text, word) => CAPITAL,
            Some(c) if c.is_lowercase() => LOWER,
            _ => 0,
        };
        match counts.iter_mut().find(|(seen, _, _)| *seen == t) {
            Some((_, n, cases)) => {
                *n = n.saturating_add(1);
                *cases |= case;
            }
            None => counts.push((t, 1, case)),
        }
    }
    counts.sort_unstable();
    let cases = counts.iter().map(|c| c.2).collect();
    TermBag {
        len,
        terms: counts.into_iter().map(|(t, n, _)| (t, n)).collect(),
        cases,
    }
}

/// Whether `word` (a slice of `text`) is the first of a sentence or of a line: nothing but
/// spaces, quotes or brackets between it and the text's start, a line break, or a `.`, `?`, `!`
/// or `:` (a label such as `Caroline:` opens what follows).
fn opens_sentence(text: &str, word: &str) -> bool {
    let at = (word.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let before = text.get(..at).unwrap_or_default();
    match before.chars().rev().find(|c| {
        !matches!(
            c,
            ' ' | '\t' | '"' | '\'' | '(' | '[' | '“' | '‘' | '*' | '-'
        )
    }) {
        None => true,
        Some(c) => matches!(c, '.' | '?' | '!' | ':' | '\n' | '\r'),
    }
}

/// The distinct index terms of a query, in the query's order (stop words dropped, bounded as
/// [`query_terms`] bounds them).
pub fn query_index_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query_terms(query) {
        let t = term(&word);
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The index terms of the names in a query: words it writes with a capital inside a sentence
/// ("what did Caroline research?" names `carolin`), stop words aside. A name says whom the
/// question is about; the first word of a sentence is capitalised whatever it is.
pub fn query_names(query: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut sentence_start = true;
    for piece in query.split_inclusive(|c: char| !c.is_alphanumeric()) {
        let word = piece.trim_end_matches(|c: char| !c.is_alphanumeric());
        if !word.is_empty() {
            let lower = word.to_lowercase();
            let capital = word.chars().next().is_some_and(char::is_uppercase);
            if !sentence_start && capital && !is_stop_word(&lower) {
                let t = term(&lower);
                if !names.contains(&t) {
                    names.push(t);
                }
            }
            sentence_start = false;
        }
        if piece.ends_with(['.', '?', '!', '\n']) {
            sentence_start = true;
        }
    }
    names
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// The term of one lowercased word.
pub(crate) fn term(lower: &str) -> String {
    let folded: Cow<'_, str> = if lower.is_ascii() {
        Cow::Borrowed(lower)
    } else {
        Cow::Owned(lower.nfd().filter(|c| !is_combining_mark(*c)).collect())
    };
    let cut: Cow<'_, str> = match folded.char_indices().nth(MAX_TERM_CHARS) {
        Some((at, _)) => Cow::Owned(folded[..at].to_owned()),
        None => folded,
    };
    STEMMER.stem(&cut).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<(&'static str, u16)> {
        let bag = text_terms(text);
        bag.terms
            .into_iter()
            .map(|(t, n)| (&*Box::leak(t.into_boxed_str()), n))
            .collect()
    }

    #[test]
    fn stored_text() {
        let bag = text_terms("The user PREFERS green tea; preferred: oolong teas. Café!");
        assert_eq!(bag.len, 9, "every word counts towards the length");
        assert_eq!(
            terms("The user PREFERS green tea; preferred: oolong teas. Café!"),
            [
                ("cafe", 1),
                ("green", 1),
                ("oolong", 1),
                ("prefer", 2),
                ("tea", 2),
                ("user", 1)
            ]
        );
        assert_eq!(text_terms(""), TermBag::default());
        // A name used to address someone counts as a word but is not a term; one spoken of is.
        let bag = text_terms("Thanks, Caroline! I told Melanie about the race.");
        assert_eq!(bag.len, 8);
        let got: Vec<&str> = bag.terms.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(got, ["melani", "race", "thank", "told"]);
        assert_eq!(text_terms("the and of").terms, []);
        assert_eq!(text_terms("the and of").len, 3);
        let long = "x".repeat(500);
        assert_eq!(terms(&long), [(&*"x".repeat(MAX_TERM_CHARS).leak(), 1)]);
    }

    #[test]
    fn stored_text_says_how_each_term_was_written() {
        let bag = text_terms(
            "Caroline: we met Jon in Lisbon. Lisbon was warm!\n\"Jon\" said \"thanks\"; jon (Jon) left",
        );
        let case = |t: &str| {
            let at = bag
                .terms
                .iter()
                .position(|(x, _)| x == t)
                .unwrap_or(usize::MAX);
            bag.cases.get(at).copied()
        };
        // A label, a sentence's or a line's first word: no mark; a capital inside: CAPITAL.
        assert_eq!(case("carolin"), Some(0));
        assert_eq!(case("lisbon"), Some(CAPITAL));
        assert_eq!(case("jon"), Some(CAPITAL | LOWER));
        assert_eq!(case("met"), Some(LOWER));
        assert_eq!(case("thank"), Some(LOWER));
        assert_eq!(bag.cases.len(), bag.terms.len());
    }

    #[test]
    fn names_are_capitalised_inside_a_sentence() {
        assert_eq!(query_names("What did Caroline research?"), ["carolin"]);
        assert_eq!(
            query_names("Where did Jon and Gina's dad go? When is Gina back"),
            ["jon", "gina"]
        );
        // Sentence starts, stop words and lowercase words are not names.
        assert!(query_names("Caroline went. She said I liked tea").is_empty());
        assert!(query_names("what did caroline research?").is_empty());
        assert!(query_names("").is_empty());
    }

    #[test]
    fn queries_meet_stored_text() {
        assert_eq!(
            query_index_terms("What teas does the user prefer? Cafe, café"),
            ["tea", "user", "prefer", "cafe"]
        );
        assert_eq!(query_index_terms("NEAR(a b) *"), ["near", "b"]);
        assert!(query_index_terms("the of and ?!").is_empty());
        let stored: Vec<String> = text_terms("Preferences: teas")
            .terms
            .into_iter()
            .map(|t| t.0)
            .collect();
        for t in query_index_terms("preferred tea") {
            assert!(stored.contains(&t), "{t} in {stored:?}");
        }
    }
}
