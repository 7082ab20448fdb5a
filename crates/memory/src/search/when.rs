//! Time expressions in a search query ("yesterday", "last week", "in May", "two days ago", "in
//! 2023", "on October 13, 2023", "the week before August 3, 2023"), read deterministically in the
//! user's time zone relative to an injectable "now" ([`QueryTime`]) into a span of instants
//! ([`TimeRange`], start inclusive, end exclusive, either side open).
//!
//! Days start at local midnight (or at the first local instant of the day when a change of clocks
//! skips midnight), so a day is 23 or 25 hours long across a DST change. Weeks start on Monday;
//! "last week" is the previous calendar week, "past week" the seven days up to today; "last
//! weekend" is the Saturday and Sunday before the current week. "Last" with a month or a season
//! ("last December", "last winter") is the latest one that has ended; "this winter" is the one
//! under way (begun last December), else this year's. "This morning" (afternoon, evening) is
//! today; "last night" is yesterday and today (its evening or today's small hours). A month or a day without a year is
//! its latest occurrence that has started by today. Seasons are the northern meteorological ones
//! (summer = June–August). Words that are also ordinary words ("may", "march", "fall") count as
//! time only next to a preposition ("in May"), a day number or a year. "Before" / "after" / "since" /
//! "until" take a date as anchor. A weekday alone ("on Tuesday") is the latest one before today;
//! "a few days (weeks, months) ago" is two to six of them back, "the other day" the six days
//! before today; "an hour ago" (minutes, hours) the day of that moment. "Recently" is no span:
//! in LoCoMo's questions it means "lately, as of when it was said", and read as the past
//! fortnight it cost single-hop questions 0.02 (`docs/benchmarks.md`).
//! The first expression of the query is used. An event as anchor
//! ("before the trip") is no date: [`event_anchor`] (in `when_events`) finds its words, the store
//! dates the event from the user's memory (`search::anchors`) and the span is then computed here
//! (`beside`) as for a date; [`time_range`] alone never reads one.

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeZone, Utc, Weekday};
use chrono_tz::Tz;

use super::when_dates::{
    Span, Tok, absolute, day_span, month, month_span, month_start, season, season_span, year_span,
};
pub use super::when_events::{EventAnchor, EventDate, event_anchor, event_date};

/// When a query is asked, and in which time zone its words about time are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryTime {
    pub now: DateTime<Utc>,
    pub tz: Tz,
}

impl QueryTime {
    /// Now, in `tz`.
    pub fn now_in(tz: Tz) -> Self {
        Self {
            now: Utc::now(),
            tz,
        }
    }
}

/// The span of time a query speaks of: `[start, end)`, `None` = open on that side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeRange {
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
    /// The words of the query that said it.
    pub phrase: String,
    /// When the anchor is an event ("before the trip"): the memory that dated it.
    pub event: Option<EventDate>,
}

/// The first time expression of `text`, read at `at`.
pub fn time_range(text: &str, at: &QueryTime) -> Option<TimeRange> {
    let toks = tokens(text);
    let today = at.now.with_timezone(&at.tz).date_naive();
    let (span, from, to) = anchored(&toks, today).or_else(|| {
        (0..toks.len()).find_map(|i| {
            let (span, n) = single(&toks, i, today).or_else(|| hours_ago(&toks, i, at))?;
            Some((span, i, i + n))
        })
    })?;
    Some(in_zone(
        span,
        at.tz,
        &text[toks[from].start..toks[to - 1].end],
    ))
}

/// `span`'s local dates as instants in `tz`, said by `phrase`.
pub(super) fn in_zone(span: Span, tz: Tz, phrase: &str) -> TimeRange {
    TimeRange {
        start: span.from.map(|d| local_midnight(tz, d)),
        end: span.to.map(|d| local_midnight(tz, d)),
        phrase: phrase.to_owned(),
        event: None,
    }
}

pub(super) fn tokens(text: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push(Tok {
                    word: text[s..i].to_lowercase(),
                    raw: &text[s..i],
                    start: s,
                    end: i,
                    then: text[i..].chars().next(),
                });
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// The first instant of local date `d` in `tz`.
fn local_midnight(tz: Tz, d: NaiveDate) -> DateTime<Utc> {
    // A change of clocks may skip midnight: then the day starts at its first existing hour.
    (0..24)
        .filter_map(|h| d.and_hms_opt(h, 0, 0))
        .find_map(|t| tz.from_local_datetime(&t).earliest())
        .map_or_else(
            || d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc(),
            |t| t.with_timezone(&Utc),
        )
}

const UNITS: [(&str, Unit); 10] = [
    ("day", Unit::Day),
    ("days", Unit::Day),
    ("week", Unit::Week),
    ("weeks", Unit::Week),
    ("weekend", Unit::Weekend),
    ("weekends", Unit::Weekend),
    ("month", Unit::Month),
    ("months", Unit::Month),
    ("year", Unit::Year),
    ("years", Unit::Year),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Day,
    Week,
    Weekend,
    Month,
    Year,
}

fn unit(word: &str) -> Option<Unit> {
    UNITS.iter().find(|(w, _)| *w == word).map(|(_, u)| *u)
}

/// A unit, a weekday, a month or a season: a word of the calendar, never an event.
pub(super) fn is_calendar_word(word: &str) -> bool {
    unit(word).is_some()
        || weekday(word).is_some()
        || month(word).is_some()
        || season(word).is_some()
}

const NUMBER_WORDS: [&str; 13] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
];

/// A count: digits (up to 999), a number word, "a"/"an", "a couple of" (2).
fn count(toks: &[Tok<'_>], i: usize) -> Option<(u32, usize)> {
    let w = toks.get(i)?.word.as_str();
    if w == "a" || w == "an" {
        if toks.get(i + 1).is_some_and(|t| t.word == "couple")
            && toks.get(i + 2).is_some_and(|t| t.word == "of")
        {
            return Some((2, 3));
        }
        return Some((1, 1));
    }
    if let Some(n) = NUMBER_WORDS.iter().position(|n| *n == w) {
        return u32::try_from(n).ok().map(|n| (n, 1));
    }
    (w.len() <= 3 && w.bytes().all(|b| b.is_ascii_digit()))
        .then(|| w.parse().ok())
        .flatten()
        .map(|n| (n, 1))
}

const WEEKDAYS: [(&str, Weekday); 7] = [
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
    ("sunday", Weekday::Sun),
];

fn weekday(word: &str) -> Option<Weekday> {
    WEEKDAYS.iter().find(|(w, _)| *w == word).map(|(_, d)| *d)
}

fn week_start(d: NaiveDate) -> Option<NaiveDate> {
    d.checked_sub_days(Days::new(u64::from(d.weekday().num_days_from_monday())))
}

fn add_days(d: NaiveDate, n: i64) -> Option<NaiveDate> {
    match u64::try_from(n) {
        Ok(n) => d.checked_add_days(Days::new(n)),
        Err(_) => d.checked_sub_days(Days::new(n.unsigned_abs())),
    }
}

/// How a span sits against its anchor: "before", "until", "after", "since".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Before,
    Until,
    After,
    Since,
}

pub(super) fn side(word: &str) -> Option<Side> {
    match word {
        "before" => Some(Side::Before),
        "until" => Some(Side::Until),
        "after" => Some(Side::After),
        "since" => Some(Side::Since),
        _ => None,
    }
}

/// "before <date>" and the like, with what comes just before it ("the week before …").
fn anchored(toks: &[Tok<'_>], today: NaiveDate) -> Option<(Span, usize, usize)> {
    (0..toks.len()).find_map(|i| {
        let s = side(&toks[i].word)?;
        let (anchor, n) = single(toks, i + 1, today)?;
        let (span, from) = beside(toks, i, s, anchor)?;
        Some((span, from, i + 1 + n))
    })
}

/// The span on side `s` of `anchor`, the preposition being token `at`, and where its words
/// start (a unit before the preposition, "the week before …", takes that unit).
pub(super) fn beside(toks: &[Tok<'_>], at: usize, s: Side, anchor: Span) -> Option<(Span, usize)> {
    if let Some(found) = unit_beside(toks, at, anchor, s == Side::Before) {
        return Some(found);
    }
    let span = match s {
        Side::Before => Span {
            from: None,
            to: anchor.from,
        },
        Side::Until => Span {
            from: None,
            to: anchor.to,
        },
        Side::After => Span {
            from: anchor.to,
            to: None,
        },
        Side::Since => Span {
            from: anchor.from,
            to: None,
        },
    };
    Some((span, at))
}

/// "[N|the|last] <unit> before/after <anchor>" ending at token `at` (the preposition): the span of
/// that unit next to the anchor, and where the words start.
fn unit_beside(toks: &[Tok<'_>], at: usize, anchor: Span, before: bool) -> Option<(Span, usize)> {
    let u = unit(&toks.get(at.checked_sub(1)?)?.word)?;
    let mut from = at - 1;
    let mut n = 1;
    if let Some(p) = from.checked_sub(1) {
        if let Some((k, used)) = (0..=p)
            .rev()
            .take(3)
            .find_map(|s| count(toks, s).filter(|(_, used)| s + used == from))
        {
            n = k;
            from -= used;
        } else if ["the", "last", "that"].contains(&toks[p].word.as_str()) {
            from = p;
        }
    }
    let n = i64::from(n);
    let span = if before {
        let edge = anchor.from?;
        match u {
            Unit::Day => Span::days(add_days(edge, -n)?, add_days(edge, 1 - n)?),
            Unit::Week => Span::days(add_days(edge, -7 * n)?, add_days(edge, 7 - 7 * n)?),
            Unit::Weekend => {
                let sat = add_days(week_start(edge)?, -2 - 7 * (n - 1))?;
                Span::days(sat, add_days(sat, 2)?)
            }
            Unit::Month => Span::days(
                edge.checked_sub_months(Months::new(u32::try_from(n).ok()?))?,
                edge.checked_sub_months(Months::new(u32::try_from(n - 1).ok()?))?,
            ),
            Unit::Year => Span::days(
                edge.checked_sub_months(Months::new(u32::try_from(12 * n).ok()?))?,
                edge.checked_sub_months(Months::new(u32::try_from(12 * (n - 1)).ok()?))?,
            ),
        }
    } else {
        let edge = anchor.to?;
        let days = match u {
            Unit::Day => 1,
            Unit::Week | Unit::Weekend => 7,
            Unit::Month => 30,
            Unit::Year => 365,
        };
        Span::days(add_days(edge, days * (n - 1))?, add_days(edge, days * n)?)
    };
    Some((span, from))
}

/// One expression starting at token `i`: its span and how many tokens it takes.
fn single(toks: &[Tok<'_>], i: usize, today: NaiveDate) -> Option<(Span, usize)> {
    relative(toks, i, today).or_else(|| absolute(toks, i, today))
}

fn relative(toks: &[Tok<'_>], i: usize, today: NaiveDate) -> Option<(Span, usize)> {
    let word = toks.get(i)?.word.as_str();
    let next = toks.get(i + 1).map(|t| t.word.as_str());
    match word {
        "today" | "tonight" => return Some((day_span(today)?, 1)),
        "yesterday" => return Some((day_span(today.pred_opt()?)?, 1)),
        "last" | "past" | "this" => {
            if let Some((n, used)) = count(toks, i + 1).filter(|_| word != "this")
                && let Some(u) = toks.get(i + 1 + used).and_then(|t| unit(&t.word))
            {
                // "the last 3 days": the N units up to today.
                return Some((recent(today, u, n)?, 2 + used));
            }
            let next = next?;
            if let Some(u) = unit(next) {
                let span = match (word, u) {
                    ("past", u) => recent(today, u, 1)?,
                    ("this", u) => ago(today, u, 0)?,
                    ("last", Unit::Weekend) => ago(today, Unit::Weekend, 1)?,
                    (_, u) => ago(today, u, 1)?,
                };
                return Some((span, 2));
            }
            if let Some(d) = weekday(next) {
                return Some((day_span(latest_before(today, d)?)?, 2));
            }
            if let Some(s) = season(next) {
                let this_year = season_span(today.year(), s)?;
                let last_year = season_span(today.year() - 1, s)?;
                let span = match word {
                    // The season under way (a winter begun last December), else this year's.
                    "this" if covers(last_year, today) => last_year,
                    "this" => this_year,
                    // The latest one that has ended.
                    _ => [this_year, last_year, season_span(today.year() - 2, s)?]
                        .into_iter()
                        .find(|span| span.to.is_some_and(|end| end <= today))?,
                };
                return Some((span, 2));
            }
            match (word, next) {
                ("this", "morning" | "afternoon" | "evening") => {
                    return Some((day_span(today)?, 2));
                }
                // Yesterday evening, or the small hours of today.
                ("last", "night") => {
                    return Some((Span::days(today.pred_opt()?, today.succ_opt()?), 2));
                }
                _ => {}
            }
            if word != "past"
                && let Some(m) = month(next)
                && month_after_last_or_this(&toks[i + 1], word)
            {
                let this_year = month_start(today.year(), m)?;
                let start = match word {
                    "this" => this_year,
                    // The latest one that has ended ("last December" asked in January).
                    _ if month_span(this_year)?.to.is_some_and(|end| end <= today) => this_year,
                    _ => month_start(today.year() - 1, m)?,
                };
                return Some((month_span(start)?, 2));
            }
            return None;
        }
        // A weekday alone ("on Tuesday", "since Monday"): the latest one before today; "every
        // Tuesday" is a habit, no day.
        _ if let Some(d) = weekday(word) => {
            let habit = i
                .checked_sub(1)
                .is_some_and(|p| ["every", "each"].contains(&toks[p].word.as_str()));
            return (!habit)
                .then(|| Some((day_span(latest_before(today, d)?)?, 1)))
                .flatten();
        }
        "the" if next == Some("other") && toks.get(i + 2).is_some_and(|t| t.word == "day") => {
            return Some((Span::days(add_days(today, -6)?, today), 3));
        }
        _ => {}
    }
    // "a few units ago": two to six of them back.
    let few = match (word, next) {
        ("a", Some("few")) => Some(2),
        ("few", _) => Some(1),
        _ => None,
    };
    if let Some(used) = few
        && let Some(u) = toks.get(i + used).and_then(|t| unit(&t.word))
        && toks.get(i + used + 1).is_some_and(|t| t.word == "ago")
    {
        let (far, near) = (ago(today, u, 6)?, ago(today, u, 2)?);
        let span = Span {
            from: far.from,
            to: near.to,
        };
        return Some((span, used + 2));
    }
    // "N units ago"
    let (n, used) = count(toks, i)?;
    let u = unit(&toks.get(i + used)?.word)?;
    (toks.get(i + used + 1)?.word == "ago").then_some(())?;
    Some((ago(today, u, n)?, used + 2))
}

/// The latest day named `d` before today (one to seven days back).
fn latest_before(today: NaiveDate, d: Weekday) -> Option<NaiveDate> {
    let back = (7 + today.weekday().num_days_from_monday() - d.num_days_from_monday()) % 7;
    add_days(today, -i64::from(if back == 0 { 7 } else { back }))
}

/// "an hour ago", "20 minutes ago", "5 hours ago": the local day of that moment (a search
/// ranks by day, not by the minute).
fn hours_ago(toks: &[Tok<'_>], i: usize, at: &QueryTime) -> Option<(Span, usize)> {
    let (n, used) = count(toks, i)?;
    let minutes = match toks.get(i + used)?.word.as_str() {
        "hour" | "hours" => 60 * i64::from(n),
        "minute" | "minutes" => i64::from(n),
        _ => return None,
    };
    (toks.get(i + used + 1)?.word == "ago").then_some(())?;
    let then = at
        .now
        .checked_sub_signed(chrono::Duration::minutes(minutes))?;
    Some((day_span(then.with_timezone(&at.tz).date_naive())?, used + 2))
}

/// Whether `span` holds the day `d`.
fn covers(span: Span, d: NaiveDate) -> bool {
    span.from.is_none_or(|from| from <= d) && span.to.is_none_or(|to| d < to)
}

/// Whether month word `t` after "last" or "this" names the month: a full name, or a capitalised
/// abbreviation; "may" and "march" after "this" only capitalised ("this may help").
fn month_after_last_or_this(t: &Tok<'_>, word: &str) -> bool {
    let capital = t.raw.starts_with(char::is_uppercase);
    let full = super::when_dates::is_full_month(&t.word);
    match t.word.as_str() {
        "may" | "march" if word == "this" => capital,
        _ => full || capital,
    }
}

/// The calendar unit `n` units back from today's (0 = the current one).
fn ago(today: NaiveDate, u: Unit, n: u32) -> Option<Span> {
    let n64 = i64::from(n);
    match u {
        Unit::Day => day_span(add_days(today, -n64)?),
        Unit::Week => {
            let start = add_days(week_start(today)?, -7 * n64)?;
            Some(Span::days(start, add_days(start, 7)?))
        }
        Unit::Weekend => {
            let sat = add_days(week_start(today)?, 5 - 7 * n64)?;
            Some(Span::days(sat, add_days(sat, 2)?))
        }
        Unit::Month => month_span(
            month_start(today.year(), today.month())?.checked_sub_months(Months::new(n))?,
        ),
        Unit::Year => year_span(today.year() - i32::try_from(n).ok()?),
    }
}

/// The `n` units up to and including today.
fn recent(today: NaiveDate, u: Unit, n: u32) -> Option<Span> {
    let n = i64::from(n);
    let from = match u {
        Unit::Day => add_days(today, 1 - n)?,
        Unit::Week | Unit::Weekend => add_days(today, 1 - 7 * n)?,
        Unit::Month => today.checked_sub_months(Months::new(u32::try_from(n).ok()?))?,
        Unit::Year => today.checked_sub_months(Months::new(u32::try_from(12 * n).ok()?))?,
    };
    Some(Span::days(from, today.succ_opt()?))
}

#[cfg(test)]
#[path = "when_tests.rs"]
mod tests;
