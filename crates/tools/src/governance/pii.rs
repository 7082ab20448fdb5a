//! Finding personal data and secrets in text: e-mail addresses, phone numbers, payment card
//! numbers (Luhn-checked), IBANs (mod-97-checked), national-id shaped numbers (US SSN, UK NINO)
//! and secrets (the scrubber's own patterns: one source of truth). Checksums keep ordinary
//! numbers in prose (years, versions, amounts, order numbers) from being taken for cards or IBANs.
//!
//! The patterns match the text's normalised view ([`super::normal`]: NFKC, format characters
//! dropped, Unicode spaces, dashes and digits folded), so `４１１１…`, a zero-width space inside a
//! number or a fullwidth `＠` is found as its plain form is; digits may also be separated by `/`
//! or `_`, IBANs and NINOs may be lower case, and an e-mail's `@` may be written `[at]`, `(at)`
//! or `%40`. A finding's span is that of the original text, so redaction removes the obfuscated
//! value whole. Each pattern runs only on the windows of the text where it can match (around
//! long numbers, IBAN starts and e-mail separators: [`windows`], one pass over the bytes).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::normal::Normalized;
use crate::scrub::{ascii_classes, secret_spans};
use windows::Windows;

/// A kind of sensitive value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PiiKind {
    Email,
    Phone,
    Card,
    Iban,
    NationalId,
    Secret,
}

impl PiiKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PiiKind::Email => "email",
            PiiKind::Phone => "phone",
            PiiKind::Card => "card",
            PiiKind::Iban => "iban",
            PiiKind::NationalId => "national_id",
            PiiKind::Secret => "secret",
        }
    }
}

/// How many values of each kind were found (or redacted).
pub type PiiCounts = BTreeMap<PiiKind, u32>;

/// A validity check on a match (a checksum, a plausible length).
type Check = fn(&str) -> bool;

fn always(_: &str) -> bool {
    true
}

fn digits(text: &str) -> Vec<u32> {
    text.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// 13–19 digits passing the Luhn checksum, not all the same digit.
fn luhn(text: &str) -> bool {
    let d = digits(text);
    if !(13..=19).contains(&d.len()) || d.iter().all(|x| Some(x) == d.first()) {
        return false;
    }
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| match (i % 2, x * 2) {
            (1, y) if y > 9 => y - 9,
            (1, y) => y,
            _ => x,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// ISO 13616: 15–34 characters, the rearranged number is 1 mod 97.
fn iban(text: &str) -> bool {
    let s: String = text.chars().filter(char::is_ascii_alphanumeric).collect();
    if !s.is_char_boundary(4) {
        return false;
    }
    if !(15..=34).contains(&s.len()) {
        return false;
    }
    let (head, tail) = s.split_at(4);
    let mut rem: u32 = 0;
    for c in tail.chars().chain(head.chars()) {
        let v = match c.to_digit(36) {
            Some(v) => v,
            None => return false,
        };
        rem = if v < 10 {
            (rem * 10 + v) % 97
        } else {
            (rem * 100 + v) % 97
        };
    }
    rem == 1
}

/// A US SSN that could be issued (no 000/666/9xx area, no 00 group, no 0000 serial).
fn ssn(text: &str) -> bool {
    let d = digits(text);
    let n = |r: Range<usize>| d.get(r).map(|s| s.iter().fold(0, |a, x| a * 10 + x));
    match (n(0..3), n(3..5), n(5..9)) {
        (Some(area), Some(group), Some(serial)) => {
            area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
        }
        _ => false,
    }
}

/// 7 to 15 digits, as numbering plans allow.
fn phone(text: &str) -> bool {
    (7..=15).contains(&digits(text).len())
}

/// Which pattern a [`Pattern`] is: says which windows it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Email,
    Iban,
    Card,
    Ssn,
    Nino,
    Phone,
}

struct Pattern {
    which: Which,
    kind: PiiKind,
    re: Regex,
    check: Check,
}

/// The patterns, in the order they claim a span (a card number is not also a phone number).
static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    let table: [(Which, PiiKind, &str, Check); 6] = [
        (
            Which::Email,
            PiiKind::Email,
            r"\b[A-Za-z0-9._+\-]+(?:@|%40| ?[\[(]at[\])] ?)[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b",
            always,
        ),
        (
            Which::Iban,
            PiiKind::Iban,
            r"(?i)\b[A-Z]{2}\d{2}(?:[ \-/_]?[A-Z0-9]){11,30}\b",
            iban,
        ),
        (
            Which::Card,
            PiiKind::Card,
            r"\b\d(?:[ \-/_]?\d){12,18}\b",
            luhn,
        ),
        (
            Which::Ssn,
            PiiKind::NationalId,
            r"\b\d{3}[ \-/_]\d{2}[ \-/_]\d{4}\b",
            ssn,
        ),
        (
            Which::Nino,
            PiiKind::NationalId,
            r"(?i)\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z][ \-/_]?\d{2}[ \-/_]?\d{2}[ \-/_]?\d{2}[ \-/_]?[A-D]\b",
            always,
        ),
        (
            Which::Phone,
            PiiKind::Phone,
            r"(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,4}\)|\b\d{2,4})[ .\-]\d{3,4}[ .\-]\d{3,4}\b|\+\d{8,15}\b",
            phone,
        ),
    ];
    table
        .into_iter()
        .filter_map(|(which, kind, pattern, check)| {
            Some(Pattern {
                which,
                kind,
                re: Regex::new(&ascii_classes(pattern)).ok()?,
                check,
            })
        })
        .collect()
});

/// One sensitive value found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: PiiKind,
    pub span: Range<usize>,
}

/// Where each pattern runs in a text (see [`windows`]): the e-mail pattern only where the text
/// has an `@` (or `%40`, `[at]`, `(at)`), the others only where it has a long number.
struct Reach {
    email: Vec<Range<usize>>,
    numbers: Windows,
}

impl Reach {
    fn windows(text: &str) -> Self {
        let mail = windows::has_mail_separator(text);
        let mut numbers = windows::numbers(text);
        if !numbers.long_number {
            numbers = Windows::default();
        }
        Self {
            email: if mail {
                windows::emails(text)
            } else {
                Vec::new()
            },
            numbers,
        }
    }

    fn get(&self, which: Which) -> &[Range<usize>] {
        match which {
            Which::Email => &self.email,
            Which::Iban => &self.numbers.iban,
            Which::Card => &self.numbers.card,
            Which::Ssn => &self.numbers.ssn,
            Which::Nino => &self.numbers.nino,
            Which::Phone => &self.numbers.phone,
        }
    }
}

/// The matches of `re` in `text` that lie in `windows` (sorted, disjoint), in order: what
/// `re.find_iter(text)` gives when every match lies in one of them. A window's end is a place
/// where `\b` reads as in the whole text, and the search starts with the text before it in view.
fn matches_in<'t>(
    re: &'t Regex,
    text: &'t str,
    windows: &'t [Range<usize>],
) -> impl Iterator<Item = regex::Match<'t>> + 't {
    windows.iter().flat_map(move |w| {
        let hay = text.get(..w.end).unwrap_or_default();
        let mut at = w.start;
        std::iter::from_fn(move || {
            let m = re.find_at(hay, at)?;
            at = m.end();
            Some(m)
        })
    })
}

/// Every sensitive value in `text`, in order, never overlapping: secrets first, then the
/// patterns above in order (a card number is not also a phone number).
pub fn find(text: &str) -> Vec<Finding> {
    find_with(text, Reach::windows)
}

fn find_with(text: &str, reach: fn(&str) -> Reach) -> Vec<Finding> {
    let view = Normalized::new(text);
    let seen = view.as_str();
    let mut found: Vec<Finding> = secret_spans(seen)
        .into_iter()
        .map(|span| Finding {
            kind: PiiKind::Secret,
            span,
        })
        .collect();
    let reach = reach(seen);
    for pattern in PATTERNS.iter() {
        for m in matches_in(&pattern.re, seen, reach.get(pattern.which)) {
            let overlaps = found
                .iter()
                .any(|f| f.span.start < m.end() && m.start() < f.span.end);
            if !overlaps
                && (pattern.check)(m.as_str())
                && !inside_identifier(pattern.kind, seen, m.range())
            {
                found.push(Finding {
                    kind: pattern.kind,
                    span: m.range(),
                });
            }
        }
    }
    for f in &mut found {
        f.span = view.original(f.span.clone());
    }
    found.sort_by_key(|f| f.span.start);
    found
}

/// Digits joined by a hyphen to letters or digits on either side are part of an identifier (a
/// UUID's `…-1234-5678-9012-…`), not a phone or card number.
fn inside_identifier(kind: PiiKind, text: &str, span: Range<usize>) -> bool {
    if !matches!(kind, PiiKind::Phone | PiiKind::Card | PiiKind::NationalId) {
        return false;
    }
    let before = text.get(..span.start).unwrap_or_default().chars().rev();
    let after = text.get(span.end..).unwrap_or_default().chars();
    let joined = |mut side: std::iter::Rev<std::str::Chars<'_>>| {
        side.next() == Some('-') && side.next().is_some_and(|c| c.is_ascii_alphanumeric())
    };
    let joined_after = |mut side: std::str::Chars<'_>| {
        side.next() == Some('-') && side.next().is_some_and(|c| c.is_ascii_alphanumeric())
    };
    joined(before) || joined_after(after)
}

/// `text` with each finding of a kind `select` accepts replaced by `[REDACTED:<kind>]`, and the
/// counts of what was replaced.
pub fn redact(text: &str, select: impl Fn(PiiKind) -> bool) -> (String, PiiCounts) {
    let mut counts = PiiCounts::new();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in find(text).into_iter().filter(|f| select(f.kind)) {
        out.push_str(text.get(at..f.span.start).unwrap_or_default());
        out.push_str("[REDACTED:");
        out.push_str(f.kind.as_str());
        out.push(']');
        at = f.span.end;
        *counts.entry(f.kind).or_default() += 1;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    (out, counts)
}

/// Applies `f` to every string inside `value` (object keys are left alone).
pub(crate) fn each_string(value: &mut serde_json::Value, f: &mut impl FnMut(&mut String)) {
    match value {
        serde_json::Value::String(s) => f(s),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| each_string(v, f)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| each_string(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
mod windows;
