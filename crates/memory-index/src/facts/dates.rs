//! A date however a note writes it, as one value among its numbers: `12 June`, `June 12th`,
//! `12th of June`, `12/06`, `2025-06-12` are the day and month `d:6-12` (the year, when given,
//! is a number of its own); `March 2027` and `03/2027` are the month `m:3`.
//!
//! A numeric date whose two first parts could each be the day (`01/04`: the 1st of April in
//! Britain, the 4th of January in the US) is kept as both readings (`d?:1/4`), and
//! [`same_numbers`] takes the reading the other note gives, if it gives one.

use std::collections::BTreeSet;

use super::words::{calendar, month_number};

/// The date at token `i` written with a month's name: a day before it (`12 June`, `12th of
/// June`, and both days of `5 to 12 August`) or after it (`June 12th`), or a year after it
/// (`March 2027`); the values and how many tokens the date takes from `i`.
pub(super) fn named_date(
    tokens: &[&str],
    lowered: &[String],
    i: usize,
) -> Option<(Vec<String>, usize)> {
    let month_at = |k: usize| {
        let token = tokens.get(k)?;
        let capitalised = token.chars().next().is_some_and(char::is_uppercase);
        let lower = lowered.get(k)?;
        // A full name passes `calendar` as it is; `may` is a month only capitalised.
        let full = calendar(lower, capitalised).unwrap_or(lower);
        (full != "may" || capitalised).then_some(())?;
        month_number(full)
    };
    let day_at = |k: usize| lowered.get(k).and_then(|t| day(t));
    let date = |month: u32, day: u32| format!("d:{month}-{day}");
    if let Some(day) = day_at(i) {
        if let Some(month) = month_at(i + 1) {
            return Some((vec![date(month, day)], 2));
        }
        if lowered.get(i + 1).is_some_and(|t| t == "of")
            && let Some(month) = month_at(i + 2)
        {
            return Some((vec![date(month, day)], 3));
        }
        // A span or a pair of days in one month: `5 to 12 August`, `3 and 5 May`.
        if lowered
            .get(i + 1)
            .is_some_and(|t| matches!(t.as_str(), "to" | "and" | "until" | "till" | "or"))
            && let Some(last) = day_at(i + 2)
            && let Some(month) = month_at(i + 3)
        {
            return Some((vec![date(month, day), date(month, last)], 4));
        }
        return None;
    }
    let month = month_at(i)?;
    if let Some(day) = day_at(i + 1) {
        return Some((vec![date(month, day)], 2));
    }
    let year = lowered.get(i + 1).is_some_and(|t| is_year(t));
    year.then(|| (vec![format!("m:{month}")], 1))
}

/// A date written with digits (`22/08`, `01/04/2025`, `03/2027`, `2025-10-12`): its values (the
/// year a number of its own).
pub(super) fn numeric_date(token: &str) -> Option<Vec<String>> {
    let dashed = token.contains('-');
    let parts: Vec<&str> = token.split(['/', '-']).collect();
    let num = |s: &str| s.parse::<u32>().ok();
    match parts.as_slice() {
        [y, m, d] if dashed && y.len() == 4 => {
            let (m, d) = (num(m)?, num(d)?);
            (valid(m, d)).then(|| vec![format!("d:{m}-{d}"), trimmed(y)])
        }
        [m, y] if !dashed && y.len() == 4 => {
            let m = num(m)?;
            (1..=12)
                .contains(&m)
                .then(|| vec![format!("m:{m}"), trimmed(y)])
        }
        [a, b, y] if !dashed && matches!(y.len(), 2 | 4) => {
            let mut out = vec![two_ways(num(a)?, num(b)?)?];
            out.push(trimmed(y));
            Some(out)
        }
        [a, b] if !dashed => Some(vec![two_ways(num(a)?, num(b)?)?]),
        _ => None,
    }
}

/// Whether the numbers of two notes are the same, a date read both ways (`d?:a/b`) taking the
/// reading the other note gives.
pub(super) fn same_numbers(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    a == b || resolved(a, b) == resolved(b, a)
}

/// `x` with each date of two readings replaced by the one `other` holds, if it holds one.
fn resolved(x: &BTreeSet<String>, other: &BTreeSet<String>) -> BTreeSet<String> {
    x.iter()
        .map(|v| {
            readings(v)
                .and_then(|r| r.into_iter().find(|r| other.contains(r)))
                .unwrap_or_else(|| v.clone())
        })
        .collect()
}

/// The two readings of `d?:a/b`: day `a` of month `b`, or day `b` of month `a`.
fn readings(value: &str) -> Option<[String; 2]> {
    let (a, b) = value.strip_prefix("d?:")?.split_once('/')?;
    Some([format!("d:{b}-{a}"), format!("d:{a}-{b}")])
}

/// `a/b` as a date: day first or month first, whichever is a date; both (`d?:`) when both are.
fn two_ways(a: u32, b: u32) -> Option<String> {
    match (valid(b, a), valid(a, b)) {
        (true, true) if a == b => Some(format!("d:{a}-{b}")),
        (true, true) => Some(format!("d?:{a}/{b}")),
        (true, false) => Some(format!("d:{b}-{a}")),
        (false, true) => Some(format!("d:{a}-{b}")),
        (false, false) => None,
    }
}

fn valid(month: u32, day: u32) -> bool {
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

/// A day of the month: 1–31 in digits, with or without its ordinal (`12`, `12th`, `1st`).
fn day(lower: &str) -> Option<u32> {
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &lower[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() {
        return None;
    }
    let n: u32 = digits.parse().ok()?;
    (1..=31).contains(&n).then_some(n)
}

fn is_year(lower: &str) -> bool {
    lower.len() == 4 && lower.chars().all(|c| c.is_ascii_digit())
}

fn trimmed(digits: &str) -> String {
    digits.trim_start_matches('0').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(text: &str) -> BTreeSet<String> {
        crate::facts::Parsed::of(text).numbers
    }

    #[test]
    fn a_date_is_one_value_however_it_is_written() {
        for (a, b) in [
            ("on 12 June", "on June 12th"),
            ("on 12th of June", "on 12/06"),
            ("on 2025-10-12", "on 12 October 2025"),
            ("expires March 2027", "expires 03/2027"),
            ("birthday is 22/08", "birthday is August 22"),
            ("renews on 01/04/2025", "renews on 1 April 2025"),
            ("renews on 04/01/2025", "renews on 1 April 2025"),
            ("due 3 May", "due May 3rd"),
            ("from 5 to 12 August", "from August 5th to August 12th"),
            ("salary $85,000", "salary 85k USD"),
        ] {
            assert!(
                same_numbers(&numbers(a), &numbers(b)),
                "{a} / {b}: {:?} {:?}",
                numbers(a),
                numbers(b)
            );
        }
        for (a, b) in [
            ("on 3 May", "on 5 March"),
            ("on 12 June", "on 12 July"),
            ("from 5 to 12 August", "from 5 to 19 August"),
            ("on 22/08", "on 22/09"),
            ("on 01/04/2025", "on 1 May 2025"),
            ("expires March 2027", "expires March 2028"),
            ("ran a 5k", "ran 5,000 miles"),
            ("rent 1,200", "rent 1,200 pounds a month for 2 years"),
        ] {
            assert!(
                !same_numbers(&numbers(a), &numbers(b)),
                "{a} / {b}: {:?} {:?}",
                numbers(a),
                numbers(b)
            );
        }
        assert!(
            numbers("in May we may go").is_empty(),
            "a month alone is a name"
        );
    }
}
