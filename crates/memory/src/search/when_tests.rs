//! The time expressions of a query read into spans: a table of expressions, words that are not
//! times, the phrase kept, and days in the user's zone across changes of clocks.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{QueryTime, TimeRange, time_range};

fn at(now: &str, tz: Tz) -> QueryTime {
    let now = DateTime::parse_from_rfc3339(now)
        .map(|t| t.with_timezone(&Utc))
        .expect("test time");
    QueryTime { now, tz }
}

/// Wednesday 16 August 2023, 15:00 UTC.
fn wednesday() -> QueryTime {
    at("2023-08-16T15:00:00Z", Tz::UTC)
}

/// The local dates `[from, to)` of the range (`-` for an open side), as `from..to`.
fn dates(range: &TimeRange, tz: Tz) -> String {
    let day = |t: Option<DateTime<Utc>>| {
        t.map_or("-".to_owned(), |t| {
            t.with_timezone(&tz).format("%Y-%m-%d").to_string()
        })
    };
    format!("{}..{}", day(range.start), day(range.end))
}

#[test]
fn expressions_to_ranges() {
    let table = [
        ("what did I do yesterday", "2023-08-15..2023-08-16"),
        ("anything today?", "2023-08-16..2023-08-17"),
        ("two days ago", "2023-08-14..2023-08-15"),
        ("what happened 3 days ago", "2023-08-13..2023-08-14"),
        ("a week ago", "2023-08-07..2023-08-14"),
        ("plans from last week", "2023-08-07..2023-08-14"),
        ("this week", "2023-08-14..2023-08-21"),
        ("the past week", "2023-08-10..2023-08-17"),
        ("in the last 3 days", "2023-08-14..2023-08-17"),
        ("last weekend", "2023-08-12..2023-08-14"),
        ("this weekend", "2023-08-19..2023-08-21"),
        ("last month", "2023-07-01..2023-08-01"),
        ("two months ago", "2023-06-01..2023-07-01"),
        ("a couple of days ago", "2023-08-14..2023-08-15"),
        ("last year", "2022-01-01..2023-01-01"),
        (
            "Where did she move from 4 years ago?",
            "2019-01-01..2020-01-01",
        ),
        ("what did I say in May", "2023-05-01..2023-06-01"),
        ("what did I say in may", "2023-05-01..2023-06-01"),
        ("in September", "2022-09-01..2022-10-01"),
        ("in December 2023", "2023-12-01..2024-01-01"),
        ("paintings of July 2023", "2023-07-01..2023-08-01"),
        ("trips in 2022", "2022-01-01..2023-01-01"),
        ("on October 13, 2023", "2023-10-13..2023-10-14"),
        ("on 7 July, 2023", "2023-07-07..2023-07-08"),
        ("dinner on May 3, 2023?", "2023-05-03..2023-05-04"),
        ("notes of 2023-07-07", "2023-07-07..2023-07-08"),
        ("on 13th October", "2022-10-13..2022-10-14"),
        ("on Aug 1", "2023-08-01..2023-08-02"),
        ("last friday", "2023-08-11..2023-08-12"),
        ("last Wednesday", "2023-08-09..2023-08-10"),
        ("last summer", "2022-06-01..2022-09-01"),
        ("this summer", "2023-06-01..2023-09-01"),
        ("during the summer", "2023-06-01..2023-09-01"),
        ("winter 2022", "2022-12-01..2023-03-01"),
        ("before August 3, 2023", "-..2023-08-03"),
        ("after June 2023", "2023-07-01..-"),
        ("since last week", "2023-08-07..-"),
        ("until May 2023", "-..2023-06-01"),
        ("the week before August 3, 2023", "2023-07-27..2023-08-03"),
        (
            "What did Maria do last weekend before April 10, 2023?",
            "2023-04-08..2023-04-10",
        ),
        ("two weeks before August 11, 2023", "2023-07-28..2023-08-04"),
        ("a day after May 3, 2023", "2023-05-04..2023-05-05"),
        ("what did I say on Tuesday", "2023-08-15..2023-08-16"),
        ("on Wednesday", "2023-08-09..2023-08-10"),
        ("since Monday", "2023-08-14..-"),
        ("anything before Friday?", "-..2023-08-11"),
        ("a few days ago", "2023-08-10..2023-08-15"),
        ("few weeks ago", "2023-07-03..2023-08-07"),
        ("a few months ago", "2023-02-01..2023-07-01"),
        ("the other day", "2023-08-10..2023-08-16"),
        ("what did I say an hour ago", "2023-08-16..2023-08-17"),
        ("20 hours ago", "2023-08-15..2023-08-16"),
        ("ten minutes ago", "2023-08-16..2023-08-17"),
    ];
    let now = wednesday();
    for (text, want) in table {
        let got = time_range(text, &now).map(|r| dates(&r, Tz::UTC));
        assert_eq!(got.as_deref(), Some(want), "{text:?}");
    }
}

#[test]
fn ordinary_words_are_not_times() {
    let now = wednesday();
    for text in [
        "What may I eat?",
        "how to march on",
        "I fall asleep early",
        "what did we do before the trip",
        "the user's favourite tea",
        "in 1850",
        "report 2023",
        "room 12 days",
        "a few days",
        "the other side",
        "few ago",
        "what did we discuss recently",
        "I swim every Monday",
        "cello on Sundays",
        "an hour",
        "three hours later",
        "",
    ] {
        assert_eq!(time_range(text, &now), None, "{text:?}");
    }
}

#[test]
fn the_phrase_is_the_words_that_said_it() {
    let got = time_range("What did I do last week at work?", &wednesday());
    assert_eq!(got.map(|r| r.phrase).as_deref(), Some("last week"));
    let got = time_range(
        "What did John do the week before August 3, 2023?",
        &wednesday(),
    );
    assert_eq!(
        got.map(|r| r.phrase).as_deref(),
        Some("the week before August 3, 2023")
    );
}

fn instants(range: &TimeRange) -> (String, String) {
    let t = |t: Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339()).unwrap_or_default();
    (t(range.start), t(range.end))
}

#[test]
fn days_are_local_in_the_users_time_zone() {
    // 08:30 on 2 May in Tokyo is still 1 May in UTC.
    let tokyo = at("2024-05-01T23:30:00Z", chrono_tz::Asia::Tokyo);
    let got = time_range("yesterday", &tokyo).map(|r| instants(&r));
    let want = ("2024-04-30T15:00:00+00:00", "2024-05-01T15:00:00+00:00");
    assert_eq!(got, Some((want.0.to_owned(), want.1.to_owned())));
    let utc = at("2024-05-01T23:30:00Z", Tz::UTC);
    let got = time_range("yesterday", &utc).map(|r| instants(&r));
    let want = ("2024-04-30T00:00:00+00:00", "2024-05-01T00:00:00+00:00");
    assert_eq!(got, Some((want.0.to_owned(), want.1.to_owned())));
}

#[test]
fn days_across_a_change_of_clocks_are_23_or_25_hours() {
    // Paris springs forward on 31 March 2024: that day has 23 hours.
    let paris = at("2024-04-01T10:00:00Z", chrono_tz::Europe::Paris);
    let got = time_range("yesterday", &paris).map(|r| instants(&r));
    let want = ("2024-03-30T23:00:00+00:00", "2024-03-31T22:00:00+00:00");
    assert_eq!(got, Some((want.0.to_owned(), want.1.to_owned())));
    // New York falls back on 3 November 2024: 25 hours.
    let new_york = at("2024-11-04T15:00:00Z", chrono_tz::America::New_York);
    let got = time_range("yesterday", &new_york).map(|r| instants(&r));
    let want = ("2024-11-03T04:00:00+00:00", "2024-11-04T05:00:00+00:00");
    assert_eq!(got, Some((want.0.to_owned(), want.1.to_owned())));
    // Santiago skips midnight on 8 September 2024: the day starts at 01:00 local (-03).
    let santiago = at("2024-09-09T12:00:00Z", chrono_tz::America::Santiago);
    let got = time_range("yesterday", &santiago).map(|r| instants(&r));
    let want = ("2024-09-08T04:00:00+00:00", "2024-09-09T03:00:00+00:00");
    assert_eq!(got, Some((want.0.to_owned(), want.1.to_owned())));
}

#[test]
fn a_month_without_a_year_is_its_latest_start() {
    // On 1 May, "in May" is this May (it has started); on 30 April it is last year's.
    let may_first = at("2023-05-01T00:30:00Z", Tz::UTC);
    let got = time_range("in May", &may_first).map(|r| dates(&r, Tz::UTC));
    assert_eq!(got.as_deref(), Some("2023-05-01..2023-06-01"));
    let april = at("2023-04-30T23:30:00Z", Tz::UTC);
    let got = time_range("in May", &april).map(|r| dates(&r, Tz::UTC));
    assert_eq!(got.as_deref(), Some("2022-05-01..2022-06-01"));
    // …in the user's zone: 30 April 23:30 UTC is already 1 May in Paris.
    let paris = at("2023-04-30T23:30:00Z", chrono_tz::Europe::Paris);
    let got = time_range("in May", &paris).map(|r| dates(&r, chrono_tz::Europe::Paris));
    assert_eq!(got.as_deref(), Some("2023-05-01..2023-06-01"));
}

#[test]
fn last_and_this_across_the_new_year() {
    // Monday 15 January 2024 in Auckland (still Sunday 14 January in UTC).
    let january = at("2024-01-14T20:00:00Z", chrono_tz::Pacific::Auckland);
    let table = [
        // The winter under way began last December; the last one ended in 2023.
        ("this winter", "2023-12-01..2024-03-01"),
        ("last winter", "2022-12-01..2023-03-01"),
        ("in winter", "2023-12-01..2024-03-01"),
        ("last summer", "2023-06-01..2023-09-01"),
        ("what did I buy last December", "2023-12-01..2024-01-01"),
        ("in December", "2023-12-01..2024-01-01"),
        ("last January", "2023-01-01..2023-02-01"),
        ("this January", "2024-01-01..2024-02-01"),
        ("last Dec", "2023-12-01..2024-01-01"),
        // "last week" on a Monday is the whole week before it.
        ("last week", "2024-01-08..2024-01-15"),
        ("yesterday", "2024-01-14..2024-01-15"),
        ("last year", "2023-01-01..2024-01-01"),
        ("what did I say last night", "2024-01-14..2024-01-16"),
        ("this morning", "2024-01-15..2024-01-16"),
    ];
    for (text, want) in table {
        let got = time_range(text, &january).map(|r| dates(&r, chrono_tz::Pacific::Auckland));
        assert_eq!(got.as_deref(), Some(want), "{text:?}");
    }
    // A month word that is an ordinary word after "this" is no time.
    assert_eq!(time_range("this may help", &january), None);
    assert_eq!(time_range("this march is long", &january), None);
}
