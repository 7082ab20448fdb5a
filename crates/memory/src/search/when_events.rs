//! Events as anchors of a time ("before the trip", "after my surgery", "since we moved to
//! Berlin", "the week after the wedding", "until the exam", "after surgery", "since
//! retirement", "during the trip", "at the wedding"). Only the user's memory knows when
//! the event was, so reading one takes two pure steps around a lookup: [`event_anchor`] finds the
//! event's words in the query, the store finds the memory that best matches them
//! (`search::anchors`), [`event_date`] dates that memory, and [`EventAnchor::range`] turns the
//! date into the span, exactly as "before <date>" would be read. [`TimeRange::describe`] says how
//! a query's time was read.

use chrono::{DateTime, Days, NaiveDate, SecondsFormat, Utc};
use chrono_tz::Tz;
use memory_index::terms::query_index_terms;
use types::TimeReadView;

use super::query::HitSource;
use super::when::{
    QueryTime, Side, TimeRange, beside, in_zone, is_calendar_word, side, time_range, tokens,
};
use super::when_dates::{Span, Tok};

/// Words that open an event after the preposition: determiners ("before the trip", "at my
/// graduation") and, after a preposition of one side, the subject of a clause ("since we moved").
const DETERMINERS: [&str; 7] = ["the", "my", "our", "his", "her", "their", "your"];
const SUBJECTS: [&str; 6] = ["we", "i", "you", "he", "she", "they"];

/// Words after which the question goes on: the event's words end before them.
const CLOSERS: [&str; 16] = [
    "and", "or", "but", "when", "what", "where", "which", "who", "how", "why", "did", "do", "does",
    "so", "because", "while",
];

/// Words that never start an event: they name a time or point back ("since then", "before the
/// end", "after the week"), or are no thing at all ("after it", "before all").
const NOT_EVENTS: [&str; 29] = [
    "then",
    "now",
    "noon",
    "midnight",
    "today",
    "tonight",
    "tomorrow",
    "yesterday",
    "moment",
    "time",
    "times",
    "end",
    "start",
    "beginning",
    "same",
    "all",
    "ever",
    "long",
    "once",
    "it",
    "that",
    "this",
    "these",
    "those",
    "me",
    "him",
    "us",
    "them",
    "everything",
];

/// Times of every day: without an opener they are no event ("after dinner", "before work").
const DAILY: [&str; 17] = [
    "dawn",
    "sunrise",
    "morning",
    "breakfast",
    "brunch",
    "lunch",
    "afternoon",
    "evening",
    "dinner",
    "supper",
    "sunset",
    "dusk",
    "night",
    "work",
    "school",
    "class",
    "bed",
];

/// Places one is "at" without an event ("at the office", "at the top").
const PLACES: [&str; 9] = [
    "home", "office", "gym", "house", "desk", "top", "bottom", "front", "back",
];

/// Words before the preposition that make it no time: "named after", "looked after", "take
/// after", "asked after", "ran after", "good at".
const NOT_TIME_BEFORE: [&str; 24] = [
    "named", "called", "look", "looks", "looked", "looking", "take", "takes", "took", "taking",
    "ask", "asks", "asked", "run", "runs", "ran", "chase", "chased", "good", "better", "best",
    "bad", "worse", "laughed",
];

/// Most words an event takes after its opener.
const MAX_EVENT_WORDS: usize = 6;

/// Most words of an event without an opener ("after knee surgery").
const MAX_BARE_WORDS: usize = 3;

/// Days on each side of the event's own a span around it takes ("during the trip": a memory
/// dates an event only to about when it was written).
pub const AROUND_DAYS: u64 = 3;

/// Longest excerpt of the dating memory kept to say how a time was read.
const EXCERPT_CHARS: usize = 60;

/// How the span sits against its event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    /// On one side: "before", "after", "since", "until".
    Side(Side),
    /// Around it: "during", "at".
    Around,
}

fn relation(word: &str) -> Option<Relation> {
    match word {
        "during" | "at" => Some(Relation::Around),
        w => side(w).map(Relation::Side),
    }
}

/// An event named as the anchor of a time, not dated yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventAnchor {
    /// The preposition and the event: "before the trip".
    pub phrase: String,
    /// The event's words, looked up in memory: "the trip".
    pub event: String,
    /// Only a memory holding every word of the event dates it: an event without an opener
    /// ("after surgery") or one a span is around ("at the wedding"), where the words alone
    /// may be no event.
    pub whole: bool,
    text: String,
    /// Token of the preposition, and the token after the event's last word.
    at: usize,
    end: usize,
    relation: Relation,
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

/// The first "before/after/since/until/during/at" of `text` followed by an event: after an
/// opener ("the trip", "my surgery", "we moved to Berlin") its words run to a punctuation mark,
/// a word that goes on with the question ("and", "did", "what" …) or [`MAX_EVENT_WORDS`] words;
/// without one ("after surgery", "since retirement"; only after "before/after/since/until": "at
/// home", "during high school" name a place or a period) they are the next few words that are
/// neither stop words nor times, the first not a clause ("after receiving advice"). `None` when
/// there is none. A date as anchor is [`time_range`]'s and comes first.
pub fn event_anchor(text: &str) -> Option<EventAnchor> {
    let toks = tokens(text);
    (0..toks.len()).find_map(|at| {
        let relation = relation(&toks[at].word)?;
        let first = toks.get(at + 1)?;
        let before = at.checked_sub(1).map(|p| toks[p].word.as_str());
        if toks[at].then.is_some_and(is_stop)
            || before.is_some_and(|w| NOT_TIME_BEFORE.contains(&w))
        {
            return None;
        }
        let opener = DETERMINERS.contains(&first.word.as_str())
            || (SUBJECTS.contains(&first.word.as_str()) && relation != Relation::Around);
        let end = match opener {
            true => opened_event(&toks, at, toks[at].word == "at")?,
            false if relation == Relation::Around => return None,
            false => bare_event(&toks, at)?,
        };
        Some(EventAnchor {
            phrase: text[toks[at].start..toks[end - 1].end].to_owned(),
            event: text[first.start..toks[end - 1].end].to_owned(),
            whole: !opener || relation == Relation::Around,
            text: text.to_owned(),
            at,
            end,
            relation,
        })
    })
}

/// The end of an event after an opener (the token after it), the preposition being token `at`.
fn opened_event(toks: &[Tok<'_>], at: usize, place_is_no_event: bool) -> Option<usize> {
    let mut end = at + 1;
    let mut words = 0;
    for t in &toks[at + 1..] {
        let w = t.word.as_str();
        if end > at + 1 && (CLOSERS.contains(&w) || words == MAX_EVENT_WORDS) {
            break;
        }
        let opens = DETERMINERS.contains(&w) || SUBJECTS.contains(&w);
        if !opens && words == 0 && (is_time(w) || (place_is_no_event && PLACES.contains(&w))) {
            return None;
        }
        end += 1;
        if !opens {
            words += 1;
        }
        if t.then.is_some_and(is_stop) {
            break;
        }
    }
    (words > 0).then_some(end)
}

/// The end of an event without an opener: the words after the preposition (token `at`) that
/// are neither stop words, nor times, nor words that go on with the question.
fn bare_event(toks: &[Tok<'_>], at: usize) -> Option<usize> {
    let mut end = at + 1;
    let mut words = 0;
    for (i, t) in toks.iter().enumerate().skip(at + 1) {
        let w = t.word.as_str();
        // "since Ana's wedding": the "s" of a possessive belongs to its word.
        if w == "s" && toks[i - 1].then.is_some_and(|c| c == '\'' || c == '’') && end > at + 1 {
            end += 1;
            continue;
        }
        // A clause ("after receiving advice") names what the question asks about more often
        // than a landmark before or after it (LoCoMo: single-hop -0.004 NDCG@10 with them).
        if words == MAX_BARE_WORDS
            || (words == 0 && w.ends_with("ing"))
            || CLOSERS.contains(&w)
            || is_time(w)
            || DAILY.contains(&w)
            || !w.chars().all(char::is_alphabetic)
            || query_index_terms(w).is_empty()
        {
            break;
        }
        end += 1;
        words += 1;
        if t.then.is_some_and(is_stop) {
            break;
        }
    }
    (words > 0).then_some(end)
}

/// A word that names a time or points back, never an event.
fn is_time(word: &str) -> bool {
    NOT_EVENTS.contains(&word)
        || word.starts_with(|c: char| c.is_ascii_digit())
        || is_calendar_word(word)
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
    /// trip": the seven days before the event's first day; "during the trip": its days and
    /// [`AROUND_DAYS`] on each side).
    pub fn range(&self, event: EventDate, tz: Tz) -> Option<TimeRange> {
        let toks = tokens(&self.text);
        let (span, from) = match self.relation {
            Relation::Side(side) => beside(&toks, self.at, side, Span::days(event.from, event.to))?,
            Relation::Around => {
                let around = Days::new(AROUND_DAYS);
                let span = Span::days(
                    event.from.checked_sub_days(around)?,
                    event.to.checked_add_days(around)?,
                );
                (span, self.at)
            }
        };
        let phrase = &self.text[toks.get(from)?.start..toks.get(self.end - 1)?.end];
        let mut range = in_zone(span, tz, phrase);
        range.event = Some(event);
        Some(range)
    }
}

impl TimeRange {
    /// The reading as every search door shows it (the memory tools' `time`, the gateway's
    /// `note_results` and `conversation_results`, the CLI): the span in `tz`, and
    /// [`TimeRange::describe`].
    pub fn view(&self, tz: Tz) -> TimeReadView {
        let local = |t: Option<DateTime<Utc>>| {
            t.map(|t| {
                t.with_timezone(&tz)
                    .to_rfc3339_opts(SecondsFormat::Secs, true)
            })
        };
        TimeReadView {
            phrase: self.phrase.clone(),
            from: local(self.start),
            until: local(self.end),
            timezone: tz.name().to_owned(),
            read: self.describe(tz),
        }
    }

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
