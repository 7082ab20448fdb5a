//! The calendar words of a query's time expressions (see [`super::when`]): dates, months,
//! seasons and years, and the local-date spans they name.

use chrono::{Datelike, Months, NaiveDate};
use memory_index::facts::MONTHS;

/// Local dates `[from, to)`, either side open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) from: Option<NaiveDate>,
    pub(super) to: Option<NaiveDate>,
}

impl Span {
    pub(super) fn days(from: NaiveDate, to: NaiveDate) -> Self {
        Self {
            from: Some(from),
            to: Some(to),
        }
    }
}

#[derive(Debug)]
pub(super) struct Tok<'a> {
    pub(super) word: String,
    pub(super) raw: &'a str,
    pub(super) start: usize,
    pub(super) end: usize,
    /// The character right after the word.
    pub(super) then: Option<char>,
}

/// 1..=12 for a month name or its three-letter abbreviation ("sept" too).
pub(super) fn month(word: &str) -> Option<u32> {
    let at = MONTHS.iter().position(|m| {
        *m == word
            || (word.len() == 3 && m.starts_with(word))
            || (word == "sept" && *m == "september")
    })?;
    u32::try_from(at + 1).ok()
}

/// Whether `word` is a month's whole name (not an abbreviation).
pub(super) fn is_full_month(word: &str) -> bool {
    MONTHS.contains(&word)
}

/// Words after which a month, season or year is surely a time.
const PREPOSITIONS: [&str; 12] = [
    "in", "during", "on", "of", "since", "before", "after", "until", "from", "early", "late", "mid",
];

pub(super) fn after_preposition(toks: &[Tok<'_>], i: usize) -> bool {
    i.checked_sub(1)
        .and_then(|p| toks.get(p))
        .is_some_and(|t| PREPOSITIONS.contains(&t.word.as_str()) || t.word == "the")
}

/// A year 1900..=2199.
pub(super) fn year(word: &str) -> Option<i32> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| (1900..=2199).contains(y))
}

/// A day of the month: `13`, `13th`, `1st`.
pub(super) fn day_number(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if digits.is_empty() || digits.len() > 2 || !["", "st", "nd", "rd", "th"].contains(&suffix) {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

pub(super) fn month_start(y: i32, m: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, 1)
}

pub(super) fn month_span(start: NaiveDate) -> Option<Span> {
    Some(Span::days(start, start.checked_add_months(Months::new(1))?))
}

pub(super) fn year_span(y: i32) -> Option<Span> {
    Some(Span::days(
        NaiveDate::from_ymd_opt(y, 1, 1)?,
        NaiveDate::from_ymd_opt(y + 1, 1, 1)?,
    ))
}

pub(super) fn day_span(d: NaiveDate) -> Option<Span> {
    Some(Span::days(d, d.succ_opt()?))
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Season {
    Spring,
    Summer,
    Autumn,
    Winter,
}

pub(super) fn season(word: &str) -> Option<Season> {
    match word {
        "spring" => Some(Season::Spring),
        "summer" => Some(Season::Summer),
        "autumn" | "fall" => Some(Season::Autumn),
        "winter" => Some(Season::Winter),
        _ => None,
    }
}

/// The season of year `y` (winter: December of `y` to February of `y + 1`).
pub(super) fn season_span(y: i32, s: Season) -> Option<Span> {
    let first = match s {
        Season::Spring => 3,
        Season::Summer => 6,
        Season::Autumn => 9,
        Season::Winter => 12,
    };
    let start = month_start(y, first)?;
    Some(Span::days(start, start.checked_add_months(Months::new(3))?))
}

/// A date, a month, a season or a year.
pub(super) fn absolute(toks: &[Tok<'_>], i: usize, today: NaiveDate) -> Option<(Span, usize)> {
    let t = toks.get(i)?;
    let word = t.word.as_str();
    let at = |k: usize| toks.get(i + k).map(|t| t.word.as_str());
    // 2023-07-07
    if let Some(y) = year(word)
        && let (Some(m), Some(d)) = (toks.get(i + 1), toks.get(i + 2))
        && t.then == Some('-')
        && m.then == Some('-')
        && t.end + 1 == m.start
        && m.end + 1 == d.start
    {
        let date = NaiveDate::from_ymd_opt(y, m.word.parse().ok()?, d.word.parse().ok()?)?;
        return Some((day_span(date)?, 3));
    }
    // October 13, 2023 / October 13 / October 2023 / (in) October
    if let Some(m) = month(word) {
        if let Some(d) = at(1).and_then(day_number) {
            if let Some(y) = at(2).and_then(year) {
                return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?)?, 3));
            }
            return Some((day_span(latest_day(today, m, d)?)?, 2));
        }
        if let Some(y) = at(1).and_then(year) {
            return Some((month_span(month_start(y, m)?)?, 2));
        }
        let full = MONTHS.contains(&word);
        if after_preposition(toks, i) && (full || t.raw.starts_with(char::is_uppercase)) {
            let this_year = month_start(today.year(), m)?;
            let start = match this_year <= today {
                true => this_year,
                false => month_start(today.year() - 1, m)?,
            };
            return Some((month_span(start)?, 1));
        }
        return None;
    }
    // 13 October 2023 / 13 October
    if let Some(d) = day_number(word)
        && let Some(m) = at(1).and_then(month)
    {
        if let Some(y) = at(2).and_then(year) {
            return Some((day_span(NaiveDate::from_ymd_opt(y, m, d)?)?, 3));
        }
        return Some((day_span(latest_day(today, m, d)?)?, 2));
    }
    if let Some(s) = season(word) {
        if let Some(y) = at(1).and_then(year) {
            return Some((season_span(y, s)?, 2));
        }
        if after_preposition(toks, i) {
            let this_year = season_span(today.year(), s)?;
            let span = match this_year.from.is_some_and(|f| f <= today) {
                true => this_year,
                false => season_span(today.year() - 1, s)?,
            };
            return Some((span, 1));
        }
        return None;
    }
    if let Some(y) = year(word).filter(|_| after_preposition(toks, i)) {
        return Some((year_span(y)?, 1));
    }
    None
}

/// Month `m`, day `d` of this year if that day has come, else of last year.
pub(super) fn latest_day(today: NaiveDate, m: u32, d: u32) -> Option<NaiveDate> {
    match NaiveDate::from_ymd_opt(today.year(), m, d) {
        Some(date) if date <= today => Some(date),
        _ => NaiveDate::from_ymd_opt(today.year() - 1, m, d),
    }
}
