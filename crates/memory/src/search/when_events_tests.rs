//! Events as anchors: which words name one (with an opener or without, and the words that are no
//! event), the span once it is dated (in the user's zone, on one side or around it), the date a
//! memory states, and how a reading is said.

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;

use super::{EventDate, event_anchor, event_date};
use crate::search::query::HitSource;

fn instant(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .expect("test time")
}

fn day(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").expect("test date")
}

/// An event on `from` (one day), saved as a note.
fn on(from: &str) -> EventDate {
    EventDate {
        excerpt: "Trip to Lisbon".into(),
        source: HitSource::UserMemory,
        saved_at: instant("2026-04-20T10:00:00Z"),
        from: day(from),
        to: day(from).succ_opt().expect("a next day"),
        stated: false,
    }
}

#[test]
fn phrasings_name_the_event_and_its_words() {
    let table = [
        (
            "what did I buy before the trip",
            "before the trip",
            "the trip",
        ),
        (
            "restaurants after my surgery?",
            "after my surgery",
            "my surgery",
        ),
        (
            "friends I made since we moved to Berlin",
            "since we moved to Berlin",
            "we moved to Berlin",
        ),
        (
            "what did I read the week after the wedding",
            "after the wedding",
            "the wedding",
        ),
        (
            "books to read until the exam, please",
            "until the exam",
            "the exam",
        ),
        (
            "before our trip to Porto and what we booked",
            "before our trip to Porto",
            "our trip to Porto",
        ),
    ];
    for (query, phrase, event) in table {
        let anchor = event_anchor(query).unwrap_or_else(|| panic!("no anchor in {query:?}"));
        assert_eq!(
            (anchor.phrase.as_str(), anchor.event.as_str()),
            (phrase, event)
        );
    }
}

#[test]
fn events_without_an_opener_and_spans_around_one_are_read_but_must_match_whole() {
    // (query, phrase, event, must match whole)
    let table = [
        (
            "restaurants after surgery",
            "after surgery",
            "surgery",
            true,
        ),
        (
            "what did I read before graduation?",
            "before graduation",
            "graduation",
            true,
        ),
        (
            "hobbies since retirement and friends",
            "since retirement",
            "retirement",
            true,
        ),
        (
            "walks after knee surgery in Porto",
            "after knee surgery",
            "knee surgery",
            true,
        ),
        (
            "what did we eat during the trip",
            "during the trip",
            "the trip",
            true,
        ),
        (
            "gifts since Ana's wedding?",
            "since Ana's wedding",
            "Ana's wedding",
            true,
        ),
        (
            "who did I meet at the wedding?",
            "at the wedding",
            "the wedding",
            true,
        ),
        (
            "what we ate at our anniversary dinner",
            "at our anniversary dinner",
            "our anniversary dinner",
            true,
        ),
        // With an opener, before/after/since/until keep reading any match.
        ("before the trip", "before the trip", "the trip", false),
    ];
    for (query, phrase, event, whole) in table {
        let anchor = event_anchor(query).unwrap_or_else(|| panic!("no anchor in {query:?}"));
        assert_eq!(
            (anchor.phrase.as_str(), anchor.event.as_str(), anchor.whole),
            (phrase, event, whole),
            "{query:?}"
        );
    }
}

#[test]
fn a_preposition_without_an_event_is_a_word() {
    for query in [
        "the dog named after grandpa",
        "the dog named after the king",
        "who looked after the kids",
        "she takes after her mother",
        "good at the piano",
        "since then",
        "before noon",
        "after the",
        "what did I say before",
        "before, the trip",
        // Times of every day, times and words pointing back are no events.
        "what did we talk about after dinner",
        "emails before work",
        "after school",
        "before bed",
        "since yesterday's call",
        "after it",
        "before all that",
        "ever since",
        "after 5",
        "the week after the week",
        "before the end",
        "at the same time",
        "after Monday",
        "before the weekend",
        "during the summer holidays",
        // A clause names what is asked about, not a landmark.
        "plans after receiving advice",
        "since moving to Berlin",
        // "at" and "during" need an opener (a place, a period), and a place is no event.
        "photos during surgery",
        "years with his team during high school",
        "at home",
        "at work",
        "at last",
        "the wifi password at the office",
        "at we moved",
    ] {
        assert_eq!(event_anchor(query), None, "{query:?}");
    }
}

#[test]
fn a_dated_event_gives_the_span_on_its_side_in_the_users_zone() {
    let paris = Tz::Europe__Paris;
    let range = |query: &str| {
        let anchor = event_anchor(query).expect("an anchor");
        anchor.range(on("2026-05-03"), paris).expect("a span")
    };
    let paris_midnight = |d: &str| {
        day(d)
            .and_hms_opt(0, 0, 0)
            .and_then(|t| t.and_local_timezone(paris).single())
            .map(|t| t.with_timezone(&Utc))
    };
    let before = range("what did I pack before the trip");
    assert_eq!(
        (before.start, before.end),
        (None, paris_midnight("2026-05-03"))
    );
    assert_eq!(before.end, Some(instant("2026-05-02T22:00:00Z")));
    assert_eq!(before.event.as_ref(), Some(&on("2026-05-03")));

    let after = range("what did I eat after the trip");
    assert_eq!(
        (after.start, after.end),
        (paris_midnight("2026-05-04"), None)
    );
    let since = range("since the trip");
    assert_eq!(since.start, paris_midnight("2026-05-03"));
    let until = range("until the trip");
    assert_eq!(until.end, paris_midnight("2026-05-04"));

    let week = range("the week before the trip");
    assert_eq!(week.phrase, "the week before the trip");
    assert_eq!(
        (week.start, week.end),
        (paris_midnight("2026-04-26"), paris_midnight("2026-05-03"))
    );
    let week_after = range("two weeks after the trip");
    assert_eq!(
        (week_after.start, week_after.end),
        (paris_midnight("2026-05-11"), paris_midnight("2026-05-18"))
    );
}

#[test]
fn a_span_around_an_event_takes_its_days_and_three_on_each_side() {
    let paris = Tz::Europe__Paris;
    let paris_midnight = |d: &str| {
        day(d)
            .and_hms_opt(0, 0, 0)
            .and_then(|t| t.and_local_timezone(paris).single())
            .map(|t| t.with_timezone(&Utc))
    };
    for query in ["what we ate during the trip", "who I met at the trip"] {
        let range = event_anchor(query)
            .expect("an anchor")
            .range(on("2026-05-03"), paris)
            .expect("a span");
        assert_eq!(
            (range.start, range.end),
            (paris_midnight("2026-04-30"), paris_midnight("2026-05-07")),
            "{query}"
        );
    }
    // A stated span of several days: those days, widened alike.
    let week = EventDate {
        to: day("2026-05-10"),
        stated: true,
        ..on("2026-05-03")
    };
    let range = event_anchor("during the trip")
        .expect("an anchor")
        .range(week, paris)
        .expect("a span");
    assert_eq!(
        range.describe(paris),
        "read \"during the trip\" as 30 April 2026 to 12 May 2026 \
         (the date \"Trip to Lisbon\" states)"
    );
}

#[test]
fn a_memory_dates_its_event_by_what_it_states_else_by_when_it_was_written() {
    let paris = Tz::Europe__Paris;
    // Saved at 00:30 on 3 May in Paris, while it is still 2 May in UTC.
    let late = event_date(
        "Trip to Lisbon",
        HitSource::UserMemory,
        instant("2026-05-02T22:30:00Z"),
        paris,
    );
    assert_eq!(
        (late.from, late.to, late.stated),
        (day("2026-05-03"), day("2026-05-04"), false)
    );
    let utc = event_date(
        "Trip to Lisbon",
        HitSource::UserMemory,
        instant("2026-05-02T22:30:00Z"),
        Tz::UTC,
    );
    assert_eq!(utc.from, day("2026-05-02"));

    let stated = event_date(
        "Booked the trip to Lisbon for 3 May 2026",
        HitSource::UserMemory,
        instant("2026-04-20T10:00:00Z"),
        paris,
    );
    assert_eq!((stated.from, stated.stated), (day("2026-05-03"), true));
    // Relative words are read as of when the memory was written.
    let said = event_date(
        "We got back from the trip yesterday",
        HitSource::Conversation,
        instant("2026-05-10T09:00:00Z"),
        paris,
    );
    assert_eq!((said.from, said.to), (day("2026-05-09"), day("2026-05-10")));
}

#[test]
fn a_reading_says_its_span_and_the_memory_that_dated_it() {
    let paris = Tz::Europe__Paris;
    let anchor = event_anchor("what did I pack before the trip").expect("an anchor");
    let range = anchor.range(on("2026-05-03"), paris).expect("a span");
    assert_eq!(
        range.describe(paris),
        "read \"before the trip\" as before 3 May 2026 (when \"Trip to Lisbon\" was saved)"
    );
    let stated = EventDate {
        stated: true,
        ..on("2026-05-03")
    };
    let week = event_anchor("the week after the trip").expect("an anchor");
    let range = week.range(stated, paris).expect("a span");
    assert_eq!(
        range.describe(paris),
        "read \"the week after the trip\" as 4 May 2026 to 10 May 2026 \
         (the date \"Trip to Lisbon\" states)"
    );
    let long = "x ".repeat(100);
    let said = event_date(
        &long,
        HitSource::Conversation,
        instant("2026-05-10T09:00:00Z"),
        paris,
    );
    assert_eq!(said.excerpt.chars().count(), 61, "cut with an ellipsis");
}
