//! Turning a user's query into a safe FTS5 `MATCH` expression.
//!
//! The raw query is never passed to FTS5: it is split into word tokens (letters and digits, the same
//! notion of a word as the `unicode61` tokenizer), lowercased, stop words dropped, each remaining term
//! double-quoted (so `NEAR`, `AND`, `*`, `^`, `col:` are plain words) and the terms joined with `OR`;
//! BM25 then ranks documents matching more and rarer terms higher. A query with no usable term gives
//! no expression, and the keyword leg is simply empty.

/// At most this many distinct terms are used; the rest of a long query is ignored.
pub const MAX_TERMS: usize = 32;
/// A term longer than this (in characters) is cut: no real word is that long.
pub const MAX_TERM_CHARS: usize = 64;

/// Common English words that carry no topic. Kept short on purpose: BM25 already discounts
/// frequent words, this list only stops them from flooding the candidate set.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been",
    "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for", "from", "had",
    "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "me", "more", "my", "no", "nor", "not", "of", "on", "or",
    "our", "ours", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "those", "to", "too", "very", "was", "we", "were",
    "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would",
    "you", "your", "yours",
];

/// The query's search terms: lowercased words, stop words removed, duplicates removed, bounded.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let lower: String = word.to_lowercase().chars().take(MAX_TERM_CHARS).collect();
        if STOP_WORDS.contains(&lower.as_str()) || terms.contains(&lower) {
            continue;
        }
        terms.push(lower);
        if terms.len() == MAX_TERMS {
            break;
        }
    }
    terms
}

/// The `MATCH` expression for `query`, or `None` when it has no usable term.
pub fn match_expression(query: &str) -> Option<String> {
    terms_expression(&query_terms(query))
}

/// One quoted term, usable alone as a `MATCH` expression.
pub(crate) fn quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// The `OR` of the quoted terms, or `None` when there are none.
pub(crate) fn terms_expression(terms: &[String]) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    Some(
        terms
            .iter()
            .map(|t| quote(t))
            .collect::<Vec<_>>()
            .join(" OR "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(query: &str, expected: Option<&str>) {
        assert_eq!(
            match_expression(query).as_deref(),
            expected,
            "query {query:?}"
        );
    }

    #[test]
    fn expressions() {
        check("favourite tea", Some("\"favourite\" OR \"tea\""));
        check(
            "What is the user's NAME?",
            Some("\"user\" OR \"s\" OR \"name\""),
        );
        check("NEAR(a b)", Some("\"near\" OR \"b\""));
        check(
            "title:secret* ^start -x",
            Some("\"title\" OR \"secret\" OR \"start\" OR \"x\""),
        );
        check(
            "'; DROP TABLE notes; --",
            Some("\"drop\" OR \"table\" OR \"notes\""),
        );
        check("tea tea TEA", Some("\"tea\""));
        check("café ☕", Some("\"café\""));
        check("", None);
        check("?!... \"\" ()", None);
        check("the and or not", None);
        check("🎉🎉", None);
    }

    #[test]
    fn bounded() {
        let long: String = (0..1000).map(|i| format!("w{i} ")).collect();
        assert_eq!(query_terms(&long).len(), MAX_TERMS);
        let huge = "x".repeat(100_000);
        assert_eq!(query_terms(&huge), ["x".repeat(MAX_TERM_CHARS)]);
    }
}
