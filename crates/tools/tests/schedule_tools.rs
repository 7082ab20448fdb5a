//! The schedule tools through the registry's governed pipeline, over a real libSQL file and a
//! clock the test moves: what `when` becomes, audit rows in the write's transaction, a refused
//! write (permission, secret) that changes nothing, bad `when` that says what to fix, the
//! active cap, and users who can never see or cancel each other's schedules.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memory::MemoryStore;
use serde_json::{Value, json};
use tools::{Governance, ManualWallClock, Schedules, ToolOutcome, ToolRegistry, ToolSet, Tz};
use types::{GovernanceConfig, SchedulesConfig, ToolExecutionContext};

use crate::common::memory_env::{alice_store, ctx};

struct Env {
    _dir: tempfile::TempDir,
    store: MemoryStore,
    registry: ToolRegistry,
    clock: Arc<ManualWallClock>,
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-28T08:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

async fn env(governance: Value, max_active: u32) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = alice_store(dir.path()).await;
    let config: GovernanceConfig = serde_json::from_value(governance).unwrap();
    let clock = Arc::new(ManualWallClock::new(now()));
    let governance = Governance::new(config).with_audit(Arc::new(store.clone()));
    let schedules = Schedules::new(
        store.clone(),
        SchedulesConfig {
            max_active,
            ..SchedulesConfig::default()
        },
        "Europe/Paris".parse::<Tz>().unwrap(),
    )
    .with_clock(Arc::clone(&clock) as Arc<dyn tools::WallClock>);
    let mut registry = ToolRegistry::default().with_governance(Arc::new(governance));
    for tool in ToolSet::new(None).schedules(&schedules).tools().unwrap() {
        registry.register(tool).unwrap();
    }
    Env {
        _dir: dir,
        store,
        registry,
        clock,
    }
}

impl Env {
    fn ctx(&self, user: &str) -> ToolExecutionContext {
        ctx(self._dir.path(), user, "chat-1")
    }

    async fn call(&self, user: &str, tool: &str, args: Value) -> ToolOutcome {
        self.registry
            .execute(tool, &args.to_string(), &self.ctx(user))
            .await
    }

    async fn ok(&self, user: &str, tool: &str, args: Value) -> Value {
        let out = self.call(user, tool, args).await;
        assert!(out.ok, "{tool}: {}", out.output);
        serde_json::from_str(&out.output).unwrap()
    }

    async fn ids(&self, user: &str) -> Vec<String> {
        let listed = self.ok(user, "schedule_list", json!({})).await;
        listed["schedules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    }
}

#[tokio::test]
async fn a_schedule_is_created_listed_paused_and_cancelled_with_audit_rows() {
    let env = env(json!({}), 10).await;
    let made = env
        .ok(
            "alice",
            "schedule_create",
            json!({"when": "in 2 minutes", "instruction": "Remind the user to stretch."}),
        )
        .await;
    let s = &made["created"];
    assert_eq!(s["next_run"], "2026-11-28T09:02:00+01:00");
    assert_eq!(s["title"], "Remind the user to stretch.");
    assert_eq!(s["recurrence"], Value::Null);
    let daily = env
        .ok("alice", "schedule_create", json!({"when": "every day at 09:00", "instruction": "Summarise yesterday.", "title": "summary"}))
        .await;
    assert_eq!(daily["created"]["recurrence"], "0 9 * * *");
    assert_eq!(daily["created"]["next_run"], "2026-11-29T09:00:00+01:00");
    let id = daily["created"]["id"].as_str().unwrap().to_owned();
    let paused = env.ok("alice", "schedule_pause", json!({"id": id})).await;
    assert_eq!(paused["paused"]["state"], "paused");
    let resumed = env
        .ok("alice", "schedule_pause", json!({"id": id, "resume": true}))
        .await;
    assert_eq!(resumed["resumed"]["state"], "active");
    env.ok("alice", "schedule_cancel", json!({"id": id})).await;
    assert_eq!(env.ids("alice").await.len(), 1);
    let audit = env.store.audit().audit_log(None, 100).await.unwrap();
    let rows: Vec<(String, String, String)> = audit
        .iter()
        .map(|r| {
            (
                r.tool.clone(),
                r.operation.clone(),
                r.namespace.clone().unwrap_or_default(),
            )
        })
        .collect();
    let expect = |t: &str, o: &str| (t.to_owned(), o.to_owned(), "schedules".to_owned());
    assert_eq!(
        rows,
        vec![
            expect("schedule_create", "write"),
            expect("schedule_create", "write"),
            expect("schedule_pause", "write"),
            expect("schedule_pause", "write"),
            expect("schedule_cancel", "delete"),
            expect("schedule_list", "read"),
        ]
    );
}

#[tokio::test]
async fn another_user_can_never_see_or_cancel_a_schedule() {
    let env = env(json!({}), 10).await;
    let made = env
        .ok(
            "alice",
            "schedule_create",
            json!({"when": "in 1 hour", "instruction": "Call mum."}),
        )
        .await;
    let id = made["created"]["id"].as_str().unwrap();
    assert!(env.ids("bob").await.is_empty());
    for (tool, args) in [
        ("schedule_cancel", json!({"id": id})),
        ("schedule_pause", json!({"id": id})),
    ] {
        let out = env.call("bob", tool, args).await;
        assert!(
            !out.ok && out.output.contains("not found"),
            "{tool}: {}",
            out.output
        );
    }
    let alice = env
        .store
        .schedules()
        .list(&types::UserId::parse("alice").unwrap())
        .await
        .unwrap();
    assert_eq!(alice[0].state, memory::ScheduleState::Active);
}

/// Pausing a paused schedule or resuming an active one is refused and changes nothing: a resume
/// of an active schedule whose run is due would otherwise move it to its next time, skipping
/// the run (or a retry of a failed one).
#[tokio::test]
async fn a_change_to_the_state_a_schedule_is_in_is_refused() {
    let env = env(json!({}), 10).await;
    let made = env
        .ok(
            "alice",
            "schedule_create",
            json!({"when": "every day at 09:00", "instruction": "Summarise yesterday."}),
        )
        .await;
    let id = made["created"]["id"].as_str().unwrap().to_owned();
    // A day and a minute on, the 09:00 run is due and not yet run.
    env.clock.advance(chrono::Duration::minutes(24 * 60 + 61));
    let resumed = env
        .call("alice", "schedule_pause", json!({"id": id, "resume": true}))
        .await;
    assert!(
        !resumed.ok && resumed.output.contains("not paused"),
        "{}",
        resumed.output
    );
    let listed = env.ok("alice", "schedule_list", json!({})).await;
    assert_eq!(
        (
            &listed["schedules"][0]["state"],
            &listed["schedules"][0]["next_run"]
        ),
        (&json!("active"), &json!("2026-11-29T09:00:00+01:00")),
        "the due run is kept"
    );
    env.ok("alice", "schedule_pause", json!({"id": id})).await;
    let again = env.call("alice", "schedule_pause", json!({"id": id})).await;
    assert!(
        !again.ok && again.output.contains("paused already"),
        "{}",
        again.output
    );
}

#[tokio::test]
async fn bad_input_says_what_to_fix_and_changes_nothing() {
    let env = env(json!({}), 1).await;
    for (when, part) in [
        ("whenever", "not a time I can read"),
        ("2020-01-01T00:00:00Z", "in the past"),
        ("* * * * * *", "min_interval_secs"),
        ("in 0 minutes", "between 1 second"),
        ("in 11 years", "unit must be"),
        ("9999-12-31T09:00:00Z", "within 10 years"),
    ] {
        let out = env
            .call(
                "alice",
                "schedule_create",
                json!({"when": when, "instruction": "x"}),
            )
            .await;
        // One plain sentence: what was wrong with `when` and what to write instead.
        assert!(
            !out.ok
                && out.output.starts_with("Nothing was scheduled: ")
                && out.output.contains(part)
                && !out.output.contains("must be `"),
            "{when}: {}",
            out.output
        );
    }
    // A `when` padded to 100 KB (a cron expression's spaces) is refused, not stored and listed.
    let padded = format!("0{}9 * * *", " ".repeat(100_000));
    let out = env
        .call(
            "alice",
            "schedule_create",
            json!({"when": padded, "instruction": "x"}),
        )
        .await;
    assert!(
        !out.ok
            && out
                .output
                .contains("`when` must be a string of at most 200 characters"),
        "{}",
        out.output
    );
    // A secret in the instruction is refused by the screening stage.
    let secret = env
        .call("alice", "schedule_create", json!({"when": "in 1 hour", "instruction": "use key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"}))
        .await;
    assert!(!secret.ok, "{}", secret.output);
    env.ok(
        "alice",
        "schedule_create",
        json!({"when": "in 1 hour", "instruction": "one"}),
    )
    .await;
    let over = env
        .call(
            "alice",
            "schedule_create",
            json!({"when": "in 2 hours", "instruction": "two"}),
        )
        .await;
    assert!(
        !over.ok && over.output.contains("max_active"),
        "{}",
        over.output
    );
    assert_eq!(env.ids("alice").await.len(), 1);
}

#[tokio::test]
async fn a_denied_write_class_creates_nothing() {
    let env = env(json!({"operations": {"write": {"allowed": false}}}), 10).await;
    let out = env
        .call(
            "alice",
            "schedule_create",
            json!({"when": "in 1 hour", "instruction": "x"}),
        )
        .await;
    assert!(
        !out.ok && out.output.contains("PERMISSION_DENIED"),
        "{}",
        out.output
    );
    assert!(env.ids("alice").await.is_empty());
}
