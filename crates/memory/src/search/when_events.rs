//! Events as anchors of a time ("before the trip", "after my surgery", "since we moved to
//! Berlin", "the week after the wedding", "until the exam"). Only the user's memory knows when
//! the event was, so reading one takes two pure steps around a lookup: [`event_anchor`] finds the
//! event's words in the query, the store finds the memory that best matches them
//! (`search::anchors`), [`event_date`] dates that memory, and [`EventAnchor::range`] turns the
//! date into the span, exactly as "before <date>" would be read. [`TimeRange::describe`] says how
//! a query's time was read.

use chrono::{DateTime, Days, NaiveDate, Utc};
use chrono_tz::Tz;

use super::query::HitSource;
use super::when::{QueryTime, Side, TimeRange, beside, in_zone, side, time_range, tokens};
use super::when_dates::Span;

/// Words that open an event after the preposition. Without one, the preposition is an
/// ordinary word ("named after", "since then", "before noon").
const OPENERS: [&str; 13] = [
    "the", "my", "our", "we", "i", "his", "her", "their", "your", "you", "he", "she", "they",
];

/// Words after which the question goes on: the event's words end before them.
const CLOSERS: [&str; 16] = [
    "and", "or", "but", "when", "what", "where", "which", "who", "how", "why", "did", "do", "does",
    "so", "because", "while",
];

/// Most words an event takes after its opener.
const MAX_EVENT_WORDS: usize = 6;

/// Longest excerpt of the dating memory kept to say how a time was read.
const EXCERPT_CHARS: usize = 60;

/// An event named as the anchor of a time, not dated yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventAnchor {
    /// The preposition and the event: "before the trip".
    pub phrase: String,
    /// The event's words, looked up in memory: "the trip".
    pub event: String,
    text: String,
    /// Token of the preposition, and the token after the event's last word.
    at: usize,
    end: usize,
    side: Side,
}

/// The memory that dates an event, and the local days it dates it to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventDate {
    /// The start of the memory's text.
    pub excerpt: String,
    pub source: HitSource,
    /// When it was saved (a note) or said (a message).
    pub saved_at: DateTime<Utc>,
    /// The event's local days `[from, to)`.
    pub from: NaiveDate,
    pub to: NaiveDate,
    /// The memory's text states those days ("trip to Lisbon on 3 May"); otherwise they are the
    /// day it was saved or said.
    pub stated: bool,
}

/// The first "before/after/since/until" of `text` followed by an event ("the trip", "my
/// surgery", "we moved to Berlin"): its words run to a punctuation mark, a word that goes on
/// with the question ("and", "did", "what" …) or [`MAX_EVENT_WORDS`] words. `None` when there is
/// none. A date as anchor is [`time_range`]'s and comes first.
pub fn event_anchor(text: &str) -> Option<EventAnchor> {
    let toks = tokens(text);
    (0..toks.len()).find_map(|at| {
        let side = side(&toks[at].word)?;
        let opener = toks.get(at + 1)?;
        if !OPENERS.contains(&opener.word.as_str()) || toks[at].then.is_some_and(is_stop) {
            return None;
        }
        let mut end = at + 1;
        let mut words = 0;
        for t in &toks[at + 1..] {
            if end > at + 1 && (CLOSERS.contains(&t.word.as_str()) || words == MAX_EVENT_WORDS) {
                break;
            }
            end += 1;
            if !OPENERS.contains(&t.word.as_str()) {
                words += 1;
            }
            if t.then.is_some_and(is_stop) {
                break;
            }
        }
        (words > 0).then(|| EventAnchor {
            phrase: text[toks[at].start..toks[end - 1].end].to_owned(),
            event: text[opener.start..toks[end - 1].end].to_owned(),
            text: text.to_owned(),
            at,
            end,
            side,
        })
    })
}

fn is_stop(c: char) -> bool {
    matches!(c, ',' | '.' | ';' | ':' | '?' | '!' | '(' | ')' | '"')
}

/// The days the memory `text`, saved or said at `saved_at`, dates its event to, in `tz`: the
/// closed span of the first date it states (relative words read as of when it was written:
/// "back from the trip yesterday"), else the local day it was written.
pub fn event_date(text: &str, source: HitSource, saved_at: DateTime<Utc>, tz: Tz) -> EventDate {
    let day = |t: DateTime<Utc>| t.with_timezone(&tz).date_naive();
    let written = day(saved_at);
    let stated = time_range(text, &QueryTime { now: saved_at, tz })
        .and_then(|r| Some((day(r.start?), day(r.end?))))
        .filter(|(from, to)| from < to);
    let (from, to) = stated.unwrap_or((written, written.succ_opt().unwrap_or(written)));
    let mut excerpt: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some((cut, _)) = excerpt.char_indices().nth(EXCERPT_CHARS) {
        excerpt.truncate(cut);
        excerpt.push('…');
    }
    EventDate {
        excerpt,
        source,
        saved_at,
        from,
        to,
        stated: stated.is_some(),
    }
}

impl EventAnchor {
    /// The span the query speaks of once its event is dated, in `tz` ("the week before the
    /// trip": the seven days before the event's first day).
    pub fn range(&self, event: EventDate, tz: Tz) -> Option<TimeRange> {
        let toks = tokens(&self.text);
        let anchor = Span::days(event.from, event.to);
        let (span, from) = beside(&toks, self.at, self.side, anchor)?;
        let phrase = &self.text[toks.get(from)?.start..toks.get(self.end - 1)?.end];
        let mut range = in_zone(span, tz, phrase);
        range.event = Some(event);
        Some(range)
    }
}

impl TimeRange {
    /// How the query's words were read, in `tz`: `read "last week" as 2 June 2024 to 8 June
    /// 2024`, `read "before the trip" as before 3 May 2026 (when "Trip to Lisbon" was saved)`.
    pub fn describe(&self, tz: Tz) -> String {
        let day = |t: DateTime<Utc>| t.with_timezone(&tz).date_naive();
        let fmt = |d: NaiveDate| d.format("%-d %B %Y").to_string();
        let span = match (self.start.map(day), self.end.map(day)) {
            (None, Some(end)) => format!("before {}", fmt(end)),
            (Some(start), None) => format!("from {} on", fmt(start)),
            (Some(start), Some(end)) => match end.checked_sub_days(Days::new(1)) {
                Some(last) if last > start => format!("{} to {}", fmt(start), fmt(last)),
                _ => format!("on {}", fmt(start)),
            },
            (None, None) => "any time".to_owned(),
        };
        let event = self.event.as_ref().map_or(String::new(), |e| {
            let excerpt = &e.excerpt;
            match (e.stated, e.source) {
                (true, _) => format!(" (the date \"{excerpt}\" states)"),
                (false, HitSource::UserMemory) => format!(" (when \"{excerpt}\" was saved)"),
                (false, HitSource::Conversation) => format!(" (when \"{excerpt}\" was said)"),
            }
        });
        format!("read \"{}\" as {span}{event}", self.phrase)
    }
}

#[cfg(test)]
#[path = "when_events_tests.rs"]
mod tests;
