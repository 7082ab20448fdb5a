//! Whether two short notes state the same fact: the judgement behind the duplicate check (and
//! capture's reconciliation of what it heard with what is stored).
//!
//! A static embedding cannot tell "the user likes tea" from "the user likes coffee": the words
//! they share dominate both vectors. So a cosine above the store's threshold only makes two notes
//! *candidates*; [`fact_difference`] then looks for what makes two sentences about the same topic
//! different facts, and finds none in a restatement:
//! - **numbers** (digits and number words, `3rd` = `3` = `third`): any difference;
//! - **names** (capitalised words after the first): one the other text does not mention;
//! - **negation** (`not`, `never`, `no longer`, `dislikes`, `least`, `stopped`…): an odd number
//!   of them in one text and an even number in the other;
//! - **people** (`sister`, `son`, `manager`…): a relation named in one text and not the other,
//!   i.e. a fact about someone else;
//! - **a swapped word**: each text has a content word the other lacks (`tea` / `coffee`, `cat` /
//!   `dog`), after stemming, a shared prefix, and a short list of synonyms (`kids` / `children`);
//!   words of framing (`likes`, `prefers`, `is called`, `has`, `uses`…) are not content. A
//!   restatement only drops or adds words (`a peanut allergy`, `follows a vegetarian diet`);
//! - **order** around a comparison (`the metro over the bus` / `the bus over the metro`).
//!
//! Measured on a labelled set of pairs (`data/fact_pairs.tsv`, the test below, and
//! `docs/benchmarks.md`).

use std::collections::BTreeSet;

use crate::query_words::is_stop_word;
use crate::terms::term;

/// Cosine at or above which two notes are candidates for the same fact with the builtin model
/// (`[memory] duplicate_similarity`); [`fact_difference`] then decides.
pub const DEFAULT_DUPLICATE_SIMILARITY: f32 = 0.85;

/// What makes two notes different facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactDifference {
    Number,
    Name,
    Negation,
    Person,
    Word,
    Order,
}

/// Why `a` and `b` are different facts, or `None` when `b` restates `a` (the judgement is
/// symmetric).
pub fn fact_difference(a: &str, b: &str) -> Option<FactDifference> {
    let (a, b) = (Parsed::of(a), Parsed::of(b));
    if a.numbers != b.numbers {
        return Some(FactDifference::Number);
    }
    if a.negations % 2 != b.negations % 2 {
        return Some(FactDifference::Negation);
    }
    let missing_name = |x: &Parsed, y: &Parsed| x.names.iter().any(|n| !y.all.contains(n));
    if missing_name(&a, &b) || missing_name(&b, &a) {
        return Some(FactDifference::Name);
    }
    if a.people != b.people {
        return Some(FactDifference::Person);
    }
    if swapped(&a.content, &b.content) {
        return Some(FactDifference::Word);
    }
    if a.compares && b.compares && a.content != b.content && {
        let (mut x, mut y) = (a.content.clone(), b.content.clone());
        x.sort_unstable();
        y.sort_unstable();
        x == y
    } {
        return Some(FactDifference::Order);
    }
    None
}

/// Whether `b` says what `a` says (no [`FactDifference`]).
pub fn restates(a: &str, b: &str) -> bool {
    fact_difference(a, b).is_none()
}

/// Whether a word of `a` was replaced by a word of `b`: both are words the other text lacks, and
/// both stand at the same place, between the same words of the longest run the two texts share
/// (`likes tea` / `likes coffee`). A word only added, or one that moved, is no swap.
fn swapped(a: &[String], b: &[String]) -> bool {
    let gaps_a = gaps(a, b);
    let gaps_b = gaps(b, a);
    let lacks = |w: &String, other: &[String]| !other.iter().any(|v| same_word(w, v));
    a.iter()
        .zip(&gaps_a)
        .any(|(w, g)| lacks(w, b) && b.iter().zip(&gaps_b).any(|(v, h)| g == h && lacks(v, a)))
}

/// For each word of `x`, how many words of the longest common subsequence of `x` and `y` come
/// before it (its gap between shared words).
fn gaps(x: &[String], y: &[String]) -> Vec<usize> {
    let (n, m) = (x.len(), y.len());
    // lcs[i][j]: the longest common subsequence of x[i..] and y[j..].
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if same_word(&x[i], &y[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut out, mut shared) = (vec![0; n], 0);
    let (mut i, mut j) = (0, 0);
    while i < n {
        out[i] = shared;
        if j < m && same_word(&x[i], &y[j]) && lcs[i][j] == lcs[i + 1][j + 1] + 1 {
            shared += 1;
            i += 1;
            j += 1;
        } else if j < m && lcs[i][j + 1] >= lcs[i + 1][j] {
            j += 1;
        } else {
            i += 1;
        }
    }
    out
}

/// One stem for the other, or a shared beginning of at least four letters covering most of the
/// shorter one (`allergic` / `allergy`, `cello` / `cellist`, `month` / `monthly`).
fn same_word(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let shorter = a.chars().count().min(b.chars().count());
    common >= 4 && common * 5 >= shorter * 4
}

/// What one note says, for the comparison.
#[derive(Debug, Default)]
struct Parsed {
    numbers: BTreeSet<String>,
    negations: usize,
    /// Stems of capitalised words after the first.
    names: BTreeSet<String>,
    /// Stems of every word (where a name is looked for).
    all: BTreeSet<String>,
    people: BTreeSet<&'static str>,
    /// Content stems in order (no stop, framing, number or negation words).
    content: Vec<String>,
    compares: bool,
}

impl Parsed {
    fn of(text: &str) -> Self {
        let mut p = Self::default();
        let expanded = expand_contractions(text);
        let tokens = tokens(&expanded);
        let prefers = tokens
            .iter()
            .any(|t| t.to_lowercase().starts_with("prefer"));
        for (i, token) in tokens.iter().enumerate() {
            let lower = token.to_lowercase();
            if token.chars().any(|c| c.is_ascii_digit()) {
                let digits: String = lower
                    .chars()
                    .filter(|c| c.is_ascii_digit() || *c == ':')
                    .collect();
                p.numbers.insert(digits.trim_start_matches('0').to_owned());
            } else if let Some(n) = number_word(&lower) {
                p.numbers.insert(n.to_owned());
                continue;
            }
            let canonical = synonym(&lower).unwrap_or(&lower);
            let stem = term(canonical);
            p.all.insert(stem.clone());
            if i > 0 && token.chars().next().is_some_and(char::is_uppercase) {
                p.names.insert(stem.clone());
            }
            if COMPARISONS.contains(&canonical) || (prefers && canonical == "to") {
                p.compares = true;
            }
            if NEGATIONS.contains(&canonical) || NEGATIONS.contains(&stem.as_str()) {
                p.negations += 1;
                continue;
            }
            if let Some(person) = PEOPLE.iter().find(|w| **w == canonical) {
                p.people.insert(person);
            }
            let digits = token.chars().any(|c| c.is_ascii_digit());
            if digits
                || is_stop_word(canonical)
                || FRAMING.contains(&canonical)
                || FRAMING.contains(&stem.as_str())
            {
                continue;
            }
            p.content.push(stem);
        }
        p
    }
}

/// `don't` → `do not`, `can't` / `cannot` → `can not`, `won't` → `will not`.
fn expand_contractions(text: &str) -> String {
    let text = text.replace('’', "'");
    let mut out = String::with_capacity(text.len() + 8);
    for word in text.split_inclusive(char::is_whitespace) {
        let lower = word.trim_end().to_lowercase();
        let replaced = match lower.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '\'') {
            "can't" | "cannot" => Some("can not"),
            "won't" => Some("will not"),
            w if w.ends_with("n't") => {
                out.push_str(&word[..w.len() - 3]);
                Some(" not")
            }
            _ => None,
        };
        match replaced {
            Some(r) => {
                out.push_str(r);
                out.push(' ');
            }
            None => out.push_str(word),
        }
    }
    out
}

/// Runs of letters and digits; a `:` between digits stays inside (`7:40`).
fn tokens(text: &str) -> Vec<&str> {
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (k, &(at, c)) in bytes.iter().enumerate() {
        let digit_colon = c == ':'
            && k > 0
            && bytes[k - 1].1.is_ascii_digit()
            && bytes.get(k + 1).is_some_and(|(_, n)| n.is_ascii_digit());
        if c.is_alphanumeric() || digit_colon {
            start.get_or_insert(at);
        } else if let Some(s) = start.take() {
            out.push(&text[s..at]);
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

fn number_word(lower: &str) -> Option<&'static str> {
    const WORDS: &[(&str, &str)] = &[
        ("zero", "0"),
        ("one", "1"),
        ("once", "1"),
        ("first", "1"),
        ("two", "2"),
        ("twice", "2"),
        ("second", "2"),
        ("three", "3"),
        ("third", "3"),
        ("four", "4"),
        ("fourth", "4"),
        ("five", "5"),
        ("fifth", "5"),
        ("six", "6"),
        ("sixth", "6"),
        ("seven", "7"),
        ("seventh", "7"),
        ("eight", "8"),
        ("eighth", "8"),
        ("nine", "9"),
        ("ninth", "9"),
        ("ten", "10"),
        ("tenth", "10"),
        ("eleven", "11"),
        ("twelve", "12"),
        ("twenty", "20"),
        ("thirty", "30"),
        ("forty", "40"),
        ("fifty", "50"),
        ("hundred", "100"),
        ("thousand", "1000"),
        ("dozen", "12"),
    ];
    WORDS.iter().find(|(w, _)| *w == lower).map(|(_, n)| *n)
}

/// Words that mean the same in notes about a person, mapped to one of them.
fn synonym(lower: &str) -> Option<&'static str> {
    const GROUPS: &[(&str, &[&str])] = &[
        ("child", &["kid", "kids", "children", "child"]),
        ("mother", &["mum", "mom", "mummy", "mommy", "mother"]),
        ("father", &["dad", "daddy", "father"]),
        ("grandmother", &["grandma", "granny", "gran", "grandmother"]),
        (
            "grandfather",
            &["grandpa", "grandad", "granddad", "grandfather"],
        ),
        (
            "learn",
            &["learning", "learns", "studying", "studies", "study"],
        ),
        ("birth", &["born", "birthday", "birth"]),
        ("fear", &["afraid", "scared", "fear", "fears"]),
        ("brief", &["short", "shorter", "brief", "concise"]),
        (
            "reply",
            &[
                "answer",
                "answers",
                "replies",
                "reply",
                "response",
                "responses",
            ],
        ),
        ("before", &["earlier", "before"]),
        ("after", &["later", "after"]),
        (
            "live",
            &["lives", "lived", "living", "home", "based", "resides"],
        ),
        ("fan", &["fan", "fans", "supports", "support"]),
        ("deadline", &["deadline", "deadlines", "due"]),
    ];
    GROUPS
        .iter()
        .find(|(_, words)| words.contains(&lower))
        .map(|(to, _)| *to)
}

/// Words (or their stems) that turn a statement round.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "least",
    "dislike", "dislik", "hate", "stop", "stopped", "quit",
];

/// Comparisons, where the order of the compared words is the fact.
const COMPARISONS: &[&str] = &["over", "than", "instead", "rather", "versus", "vs"];

/// People a note may be about: one named in one note and not the other makes another fact.
const PEOPLE: &[&str] = &[
    "mother",
    "father",
    "parent",
    "parents",
    "sister",
    "brother",
    "sibling",
    "son",
    "daughter",
    "child",
    "wife",
    "husband",
    "partner",
    "spouse",
    "boyfriend",
    "girlfriend",
    "fiance",
    "fiancee",
    "friend",
    "boss",
    "colleague",
    "coworker",
    "client",
    "niece",
    "nephew",
    "aunt",
    "uncle",
    "cousin",
    "grandmother",
    "grandfather",
    "grandson",
    "granddaughter",
    "neighbour",
    "neighbor",
    "roommate",
    "flatmate",
];

/// Framing: words that say how a fact is put, not what it is (stems and surface forms).
const FRAMING: &[&str] = &[
    "user", "s", "like", "love", "enjoy", "prefer", "want", "wish", "favourit", "favorit", "best",
    "call", "name", "known", "use", "us", "go", "goe", "went", "get", "got", "take", "took",
    "keep", "kept", "follow", "make", "made", "work", "play", "give", "realli", "every", "each",
    "alway", "usual", "also", "most", "other", "rather", "would", "will", "happen", "fall", "turn",
    "attend", "out", "up", "among", "over", "instead", "per", "much", "own", "current", "now",
];

#[cfg(test)]
mod tests;
