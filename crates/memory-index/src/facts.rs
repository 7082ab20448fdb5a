//! Whether two short notes state the same fact: the judgement behind the duplicate check (and
//! capture's reconciliation of what it heard with what is stored).
//!
//! A static embedding cannot tell "the user likes tea" from "the user likes coffee": the words
//! they share dominate both vectors. So a cosine above the store's threshold only makes two notes
//! *candidates*; [`fact_difference`] then looks for what makes two sentences about the same topic
//! different facts, and finds none in a restatement:
//! - **numbers** (digits, number words and clock times, `3rd` = `3` = `third`, `3pm` = `15:00`;
//!   a date's month however it is written, `12 June` = `12/06`; `$85k` = `$85,000`): any
//!   difference;
//! - **names** (capitalised words after the first): each text names one the other does not
//!   mention (a name only one gives is more detail; `NYC` mentions `New York City`); days and
//!   months count however they are written (`Mon` = `Mondays`);
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
use dates::{named_date, numeric_date, same_numbers};
use numbers::number_at;
pub use words::MONTHS;
use words::{COMPARISONS, FRAMING, NEGATIONS, ORDER, PEOPLE, calendar, synonym};

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
    if !same_numbers(&a.numbers, &b.numbers) {
        return Some(FactDifference::Number);
    }
    if a.negations % 2 != b.negations % 2 {
        return Some(FactDifference::Negation);
    }
    // A name only one note gives is more detail (`Riverside Elementary School`); a name in
    // each that the other lacks is another place, person or thing.
    let missing_name = |x: &Parsed, y: &Parsed| x.names.iter().any(|n| !y.names_it(n));
    if missing_name(&a, &b) && missing_name(&b, &a) {
        return Some(FactDifference::Name);
    }
    if a.people != b.people {
        return Some(FactDifference::Person);
    }
    if swapped(&a, &b) {
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
fn swapped(x: &Parsed, y: &Parsed) -> bool {
    let (a, b) = (&x.content, &y.content);
    let gaps_a = gaps(a, b);
    let gaps_b = gaps(b, a);
    // A word written as the other's initials (`NYC`) is no word of its own.
    let lacks = |w: &String, other: &Parsed| {
        !other.initials.contains(w) && !other.content.iter().any(|v| same_word(w, v))
    };
    a.iter()
        .zip(&gaps_a)
        .any(|(w, g)| lacks(w, y) && b.iter().zip(&gaps_b).any(|(v, h)| g == h && lacks(v, x)))
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
    /// See [`initials`].
    initials: BTreeSet<String>,
}

impl Parsed {
    fn of(text: &str) -> Self {
        let mut p = Self::default();
        let expanded = expand_contractions(text);
        let tokens = tokens(&expanded);
        let lowered: Vec<String> = tokens.iter().map(|t| t.to_lowercase()).collect();
        let prefers = lowered.iter().any(|t| t.starts_with("prefer"));
        let money = lowered
            .iter()
            .any(|t| matches!(synonym(t), Some("gbp" | "usd" | "eur")));
        let mut i = 0;
        while i < tokens.len() {
            let (token, lower) = (tokens[i], lowered[i].as_str());
            let at = i;
            if let Some((dates, taken)) = named_date(&tokens, &lowered, i) {
                p.numbers.extend(dates);
                i += taken;
                continue;
            }
            if let Some(values) = numeric_date(lower) {
                p.numbers.extend(values);
                i += 1;
                continue;
            }
            if let Some((number, taken)) = number_at(&lowered, i, money) {
                p.numbers.insert(number);
                i += taken;
                continue;
            }
            i += 1;
            let capitalised = token.chars().next().is_some_and(char::is_uppercase);
            let canonical = synonym(lower)
                .or_else(|| calendar(lower, capitalised))
                .unwrap_or(lower);
            let stem = term(canonical);
            p.all.insert(stem.clone());
            if at > 0 && capitalised {
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
            if (is_stop_word(canonical) && !ORDER.contains(&canonical))
                || FRAMING.contains(&canonical)
                || FRAMING.contains(&stem.as_str())
            {
                continue;
            }
            p.content.push(stem);
        }
        p.initials = initials(&tokens);
        p
    }

    /// Whether this note names `name` (a stem), itself or by its initials (`NYC` for `New York
    /// City`).
    fn names_it(&self, name: &str) -> bool {
        self.all.contains(name) || self.initials.contains(name)
    }
}

/// The initials of each run of two or more capitalised words (`New York City` → `nyc`), lowercased.
fn initials(tokens: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut run = String::new();
    for token in tokens.iter().chain(std::iter::once(&"")) {
        match token.chars().next() {
            Some(c) if c.is_uppercase() => run.extend(c.to_lowercase()),
            _ => {
                if run.chars().count() >= 2 {
                    out.insert(std::mem::take(&mut run));
                }
                run.clear();
            }
        }
    }
    out
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

/// Runs of letters and digits; a `:` between digits stays inside (`7:40`), and so does a
/// thousands separator (`1,200`) and a date's `/` or ISO `-` (`22/08`, `2025-10-12`); a currency
/// sign is a token of its own.
fn tokens(text: &str) -> Vec<&str> {
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (k, &(at, c)) in bytes.iter().enumerate() {
        let after_digit = k > 0 && bytes[k - 1].1.is_ascii_digit();
        let digit_colon =
            c == ':' && after_digit && bytes.get(k + 1).is_some_and(|(_, n)| n.is_ascii_digit());
        // A thousands separator: a comma after a digit with exactly three digits after it.
        let thousands = c == ',' && after_digit && {
            let next: Vec<char> = bytes[k + 1..].iter().take(4).map(|(_, n)| *n).collect();
            next.len() >= 3
                && next[..3].iter().all(char::is_ascii_digit)
                && !next.get(3).is_some_and(char::is_ascii_digit)
        };
        // A date's `/` between digits (`22/08`), and an ISO date's `-` (`2025-10-12`).
        let next_digit = bytes.get(k + 1).is_some_and(|(_, n)| n.is_ascii_digit());
        let slash = c == '/' && after_digit && next_digit;
        let iso = c == '-'
            && after_digit
            && next_digit
            && start.is_some_and(|s| {
                let run = &text[s..at];
                let year = run
                    .get(..4)
                    .is_some_and(|y| y.chars().all(|d| d.is_ascii_digit()));
                year && (run.len() == 4 || (run.as_bytes().get(4) == Some(&b'-') && run.len() <= 7))
            });
        if c.is_alphanumeric() || digit_colon || thousands || slash || iso {
            start.get_or_insert(at);
            continue;
        }
        if let Some(s) = start.take() {
            out.push(&text[s..at]);
        }
        // A currency sign is a word of its own (`£800` says `800 pounds`).
        if matches!(c, '£' | '$' | '€') {
            out.push(&text[at..at + c.len_utf8()]);
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

mod dates;
mod numbers;
mod words;

#[cfg(test)]
mod tests;
