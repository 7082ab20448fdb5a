//! `runner schedule list|pause|resume|cancel --user alice` as a real child process on real
//! database files: alice sees and changes only her own schedules (bob's id is "no such schedule"
//! and bob's schedule is untouched), each change is audited as the `cli` surface, and a bad id
//! changes nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::path::Path;
use std::process::Output;

use chrono::{Duration, Utc};
use memory::{MemoryStore, NewSchedule, Origin, Provenance, ScheduleState};
use types::{MemoryConfig, UserId};

use crate::common::{err_line, ok_json, ok_text as stdout, runner_as};

fn runner(root: &Path, user: &str, args: &[&str]) -> Output {
    runner_as("schedule", root, user, args)
}

async fn open(root: &Path, user: &str) -> MemoryStore {
    MemoryStore::open(
        memory::Target::Config {
            config: &MemoryConfig::default(),
            user_root: &root.join(user),
        },
        memory::OpenOptions::default(),
    )
    .await
    .unwrap()
}

/// A schedule of `user`'s titled `title`, first due in an hour.
async fn create(store: &MemoryStore, user: &str, title: &str, recurrence: Option<&str>) -> String {
    let new = NewSchedule {
        title: title.to_owned(),
        instruction: format!("Do {title}."),
        when_text: recurrence.unwrap_or("in 1 hour").to_owned(),
        recurrence: recurrence.map(str::to_owned),
        timezone: "UTC".to_owned(),
        first_run: Utc::now() + Duration::hours(1),
        provenance: Provenance::outside_turn(Origin::Cli),
    };
    let user = UserId::parse(user).unwrap();
    store
        .schedules()
        .create(&user, new, 100, None)
        .await
        .unwrap()
        .id
}

/// `(id, state)` of each of `user`'s live schedules, as the store has them.
async fn states(store: &MemoryStore, user: &str) -> Vec<(String, ScheduleState)> {
    let user = UserId::parse(user).unwrap();
    let all = store.schedules().list(&user).await.unwrap();
    all.into_iter().map(|s| (s.id, s.state)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_lists_pauses_resumes_and_cancels_only_her_own_schedules() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (alice_store, bob_store) = (open(root, "alice").await, open(root, "bob").await);
    let report = create(&alice_store, "alice", "Send the report", None).await;
    let stretch = create(&alice_store, "alice", "Stretch", Some("0 9 * * *")).await;
    let bobs = create(&bob_store, "bob", "Bob's secret plan", None).await;
    alice_store.close().await;
    bob_store.close().await;

    let list = stdout(runner(root, "alice", &["list"]));
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(
        list.contains(&report) && list.contains("Send the report"),
        "{list}"
    );
    assert!(
        list.contains(&stretch) && list.contains("0 9 * * *"),
        "{list}"
    );
    assert!(lines.iter().all(|l| l.contains("  active  ")), "{list}");
    assert!(!list.contains(&bobs) && !list.contains("secret"), "{list}");

    let paused = stdout(runner(root, "alice", &["pause", &stretch]));
    assert!(
        paused.starts_with("paused: ") && paused.contains(&stretch),
        "{paused}"
    );
    let cancelled = stdout(runner(root, "alice", &["cancel", &report]));
    assert!(cancelled.starts_with("cancelled: "), "{cancelled}");
    let json = ok_json(runner(root, "alice", &["list", "--json"]));
    let listed = json["schedules"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{json}");
    assert_eq!(listed[0]["id"], stretch.as_str());
    assert_eq!(listed[0]["state"], "paused");
    let resumed = stdout(runner(root, "alice", &["resume", &stretch]));
    assert!(
        resumed.starts_with("resumed: ") && resumed.contains("  active  "),
        "{resumed}"
    );

    // Bob's id, a made-up id and a cancelled schedule: refused, nothing changes.
    for (id, says) in [
        (bobs.as_str(), "no such schedule"),
        ("sch-nope", "no such schedule"),
        (report.as_str(), "cancelled already"),
    ] {
        let err = err_line(runner(root, "alice", &["cancel", id]));
        assert!(err.contains(says), "{id}: {err}");
    }
    let (alice_store, bob_store) = (open(root, "alice").await, open(root, "bob").await);
    assert_eq!(
        states(&alice_store, "alice").await,
        vec![(stretch.clone(), ScheduleState::Active)]
    );
    assert_eq!(
        states(&bob_store, "bob").await,
        vec![(bobs, ScheduleState::Active)]
    );
    // Each change of alice's is one audit row of the `cli` surface, from the runner.
    let rows = alice_store.audit().audit_log(None, 100).await.unwrap();
    let changes: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.tool != "schedule_list" && r.outcome == "ok")
        .map(|r| (r.tool.as_str(), r.surface.as_str()))
        .collect();
    assert_eq!(changes.len(), 3, "{rows:?}");
    assert!(changes.iter().all(|(_, s)| *s == "cli"), "{rows:?}");
    alice_store.close().await;
    bob_store.close().await;
}
