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
//! value whole.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::normal::Normalized;
use crate::scrub::{ascii_classes, secret_spans};

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

struct Pattern {
    kind: PiiKind,
    re: Regex,
    check: Check,
}

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

/// The patterns, in the order they claim a span (a card number is not also a phone number).
struct Patterns {
    /// All of them: one pass tells which can match at all.
    set: RegexSet,
    patterns: Vec<Pattern>,
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| {
    let table: [(PiiKind, &str, Check); 6] = [
        (
            PiiKind::Email,
            r"\b[A-Za-z0-9._+\-]+(?:@|%40| ?[\[(]at[\])] ?)[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b",
            always,
        ),
        (
            PiiKind::Iban,
            r"(?i)\b[A-Z]{2}\d{2}(?:[ \-/_]?[A-Z0-9]){11,30}\b",
            iban,
        ),
        (PiiKind::Card, r"\b\d(?:[ \-/_]?\d){12,18}\b", luhn),
        (
            PiiKind::NationalId,
            r"\b\d{3}[ \-/_]\d{2}[ \-/_]\d{4}\b",
            ssn,
        ),
        (
            PiiKind::NationalId,
            r"(?i)\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z][ \-/_]?\d{2}[ \-/_]?\d{2}[ \-/_]?\d{2}[ \-/_]?[A-D]\b",
            always,
        ),
        (
            PiiKind::Phone,
            r"(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,4}\)|\b\d{2,4})[ .\-]\d{3,4}[ .\-]\d{3,4}\b|\+\d{8,15}\b",
            phone,
        ),
    ];
    let patterns: Vec<Pattern> = table
        .into_iter()
        .filter_map(|(kind, pattern, check)| {
            Some(Pattern {
                kind,
                re: Regex::new(&ascii_classes(pattern)).ok()?,
                check,
            })
        })
        .collect();
    let set =
        RegexSet::new(patterns.iter().map(|p| p.re.as_str())).unwrap_or_else(|_| RegexSet::empty());
    Patterns { set, patterns }
});

/// One sensitive value found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: PiiKind,
    pub span: Range<usize>,
}

/// Every sensitive value in `text`, in order, never overlapping: secrets first, then the
/// patterns above in order (a card number is not also a phone number).
pub fn find(text: &str) -> Vec<Finding> {
    let view = Normalized::new(text);
    let seen = view.as_str();
    let mut found: Vec<Finding> = secret_spans(seen)
        .into_iter()
        .map(|span| Finding {
            kind: PiiKind::Secret,
            span,
        })
        .collect();
    let all = &*PATTERNS;
    let numbers = has_long_number(seen);
    let mail = ["@", "%40", "[at]", "(at)"]
        .iter()
        .any(|n| seen.contains(n));
    let candidates = if numbers || mail {
        all.set.matches(seen).into_iter().collect()
    } else {
        Vec::new()
    };
    let run = candidates
        .into_iter()
        .filter_map(|i| all.patterns.get(i))
        .filter(|p| match p.kind {
            PiiKind::Email => mail,
            _ => numbers,
        });
    for pattern in run {
        for m in pattern.re.find_iter(seen) {
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

/// Whether `text` has a number of at least six digits (single separators allowed between
/// them): every pattern but the e-mail's needs one (a phone seven, a NINO six, a card thirteen,
/// an IBAN's digits run longer), so a text without one is not searched for them.
fn has_long_number(text: &str) -> bool {
    let (mut digits, mut gap) = (0u32, false);
    for b in text.bytes() {
        if b.is_ascii_digit() {
            digits += 1;
            gap = false;
            if digits >= 6 {
                return true;
            }
        } else if !gap && digits > 0 && b" -/_.()+".contains(&b) {
            gap = true;
        } else {
            digits = 0;
            gap = false;
        }
    }
    false
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
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<&'static str> {
        find(text).iter().map(|f| f.kind.as_str()).collect()
    }

    #[test]
    fn checksums() {
        assert!(luhn("4111 1111 1111 1111"));
        assert!(!luhn("4111 1111 1111 1112"));
        assert!(iban("DE89 3704 0044 0532 0130 00"));
        assert!(!iban("DE88 3704 0044 0532 0130 00"));
        assert!(ssn("123-45-6789"));
        assert!(!ssn("666-45-6789"));
    }

    #[test]
    fn each_kind_is_found() {
        let table = [
            ("mail me at jo.doe+x@example.co.uk", vec!["email"]),
            ("call +44 20 7946 0958 today", vec!["phone"]),
            ("or (555) 123-4567", vec!["phone"]),
            ("card 4111-1111-1111-1111 exp", vec!["card"]),
            ("IBAN GB82 WEST 1234 5698 7654 32", vec!["iban"]),
            ("ssn 123-45-6789", vec!["national_id"]),
            ("NI number AB 12 34 56 C", vec!["national_id"]),
            ("key sk-abcdefghijklmnop1234", vec!["secret"]),
            ("password=hunter22 ok", vec!["secret"]),
        ];
        for (text, expected) in table {
            assert_eq!(kinds(text), expected, "{text}");
        }
    }

    #[test]
    fn redaction_keeps_the_rest() {
        let (out, counts) = redact("write to a@b.io or c@d.io; pin 1234", |_| true);
        assert_eq!(
            out,
            "write to [REDACTED:email] or [REDACTED:email]; pin 1234"
        );
        assert_eq!(counts.get(&PiiKind::Email), Some(&2));
    }
}
