//! Schedules on every store target: created, listed, paused, resumed and cancelled only by their
//! own user; due ones found by time; a run's end moves a schedule on only while it is still due
//! at that time; notifications stay unread until marked read, per user, and once read are pruned
//! past the retention window; the active cap holds.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use crate::common;

use chrono::{DateTime, Duration, TimeZone, Utc};
use common::{Backend, fixture_on, on_both_backends, user};
use memory::{
    MAX_WHEN_CHARS, MemoryError, NewNotification, NewSchedule, Origin, Provenance, RunNext,
    ScheduleChange, ScheduleState,
};

fn at(minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 28, 9, minute, 0).unwrap()
}

fn new(title: &str, first_run: DateTime<Utc>, recurrence: Option<&str>) -> NewSchedule {
    NewSchedule {
        title: title.to_owned(),
        instruction: format!("do {title}"),
        when_text: "in a while".to_owned(),
        recurrence: recurrence.map(str::to_owned),
        timezone: "Europe/Paris".to_owned(),
        first_run,
        provenance: Provenance::in_turn(Origin::User, "s1", "t1"),
    }
}

fn notice(text: &str) -> NewNotification {
    NewNotification {
        session_id: "schedule-x".to_owned(),
        title: "stretch".to_owned(),
        text: text.to_owned(),
        status: "ok".to_owned(),
        late: false,
    }
}

async fn schedules_belong_to_their_user(backend: Backend) {
    let f = fixture_on(backend).await;
    let (alice, bob) = (user("alice"), user("bob"));
    let once = f
        .store
        .schedules()
        .create(&alice, new("stretch", at(5), None), 10, None)
        .await
        .unwrap();
    let daily = f
        .store
        .schedules()
        .create(&alice, new("summary", at(1), Some("0 9 * * *")), 10, None)
        .await
        .unwrap();
    assert_eq!(once.state, ScheduleState::Active);
    assert_eq!(once.next_run, Some(at(5)));
    assert_eq!(once.provenance.session_id.as_deref(), Some("s1"));
    let listed: Vec<String> = f
        .store
        .schedules()
        .list(&alice)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, vec![daily.id.clone(), once.id.clone()]);
    // Bob sees none of them, finds none due, and cannot change one.
    assert!(f.store.schedules().list(&bob).await.unwrap().is_empty());
    assert!(
        f.store
            .schedules()
            .due(&bob, at(59), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.store.schedules().next_due(&bob).await.unwrap(), None);
    let refused = f
        .store
        .schedules()
        .change(&bob, &once.id, ScheduleChange::Cancel, None, None)
        .await;
    assert!(matches!(refused, Err(MemoryError::InvalidInput(m)) if m.contains("not found")));
    // Due by time, earliest first.
    assert_eq!(
        f.store.schedules().next_due(&alice).await.unwrap(),
        Some(at(1))
    );
    let due: Vec<String> = f
        .store
        .schedules()
        .due(&alice, at(3), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(due, vec![daily.id.clone()]);
    // Paused: not due; resumed: due again; cancelled: gone from the list and not due.
    let paused = f
        .store
        .schedules()
        .change(&alice, &daily.id, ScheduleChange::Pause, None, None)
        .await
        .unwrap();
    assert_eq!(paused.state, ScheduleState::Paused);
    assert!(
        f.store
            .schedules()
            .due(&alice, at(3), 10)
            .await
            .unwrap()
            .is_empty()
    );
    f.store
        .schedules()
        .change(&alice, &daily.id, ScheduleChange::Resume, Some(at(2)), None)
        .await
        .unwrap();
    assert_eq!(
        f.store
            .schedules()
            .due(&alice, at(3), 10)
            .await
            .unwrap()
            .len(),
        1
    );
    f.store
        .schedules()
        .change(&alice, &daily.id, ScheduleChange::Cancel, None, None)
        .await
        .unwrap();
    let again = f
        .store
        .schedules()
        .change(&alice, &daily.id, ScheduleChange::Cancel, None, None)
        .await;
    assert!(matches!(again, Err(MemoryError::InvalidInput(m)) if m.contains("cancelled already")));
    assert_eq!(f.store.schedules().list(&alice).await.unwrap().len(), 1);
}

async fn a_run_moves_its_schedule_on_once(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let daily = f
        .store
        .schedules()
        .create(&alice, new("summary", at(0), Some("0 9 * * *")), 10, None)
        .await
        .unwrap();
    let tomorrow = at(0) + Duration::days(1);
    let moved = f
        .store
        .schedules()
        .finish_run(
            &alice,
            &daily.id,
            at(0),
            RunNext::At(tomorrow),
            Some(notice("done")),
        )
        .await
        .unwrap();
    assert!(moved.moved);
    assert!(moved.notification.is_some());
    // A second end of the same run (a duplicate) moves nothing but cannot lose the schedule.
    let twice = f
        .store
        .schedules()
        .finish_run(&alice, &daily.id, at(0), RunNext::Done, None)
        .await
        .unwrap();
    assert_eq!(
        twice,
        memory::RunEnded {
            moved: false,
            notification: None
        }
    );
    let now = f.store.schedules().list(&alice).await.unwrap();
    assert_eq!(now[0].next_run, Some(tomorrow));
    assert_eq!(now[0].last_outcome.as_deref(), Some("ok"));
    // A failed try keeps it due later with its count.
    f.store
        .schedules()
        .finish_run(
            &alice,
            &daily.id,
            tomorrow,
            RunNext::Retry {
                at: tomorrow + Duration::seconds(30),
                attempts: 1,
            },
            None,
        )
        .await
        .unwrap();
    let retried = &f.store.schedules().list(&alice).await.unwrap()[0];
    assert_eq!(
        (retried.attempts, retried.last_outcome.as_deref()),
        (1, Some("failed"))
    );
    // A one-off is done after its run.
    let once = f
        .store
        .schedules()
        .create(&alice, new("stretch", at(5), None), 10, None)
        .await
        .unwrap();
    f.store
        .schedules()
        .finish_run(
            &alice,
            &once.id,
            at(5),
            RunNext::Done,
            Some(notice("stretched")),
        )
        .await
        .unwrap();
    assert_eq!(f.store.schedules().list(&alice).await.unwrap().len(), 1);
    // Notifications: unread (only to their user) until marked read.
    assert!(
        f.store
            .schedules()
            .unread_notifications(&user("bob"), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let unread = f
        .store
        .schedules()
        .unread_notifications(&alice, 10)
        .await
        .unwrap();
    let texts: Vec<&str> = unread.iter().map(|n| n.text.as_str()).collect();
    assert_eq!(texts, vec!["done", "stretched"]);
    assert_eq!(unread[1].due_at, at(5));
    let ids: Vec<i64> = unread.iter().map(|n| n.id).collect();
    f.store
        .schedules()
        .mark_read(&user("bob"), &ids)
        .await
        .unwrap();
    assert_eq!(
        f.store
            .schedules()
            .unread_notifications(&alice, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    f.store
        .schedules()
        .mark_read(&alice, &ids[..1])
        .await
        .unwrap();
    let left = f
        .store
        .schedules()
        .unread_notifications(&alice, 10)
        .await
        .unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].text, "stretched");
}

async fn the_active_cap_and_bad_input_change_nothing(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    for i in 0..2 {
        f.store
            .schedules()
            .create(&alice, new(&format!("s{i}"), at(i), None), 2, None)
            .await
            .unwrap();
    }
    let over = f
        .store
        .schedules()
        .create(&alice, new("s3", at(3), None), 2, None)
        .await;
    assert!(matches!(over, Err(MemoryError::InvalidInput(m)) if m.contains("max_active")));
    // Another user has a cap of their own.
    f.store
        .schedules()
        .create(&user("bob"), new("b", at(3), None), 2, None)
        .await
        .unwrap();
    let mut empty = new("e", at(3), None);
    empty.instruction = "  ".to_owned();
    let refused = f
        .store
        .schedules()
        .create(&user("bob"), empty, 2, None)
        .await;
    assert!(matches!(refused, Err(MemoryError::InvalidInput(m)) if m.contains("instruction")));
    assert_eq!(f.store.schedules().list(&alice).await.unwrap().len(), 2);
    assert_eq!(
        f.store.schedules().list(&user("bob")).await.unwrap().len(),
        1
    );
}

/// `when` is bounded by the store itself, whichever door created the schedule (the tool's schema
/// is only one of them): an overlong or a blank one is refused and nothing is stored.
async fn an_overlong_when_is_refused_by_the_store(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let mut longest = new("fits", at(1), None);
    longest.when_text = "w".repeat(MAX_WHEN_CHARS);
    f.store
        .schedules()
        .create(&alice, longest, 10, None)
        .await
        .unwrap();
    let mut over = new("over", at(2), None);
    over.when_text = format!("0 9 * * *{}", " ".repeat(MAX_WHEN_CHARS));
    let refused = f.store.schedules().create(&alice, over, 10, None).await;
    assert!(
        matches!(&refused, Err(MemoryError::InvalidInput(m)) if m == "`when` is over 200 characters: shorten it"),
        "{refused:?}"
    );
    let mut blank = new("blank", at(3), None);
    blank.when_text = " \n ".to_owned();
    let refused = f.store.schedules().create(&alice, blank, 10, None).await;
    assert!(
        matches!(&refused, Err(MemoryError::InvalidInput(m)) if m.starts_with("`when` is empty")),
        "{refused:?}"
    );
    let titles: Vec<String> = f
        .store
        .schedules()
        .list(&alice)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.title)
        .collect();
    assert_eq!(titles, vec!["fits".to_owned()]);
}

/// A notification once shown is kept for the retention window, then pruned (by the sweeper); an
/// unread one is kept until it is shown, however old.
async fn read_notifications_are_pruned_past_the_retention_window(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    for (i, text) in ["seen", "not seen"].into_iter().enumerate() {
        let minute = u32::try_from(i).unwrap();
        let once = f
            .store
            .schedules()
            .create(&alice, new(text, at(minute), None), 10, None)
            .await
            .unwrap();
        f.store
            .schedules()
            .finish_run(
                &alice,
                &once.id,
                at(minute),
                RunNext::Done,
                Some(notice(text)),
            )
            .await
            .unwrap();
    }
    let unread = f
        .store
        .schedules()
        .unread_notifications(&alice, 10)
        .await
        .unwrap();
    f.store
        .schedules()
        .mark_read(&alice, &[unread[0].id])
        .await
        .unwrap();
    let schedules = f.store.schedules();
    // Within the window nothing goes; past it, the read one does.
    assert_eq!(
        schedules
            .prune_read_notifications(Duration::days(30))
            .await
            .unwrap(),
        0
    );
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert_eq!(
        schedules
            .prune_read_notifications(Duration::zero())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        schedules
            .prune_read_notifications(Duration::zero())
            .await
            .unwrap(),
        0
    );
    let left = schedules.unread_notifications(&alice, 10).await.unwrap();
    let texts: Vec<&str> = left.iter().map(|n| n.text.as_str()).collect();
    assert_eq!(texts, vec!["not seen"]);
}

on_both_backends!(
    schedules_belong_to_their_user,
    a_run_moves_its_schedule_on_once,
    the_active_cap_and_bad_input_change_nothing,
    an_overlong_when_is_refused_by_the_store,
    read_notifications_are_pruned_past_the_retention_window,
);
