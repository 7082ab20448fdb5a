//! The user's own searches read times as `memory_search` does: the runtime's `search_notes` (the
//! gateway's note search, `runner memory search` has its own door) and `search_conversations`
//! (the gateway's frame, the TUI's `/search`) pass the query's time, in the user's time zone, so
//! what was saved or said in the month the query names comes first, and each says how it read
//! the time. Real libSQL files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use common::{ctx, memory_registry, open_store, provider, runtime};
use memory::{ExportedNote, NoteMetadata};
use runtime::AgentRuntime;
use test_support::ScriptedLlm;
use types::{Message, NoteId, ProviderKind, RuntimeConfig, SessionId, TimeReadView, UserId};

/// The 10th of the month about a hundred days ago (10:00 UTC), and that month's name: never
/// this month, always its latest occurrence.
fn past_month() -> (DateTime<Utc>, String) {
    let then = Utc::now() - Duration::days(100);
    let day = NaiveDate::from_ymd_opt(then.year(), then.month(), 10).unwrap();
    let at = day.and_hms_opt(10, 0, 0).unwrap().and_utc();
    (at, day.format("%B").to_string())
}

/// A runtime for alice over a fresh store in `root` (under the scripted model it returns), reading
/// times in `tz`.
pub(crate) async fn alices_runtime(
    root: &std::path::Path,
    tz: chrono_tz::Tz,
) -> (AgentRuntime, memory::MemoryStore, ScriptedLlm) {
    let store = open_store(&root.join("memory.db")).await;
    let server = ScriptedLlm::start().await;
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        memory_registry(&store, Vec::new()),
        RuntimeConfig::default(),
    )
    .with_memory(store.clone())
    .with_timezone(Some(tz));
    (rt, store, server)
}

#[tokio::test]
async fn the_users_note_search_ranks_notes_of_the_month_it_names_first() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, store, _server) = alices_runtime(dir.path(), chrono_tz::Europe::Paris).await;
    let alice = UserId::parse("alice").unwrap();
    let (then, month) = past_month();
    let now = Utc::now();
    let note = |n: u32, content: &str, at: DateTime<Utc>| ExportedNote {
        note_id: NoteId::from_uuid_str(&format!("00000000-0000-4000-8000-00000000000{n}")).unwrap(),
        content: content.into(),
        metadata: NoteMetadata::default(),
        created_at: at,
        updated_at: at,
    };
    let notes = vec![
        note(1, "Dentist appointment booked", then),
        note(
            2,
            "Dentist appointment: the dentist appointment reminder",
            now,
        ),
    ];
    store
        .import(&alice, None, notes, memory::Similar::Unchecked, None)
        .await
        .unwrap();
    let ctx = ctx(dir.path(), "alice", "chat-1", "t1");

    let plain = rt
        .search_notes(&ctx, "dentist appointment", 5)
        .await
        .unwrap();
    assert_eq!(plain.hits.len(), 2);
    assert_eq!(
        plain.hits[0].text,
        "Dentist appointment: the dentist appointment reminder"
    );
    assert_eq!(plain.time, None, "no time in its words");
    let dated = rt
        .search_notes(&ctx, &format!("dentist appointment in {month}"), 5)
        .await
        .unwrap();
    assert_eq!(
        dated.hits[0].text, "Dentist appointment booked",
        "{dated:?}"
    );
    assert_eq!(
        dated.hits.len(),
        2,
        "a time ranks, it does not hide the rest"
    );
    assert_eq!(dated.time, Some(reading(&month, then)));
}

/// How "in <month>" is read in Paris (the month's name says it): the month `then` falls in.
fn reading(month: &str, then: DateTime<Utc>) -> TimeReadView {
    let first = NaiveDate::from_ymd_opt(then.year(), then.month(), 1).unwrap();
    let next = first.checked_add_months(chrono::Months::new(1)).unwrap();
    let last = next.pred_opt().unwrap();
    let paris = |d: NaiveDate| {
        d.and_hms_opt(0, 0, 0)
            .unwrap()
            .and_local_timezone(chrono_tz::Europe::Paris)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    TimeReadView {
        phrase: month.to_owned(),
        from: Some(paris(first)),
        until: Some(paris(next)),
        timezone: "Europe/Paris".into(),
        read: format!(
            "read \"{month}\" as {} to {}",
            first.format("%-d %B %Y"),
            last.format("%-d %B %Y")
        ),
    }
}

#[tokio::test]
async fn the_users_conversation_search_ranks_messages_of_the_month_it_names_first() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, store, _server) = alices_runtime(dir.path(), chrono_tz::Europe::Paris).await;
    let alice = UserId::parse("alice").unwrap();
    let (then, month) = past_month();
    let said = [
        ("chat-old", "Booked the dentist appointment", then),
        (
            "chat-new",
            "Dentist appointment: the dentist appointment again",
            Utc::now(),
        ),
    ];
    for (chat, text, at) in said {
        store
            .sessions()
            .append_message_at(
                &SessionId::parse(chat).unwrap(),
                &alice,
                &Message::user(text),
                Some(at),
            )
            .await
            .unwrap();
    }
    let ctx = ctx(dir.path(), "alice", "chat-3", "t1");
    let plain = rt
        .search_conversations(&ctx, "dentist appointment", 5)
        .await
        .unwrap();
    assert_eq!(plain.hits[0].session_id, "chat-new", "{plain:?}");
    assert_eq!(plain.time, None, "no time in its words");
    let dated = rt
        .search_conversations(&ctx, &format!("dentist appointment in {month}"), 5)
        .await
        .unwrap();
    assert_eq!(dated.hits[0].session_id, "chat-old", "{dated:?}");
    assert_eq!(dated.time, Some(reading(&month, then)));
}

/// A hit is dated in the user's time zone, the zone its words about time are read in: a message
/// said at half past midnight in Paris is of that day (the TUI shows the date's first ten
/// characters; in UTC it showed the day before).
#[tokio::test]
async fn a_conversation_hit_is_dated_on_the_users_day() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, store, _server) = alices_runtime(dir.path(), chrono_tz::Europe::Paris).await;
    let alice = UserId::parse("alice").unwrap();
    let said = DateTime::parse_from_rfc3339("2025-03-02T23:30:00Z")
        .unwrap()
        .with_timezone(&Utc);
    store
        .sessions()
        .append_message_at(
            &SessionId::parse("chat-old").unwrap(),
            &alice,
            &Message::user("We named the puppy Biscuit"),
            Some(said),
        )
        .await
        .unwrap();
    let ctx = ctx(dir.path(), "alice", "chat-2", "t1");
    let found = rt
        .search_conversations(&ctx, "puppy Biscuit", 5)
        .await
        .unwrap();
    let dates: Vec<&str> = found.hits.iter().map(|h| h.date.as_str()).collect();
    assert_eq!(dates, ["2025-03-03T00:30:00.000+01:00"]);
}
