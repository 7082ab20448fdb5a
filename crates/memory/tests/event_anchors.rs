//! Events as anchors of a time ("before the trip"): the event is dated by the best keyword match
//! in the query's own sessions (what its text states, else when it was saved or said), in the
//! user's time zone, and the search ranks the span first; no match means no time, never an error.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;
use crate::time_search::{at, first, note, query, say};

use common::{Fixture, fixture, user};
use memory::{QueryTime, TimeRange};
use types::{SessionId, UserId};

/// Wednesday 10 June 2026, 12:00 UTC, in `tz`.
fn june(tz: chrono_tz::Tz) -> QueryTime {
    QueryTime {
        now: at("2026-06-10T12:00:00Z"),
        tz,
    }
}

const PARIS: chrono_tz::Tz = chrono_tz::Europe::Paris;

async fn save(f: &Fixture, who: &UserId, notes: &[(&str, &str)]) {
    let notes = notes.iter().map(|(text, when)| note(text, when)).collect();
    f.store
        .import(who, None, notes, memory::Similar::Unchecked, None)
        .await
        .unwrap();
}

async fn read(f: &Fixture, who: &UserId, text: &str, tz: chrono_tz::Tz) -> Option<TimeRange> {
    let q = query(vec![SessionId::user_memory(who)], text, Some(june(tz)));
    f.store.read_time(&q).await.unwrap()
}

/// A store where Alice saved `notes`.
async fn alice_saved(notes: &[(&str, &str)]) -> (Fixture, UserId) {
    let f = fixture().await;
    let alice = user("alice");
    save(&f, &alice, notes).await;
    (f, alice)
}

async fn alice_packed() -> (Fixture, UserId) {
    alice_saved(&[
        ("Trip to Lisbon with Ana", "2026-05-03T10:00:00Z"),
        ("Packed sunscreen and a beach hat", "2026-05-01T10:00:00Z"),
        ("Packed sunscreen and ski goggles", "2026-05-20T10:00:00Z"),
    ])
    .await
}

#[tokio::test]
async fn before_and_after_an_event_rank_what_was_saved_on_that_side_first() {
    let (f, alice) = alice_packed().await;
    let notes = vec![SessionId::user_memory(&alice)];

    let before = read(&f, &alice, "what sunscreen packed before the trip", PARIS)
        .await
        .expect("the trip is dated");
    assert_eq!(
        (before.start, before.end),
        (None, Some(at("2026-05-02T22:00:00Z")))
    );
    assert_eq!(
        before.describe(PARIS),
        "read \"before the trip\" as before 3 May 2026 (when \"Trip to Lisbon with Ana\" was saved)"
    );
    let q = query(
        notes.clone(),
        "what sunscreen packed before the trip",
        Some(june(PARIS)),
    );
    let hits = f.store.search(&q).await.unwrap();
    assert_eq!(first(&hits), "Packed sunscreen and a beach hat", "{hits:?}");

    for phrasing in [
        "sunscreen packed after the trip",
        "sunscreen packed since the trip",
        "what sunscreen I packed after my trip?",
    ] {
        let q = query(notes.clone(), phrasing, Some(june(PARIS)));
        let hits = f.store.search(&q).await.unwrap();
        assert_eq!(
            first(&hits),
            "Packed sunscreen and ski goggles",
            "{phrasing}: {hits:?}"
        );
    }
    let week = read(&f, &alice, "sunscreen the week before the trip", PARIS)
        .await
        .unwrap();
    assert_eq!(
        (week.start, week.end),
        (
            Some(at("2026-04-25T22:00:00Z")),
            Some(at("2026-05-02T22:00:00Z"))
        )
    );
}

#[tokio::test]
async fn an_event_no_memory_matches_leaves_the_query_as_words() {
    let (f, alice) = alice_packed().await;
    assert_eq!(
        read(&f, &alice, "sunscreen before the wedding", PARIS).await,
        None
    );
    let notes = vec![SessionId::user_memory(&alice)];
    let asked = query(
        notes.clone(),
        "packed sunscreen before the wedding",
        Some(june(PARIS)),
    );
    let plain = query(notes, "packed sunscreen before the wedding", None);
    let timed = f.store.search(&asked).await.unwrap();
    let words = f.store.search(&plain).await.unwrap();
    let texts =
        |hits: &[memory::SearchHit]| hits.iter().map(|h| h.text.clone()).collect::<Vec<_>>();
    assert_eq!(texts(&timed), texts(&words));
    assert!(first(&timed).starts_with("Packed sunscreen"), "{timed:?}");
}

#[tokio::test]
async fn the_best_match_of_two_events_dates_it_every_time_and_a_stated_date_wins() {
    let (f, alice) = alice_saved(&[
        ("Trip to Lisbon with Ana", "2026-05-03T10:00:00Z"),
        (
            "Trip to Porto booked for 14 March 2026",
            "2026-02-01T10:00:00Z",
        ),
    ])
    .await;
    let porto = read(
        &f,
        &alice,
        "what did I read before the trip to Porto",
        PARIS,
    )
    .await
    .unwrap();
    assert_eq!(
        porto.end,
        Some(at("2026-03-13T23:00:00Z")),
        "the date it states"
    );
    assert!(porto.event.as_ref().unwrap().stated);
    let lisbon = read(&f, &alice, "before the Lisbon trip", PARIS)
        .await
        .unwrap();
    assert_eq!(lisbon.end, Some(at("2026-05-02T22:00:00Z")));
    // Both match "trip" alike: the same one wins every time.
    let once = read(&f, &alice, "before the trip", PARIS).await.unwrap();
    for _ in 0..3 {
        assert_eq!(
            read(&f, &alice, "before the trip", PARIS).await.as_ref(),
            Some(&once)
        );
    }
}

#[tokio::test]
async fn another_users_event_is_never_consulted() {
    let (f, _alice) = alice_packed().await;
    let bob = user("bob");
    save(
        &f,
        &bob,
        &[("Packed sunscreen for the beach", "2026-05-01T10:00:00Z")],
    )
    .await;
    assert_eq!(
        read(&f, &bob, "sunscreen before the trip", PARIS).await,
        None
    );
}

#[tokio::test]
async fn the_event_day_is_the_users_local_day() {
    // 00:30 on 3 May in Paris, still 2 May in UTC.
    let (f, alice) = alice_saved(&[("Surgery on my knee went well", "2026-05-02T22:30:00Z")]).await;
    let paris = read(&f, &alice, "walks after my surgery", PARIS)
        .await
        .unwrap();
    assert_eq!(paris.start, Some(at("2026-05-03T22:00:00Z")));
    let utc = read(&f, &alice, "walks after my surgery", chrono_tz::UTC)
        .await
        .unwrap();
    assert_eq!(utc.start, Some(at("2026-05-03T00:00:00Z")));
}

#[tokio::test]
async fn past_conversations_date_an_event_but_the_question_itself_does_not() {
    let f = fixture().await;
    let alice = user("alice");
    let said = [
        (
            "chat-a",
            "We moved to Berlin, boxes everywhere",
            "2025-09-15T10:00:00Z",
        ),
        (
            "chat-b",
            "Which friends did I meet since we moved to Berlin?",
            "2026-06-10T11:59:00Z",
        ),
    ];
    let mut sessions = say(&f, &alice, &said).await;
    sessions.push(SessionId::user_memory(&alice));
    let q = query(
        sessions,
        "friends I met since we moved to Berlin",
        Some(june(PARIS)),
    );
    let range = f
        .store
        .read_time(&q)
        .await
        .unwrap()
        .expect("dated by a message");
    assert_eq!(range.start, Some(at("2025-09-14T22:00:00Z")));
    assert_eq!(range.phrase, "since we moved to Berlin");
    assert!(
        range.describe(PARIS).ends_with("was said)"),
        "{}",
        range.describe(PARIS)
    );
}

#[tokio::test]
async fn an_event_without_an_opener_is_dated_only_by_a_memory_holding_all_its_words() {
    let (f, alice) = alice_saved(&[
        (
            "Knee surgery at the clinic went well",
            "2026-03-10T10:00:00Z",
        ),
        (
            "Retired from the bank after 30 years",
            "2025-11-01T10:00:00Z",
        ),
        ("Dinner with Ana at Tasca", "2026-05-12T19:00:00Z"),
        ("Grandpa turned ninety", "2026-02-02T10:00:00Z"),
        ("Surgery on my shoulder is booked", "2026-01-05T10:00:00Z"),
    ])
    .await;
    let surgery = read(&f, &alice, "walks after knee surgery", PARIS)
        .await
        .expect("dated by the knee surgery");
    assert_eq!(surgery.start, Some(at("2026-03-10T23:00:00Z")));
    assert_eq!(surgery.phrase, "after knee surgery");
    // "retirement" and "retired" meet at one stem.
    let retired = read(&f, &alice, "hobbies since retirement", PARIS)
        .await
        .expect("dated by the retirement");
    assert_eq!(
        retired.describe(PARIS),
        "read \"since retirement\" as from 1 November 2025 on \
         (when \"Retired from the bank after 30 years\" was saved)"
    );
    // No memory holds every word, a time of every day, a preposition that is no time: no time,
    // never an error.
    for words in [
        "walks after hip surgery",
        "books before graduation",
        "what we said after dinner",
        "the dog named after grandpa",
        "since then",
        "before noon",
    ] {
        assert_eq!(read(&f, &alice, words, PARIS).await, None, "{words}");
    }
}

#[tokio::test]
async fn a_span_around_an_event_ranks_what_was_saved_near_it_first() {
    let (f, alice) = alice_saved(&[
        ("Ana and Rui's wedding in Porto", "2026-05-16T10:00:00Z"),
        ("Danced the tango with Marta", "2026-03-20T10:00:00Z"),
        (
            "Danced the tango with Rosa and her brother",
            "2026-05-17T10:00:00Z",
        ),
    ])
    .await;
    let wedding = read(&f, &alice, "who I danced with at the wedding", PARIS)
        .await
        .expect("dated by the wedding");
    assert_eq!(
        (wedding.start, wedding.end),
        (
            Some(at("2026-05-12T22:00:00Z")),
            Some(at("2026-05-19T22:00:00Z"))
        )
    );
    assert_eq!(
        wedding.describe(PARIS),
        "read \"at the wedding\" as 13 May 2026 to 19 May 2026 \
         (when \"Ana and Rui's wedding in Porto\" was saved)"
    );
    let notes = vec![SessionId::user_memory(&alice)];
    // Two dances alike in words (Marta's first without a time): the one near the wedding
    // comes first.
    let order = |hits: &[memory::SearchHit]| {
        let place = |text: &str| {
            hits.iter()
                .position(|h| h.text == text)
                .unwrap_or_else(|| panic!("{text} not found: {hits:?}"))
        };
        place("Danced the tango with Rosa and her brother") < place("Danced the tango with Marta")
    };
    let plain = query(notes.clone(), "danced the tango at the wedding", None);
    assert!(!order(&f.store.search(&plain).await.unwrap()));
    for words in [
        "danced the tango at the wedding",
        "danced the tango during the wedding",
    ] {
        let q = query(notes.clone(), words, Some(june(PARIS)));
        let hits = f.store.search(&q).await.unwrap();
        assert!(order(&hits), "{words}: {hits:?}");
    }
    // A span around an event no memory names whole: the words are only words.
    assert_eq!(read(&f, &alice, "danced at the funeral", PARIS).await, None);
}
