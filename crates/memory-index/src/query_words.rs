//! The words of a user's query for the keyword leg.
//!
//! The raw query is never syntax: it is split into words (runs of letters and digits), lowercased,
//! stop words and repeats dropped, bounded in number and length. [`crate::terms`] then folds and
//! stems them like stored text. A query with no usable word gives an empty keyword leg.

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

/// Whether a lowercased word is a stop word (the list is sorted).
pub fn is_stop_word(lower: &str) -> bool {
    STOP_WORDS.binary_search(&lower).is_ok()
}

/// The query's search terms: lowercased words, stop words removed, duplicates removed, bounded.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let lower: String = word.to_lowercase().chars().take(MAX_TERM_CHARS).collect();
        if is_stop_word(&lower) || terms.contains(&lower) {
            continue;
        }
        terms.push(lower);
        if terms.len() == MAX_TERMS {
            break;
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(query: &str, expected: &[&str]) {
        assert_eq!(query_terms(query), expected, "query {query:?}");
    }

    #[test]
    fn words() {
        check("favourite tea", &["favourite", "tea"]);
        check("What is the user's NAME?", &["user", "s", "name"]);
        check("NEAR(a b)", &["near", "b"]);
        check(
            "title:secret* ^start -x",
            &["title", "secret", "start", "x"],
        );
        check("'; DROP TABLE notes; --", &["drop", "table", "notes"]);
        check("tea tea TEA", &["tea"]);
        check("café ☕", &["café"]);
        check("", &[]);
        check("?!... \"\" ()", &[]);
        check("the and or not", &[]);
        check("🎉🎉", &[]);
    }

    #[test]
    fn stop_words_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stop_word("the") && is_stop_word("yours") && !is_stop_word("tea"));
    }

    #[test]
    fn bounded() {
        let long: String = (0..1000).map(|i| format!("w{i} ")).collect();
        assert_eq!(query_terms(&long).len(), MAX_TERMS);
        let huge = "x".repeat(100_000);
        assert_eq!(query_terms(&huge), ["x".repeat(MAX_TERM_CHARS)]);
    }
}
