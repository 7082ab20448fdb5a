//! Times in a query ("yesterday", "in May", "the week before …"): read in the user's time zone
//! relative to the query's own "now", they rank what was said or saved in that span first; a
//! query without a time, or one asked without a `QueryTime`, ranks as before.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use chrono::{DateTime, Utc};
use common::{Fixture, fixture, session, user};
use memory::{ExportedNote, HybridQuery, NoteMetadata, QueryTime, SearchHit};
use types::{Message, NoteId, SessionId, UserId};

pub(crate) fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

/// Monday 10 June 2024, 12:00 UTC (14:00 in Paris).
fn monday_in_paris() -> QueryTime {
    QueryTime {
        now: at("2024-06-10T12:00:00Z"),
        tz: chrono_tz::Europe::Paris,
    }
}

pub(crate) fn query(sessions: Vec<SessionId>, text: &str, time: Option<QueryTime>) -> HybridQuery {
    HybridQuery {
        time,
        ..HybridQuery::new(sessions, text, 5)
    }
}

/// `who` says each `(session, text, when)`; their conversation sessions.
pub(crate) async fn say(f: &Fixture, who: &UserId, said: &[(&str, &str, &str)]) -> Vec<SessionId> {
    for (chat, text, when) in said {
        f.store
            .sessions()
            .append_message_at(&session(chat), who, &Message::user(*text), Some(at(when)))
            .await
            .unwrap();
    }
    f.store.conversation_sessions(who).await.unwrap()
}

/// A note saying `content`, saved at `when`.
pub(crate) fn note(content: &str, when: &str) -> ExportedNote {
    ExportedNote {
        note_id: NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string()).unwrap(),
        content: content.into(),
        metadata: NoteMetadata::default(),
        created_at: at(when),
        updated_at: at(when),
    }
}

pub(crate) fn first(hits: &[SearchHit]) -> &str {
    hits.first().map_or("", |h| h.text.as_str())
}

#[tokio::test]
async fn a_time_in_the_query_ranks_messages_of_that_day_first_in_the_users_zone() {
    let f = fixture().await;
    let alice = user("alice");
    let said = [
        // 9 June 23:30 in Paris: yesterday there (but 9 June in UTC too).
        ("chat-a", "We hiked the ridge trail", "2024-06-09T21:30:00Z"),
        // 10 June 00:30 in Paris: today there, though still 9 June in UTC.
        (
            "chat-b",
            "We hiked the ridge trail again",
            "2024-06-09T22:30:00Z",
        ),
        // In May.
        (
            "chat-c",
            "We hiked the ridge trail and the ridge",
            "2024-05-02T10:00:00Z",
        ),
    ];
    let sessions = say(&f, &alice, &said).await;
    assert_eq!(sessions.len(), 3);

    let yesterday = query(
        sessions.clone(),
        "hiked ridge yesterday",
        Some(monday_in_paris()),
    );
    let hits = f.store.search(&yesterday).await.unwrap();
    assert_eq!(first(&hits), "We hiked the ridge trail", "{hits:?}");
    assert_eq!(hits[0].created_at, at("2024-06-09T21:30:00Z"));

    let today = query(
        sessions.clone(),
        "hiked ridge today",
        Some(monday_in_paris()),
    );
    let hits = f.store.search(&today).await.unwrap();
    assert_eq!(first(&hits), "We hiked the ridge trail again", "{hits:?}");

    let may = query(
        sessions.clone(),
        "hiked ridge trail in May",
        Some(monday_in_paris()),
    );
    let hits = f.store.search(&may).await.unwrap();
    assert_eq!(
        first(&hits),
        "We hiked the ridge trail and the ridge",
        "{hits:?}"
    );
    assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));

    // Without a QueryTime the same words are only words: every message is still found, and
    // the result does not depend on the dates.
    let plain = query(sessions, "hiked ridge yesterday", None);
    assert_eq!(f.store.search(&plain).await.unwrap().len(), 3);
}

#[tokio::test]
async fn notes_keep_their_dates_and_a_time_ranks_them_too() {
    let f = fixture().await;
    let alice = user("alice");
    let notes = vec![
        note(
            "Dentist appointment booked for the user",
            "2024-06-04T09:00:00Z",
        ),
        note(
            "Dentist appointment for the user, dentist on Main street",
            "2023-11-20T09:00:00Z",
        ),
    ];
    f.store
        .import(&alice, None, notes, memory::Similar::Unchecked, None)
        .await
        .unwrap();
    let notes_of = vec![SessionId::user_memory(&alice)];

    let plain = query(notes_of.clone(), "dentist appointment", None);
    let hits = f.store.search(&plain).await.unwrap();
    assert_eq!(hits.len(), 2);

    let last_week = query(
        notes_of.clone(),
        "dentist appointment last week",
        Some(monday_in_paris()),
    );
    let hits = f.store.search(&last_week).await.unwrap();
    assert_eq!(
        first(&hits),
        "Dentist appointment booked for the user",
        "{hits:?}"
    );
    assert_eq!(hits[0].created_at, at("2024-06-04T09:00:00Z"));

    let in_2023 = query(
        notes_of,
        "dentist appointment in 2023",
        Some(monday_in_paris()),
    );
    let hits = f.store.search(&in_2023).await.unwrap();
    assert_eq!(
        first(&hits),
        "Dentist appointment for the user, dentist on Main street",
        "{hits:?}"
    );
    assert_eq!(hits.len(), 2, "a time ranks, it does not hide the rest");
}
