//! Schedules end to end through a real gateway over real libSQL files and the scripted model
//! (both wire formats): a schedule made by the model in a turn runs on time (real short delays)
//! as a turn of its own and notifies every client of its user and no one else's; a run due while
//! the agent was down runs once at start, late, and waits unread for the next connect; with an
//! injected clock, a failing run is retried with doubling waits and then reported, and many
//! schedules due at once all run once; the user's `list_schedules` / `change_schedule` frames.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use gateway::{Gateway, GatewayToken, RunningGateway, UserAgent};
use memory::{MemoryStore, NewSchedule, Origin, Provenance};
use provider::Provider;
use runtime::{AgentRuntime, MAX_SLEEP, RunHost, Scheduler};
use serde_json::json;
use test_support::{ScriptedLlm, ScriptedReply};
use tools::{ManualWallClock, Schedules, Tz};
use types::{
    ClientFrame, NotificationView, ProviderKind, RuntimeConfig, ScheduleAction, SchedulesConfig,
    ServerFrame, ToolExecutionContext, UserId, WorkspacePaths,
};

use crate::common::{Client, WAIT, limits, open_store, test_config};

fn provider_for(server: &ScriptedLlm, kind: ProviderKind) -> Arc<dyn Provider> {
    let mut config = server.config(kind);
    config.max_retries = 0;
    provider::from_config_with(&config, provider::ProviderOptions::default()).unwrap()
}

fn schedules_over(store: &MemoryStore, clock: Option<Arc<ManualWallClock>>) -> Schedules {
    let config = SchedulesConfig {
        min_interval_secs: 1,
        ..SchedulesConfig::default()
    };
    let s = Schedules::new(store.clone(), config, "Europe/Paris".parse::<Tz>().unwrap());
    match clock {
        Some(clock) => s.with_clock(clock),
        None => s,
    }
}

/// The agent as `oxydra-vm` composes it with schedules on: every built-in tool and the
/// schedule tools over one store, and the user's scheduler.
fn runtime_with(store: &MemoryStore, schedules: &Schedules, p: Arc<dyn Provider>) -> AgentRuntime {
    let memory = Some(Arc::new(store.clone()) as Arc<dyn memory::MemoryRetrieval>);
    let registry = tools::ToolSet::new(memory)
        .builtin(types::MemoryDialect::Notes)
        .schedules(schedules)
        .registry()
        .unwrap();
    AgentRuntime::new(p, Arc::new(registry), RuntimeConfig::default(), limits())
        .with_memory(store.clone())
}

async fn agent(root: &Path, user: &str, p: Arc<dyn Provider>) -> (UserAgent, MemoryStore) {
    let ws = WorkspacePaths::new(root.join(user));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).unwrap();
    }
    let token = GatewayToken::load_or_create(&ws.internal()).unwrap();
    let store = open_store(root, user).await;
    let schedules = schedules_over(&store, None);
    let id = UserId::parse(user).unwrap();
    let scheduler = Scheduler::new(schedules.clone(), id.clone(), ws.clone());
    let runtime = runtime_with(&store, &schedules, p);
    let agent = UserAgent::new(id, token, ws, runtime).with_scheduler(scheduler);
    (agent, store)
}

pub(crate) async fn gateway(
    root: &Path,
    server: &ScriptedLlm,
    kind: ProviderKind,
) -> (RunningGateway, MemoryStore) {
    let mut gw = Gateway::new(test_config());
    let (alice, store) = agent(root, "alice", provider_for(server, kind)).await;
    gw.add_user(alice).unwrap();
    let (bob, _) = agent(root, "bob", provider_for(server, kind)).await;
    gw.add_user(bob).unwrap();
    (gw.start().await.unwrap(), store)
}

async fn notification(client: &mut Client) -> NotificationView {
    let frames = client
        .recv_until(|f| matches!(f, ServerFrame::Notification { .. }))
        .await;
    match frames.last() {
        Some(ServerFrame::Notification { notification }) => notification.clone(),
        other => panic!("expected a notification, got {other:?}"),
    }
}

async fn no_notification(client: &mut Client) {
    while let Ok(Some(frame)) =
        tokio::time::timeout(Duration::from_millis(300), client.try_recv()).await
    {
        assert!(
            !matches!(frame, ServerFrame::Notification { .. }),
            "{frame:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reminder_made_in_a_turn_notifies_every_client_of_its_user_on_time() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let dir = tempfile::tempdir().unwrap();
        let server = ScriptedLlm::start().await;
        let args = json!({"when": "in 2 seconds", "instruction": "Remind the user to stretch."});
        server.push_all([
            ScriptedReply::tool_call("schedule_create", args),
            ScriptedReply::text("I will remind you."),
            ScriptedReply::text("Time to stretch!"),
        ]);
        let (gw, _store) = gateway(dir.path(), &server, kind).await;
        let (mut a1, s1) = Client::hello(&gw, dir.path(), "alice", None, None).await;
        let (mut a2, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
        let (mut b, _) = Client::hello(&gw, dir.path(), "bob", None, None).await;
        let asked = std::time::Instant::now();
        a1.send_turn(&s1.session_id, "remind me in 2 seconds to stretch", "c1")
            .await;
        a1.recv_turn().await;
        let n1 = tokio::time::timeout(WAIT, notification(&mut a1))
            .await
            .unwrap();
        let n2 = tokio::time::timeout(WAIT, notification(&mut a2))
            .await
            .unwrap();
        let waited = asked.elapsed();
        assert!(
            waited >= Duration::from_secs(2),
            "{kind:?}: after {waited:?}"
        );
        assert_eq!(
            (n1.text.as_str(), n1.status.as_str(), n1.late),
            ("Time to stretch!", "ok", false)
        );
        assert_eq!(n1, n2);
        assert!(n1.session_id.starts_with("schedule-sch-"));
        no_notification(&mut b).await;
        // The run was a turn of its own, with the instruction as its input.
        let input = server.last_request().unwrap().last_user_text().unwrap();
        assert!(input.contains("Remind the user to stretch."), "{input}");
        // It stays in its session's history.
        a1.send(&ClientFrame::SwitchSession {
            session_id: n1.session_id.parse().unwrap(),
            last_seq: None,
        })
        .await;
        a1.recv_until(|f| matches!(f, ServerFrame::SessionSwitched { .. }))
            .await;
        gw.shutdown().await;
    }
}

pub(crate) fn due_at(title: &str, at: DateTime<Utc>, recurrence: Option<&str>) -> NewSchedule {
    NewSchedule {
        title: title.into(),
        instruction: format!("Say {title}."),
        when_text: "earlier".into(),
        recurrence: recurrence.map(str::to_owned),
        timezone: "Europe/Paris".into(),
        first_run: at,
        provenance: Provenance::outside_turn(Origin::User),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runs_due_while_down_run_once_at_start_late_and_wait_unread() {
    let dir = tempfile::tempdir().unwrap();
    let alice = UserId::parse("alice").unwrap();
    {
        // Made before the "restart": one-off and every-minute recurrence, both due long ago.
        let store = open_store(dir.path(), "alice").await;
        let ago = Utc::now() - chrono::Duration::minutes(10);
        store
            .schedules()
            .create(&alice, due_at("once", ago, None), 10, None)
            .await
            .unwrap();
        store
            .schedules()
            .create(&alice, due_at("often", ago, Some("* * * * *")), 10, None)
            .await
            .unwrap();
    }
    let server = ScriptedLlm::start().await;
    server.push_all([
        ScriptedReply::text("done one"),
        ScriptedReply::text("done two"),
    ]);
    let (gw, store) = gateway(dir.path(), &server, ProviderKind::Openai).await;
    let deadline = std::time::Instant::now() + WAIT;
    while store
        .schedules()
        .unread_notifications(&alice, 10)
        .await
        .unwrap()
        .len()
        < 2
    {
        assert!(std::time::Instant::now() < deadline, "runs never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Once each: the recurrence's ten missed minutes did not pile up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.requests().len(), 2);
    let left = store.schedules().list(&alice).await.unwrap();
    assert_eq!(left.len(), 1);
    assert!(left[0].next_run.unwrap() > Utc::now());
    // The next connect is shown both, unread and late; then they are read.
    let (mut c, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let first = tokio::time::timeout(WAIT, notification(&mut c))
        .await
        .unwrap();
    let second = tokio::time::timeout(WAIT, notification(&mut c))
        .await
        .unwrap();
    for n in [&first, &second] {
        assert!(n.unread && n.late && n.status == "ok", "{n:?}");
    }
    // Marked read once sent.
    let deadline = std::time::Instant::now() + WAIT;
    while !store
        .schedules()
        .unread_notifications(&alice, 10)
        .await
        .unwrap()
        .is_empty()
    {
        assert!(std::time::Instant::now() < deadline, "never marked read");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Bob, connecting, is shown none of them.
    let (mut b, _) = Client::hello(&gw, dir.path(), "bob", None, None).await;
    no_notification(&mut b).await;
    // The user's own frames: list, pause, cancel (and bob cannot touch alice's).
    c.send(&ClientFrame::ListSchedules).await;
    let id = match c
        .recv_until(|f| matches!(f, ServerFrame::Schedules { .. }))
        .await
        .pop()
    {
        Some(ServerFrame::Schedules {
            schedules,
            timezone,
        }) => {
            assert_eq!((schedules.len(), timezone.as_str()), (1, "Europe/Paris"));
            schedules[0].id.clone()
        }
        other => panic!("{other:?}"),
    };
    b.send(&ClientFrame::ChangeSchedule {
        schedule_id: id.clone(),
        action: ScheduleAction::Cancel,
    })
    .await;
    let refused = b
        .recv_until(|f| matches!(f, ServerFrame::Error { .. }))
        .await;
    assert!(format!("{refused:?}").contains("not found"), "{refused:?}");
    c.send(&ClientFrame::ChangeSchedule {
        schedule_id: id.clone(),
        action: ScheduleAction::Pause,
    })
    .await;
    match c
        .recv_until(|f| matches!(f, ServerFrame::Schedules { .. }))
        .await
        .pop()
    {
        Some(ServerFrame::Schedules { schedules, .. }) => assert_eq!(schedules[0].state, "paused"),
        other => panic!("{other:?}"),
    }
    c.send(&ClientFrame::ChangeSchedule {
        schedule_id: id,
        action: ScheduleAction::Cancel,
    })
    .await;
    match c
        .recv_until(|f| matches!(f, ServerFrame::Schedules { .. }))
        .await
        .pop()
    {
        Some(ServerFrame::Schedules { schedules, .. }) => assert!(schedules.is_empty()),
        other => panic!("{other:?}"),
    }
    gw.shutdown().await;
}

/// Runs turns on the runtime directly and keeps the notifications (no client connected: unread).
struct Host {
    runtime: Option<AgentRuntime>,
    notices: Mutex<Vec<NotificationView>>,
}

#[async_trait]
impl RunHost for Host {
    async fn run_turn(&self, ctx: ToolExecutionContext, input: String) -> Result<String, String> {
        let Some(runtime) = &self.runtime else {
            return Ok(format!("ran: {input}"));
        };
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let outcome = runtime.run_turn(&ctx, &input, &tx).await;
        drop(tx);
        drain.await.unwrap();
        outcome.map(|o| o.message).map_err(|e| e.to_string())
    }

    async fn notify(&self, notice: NotificationView) -> bool {
        self.notices.lock().unwrap().push(notice);
        false
    }
}

fn t(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

#[tokio::test]
async fn a_failing_run_is_retried_with_doubling_waits_then_reported() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    for _ in 0..3 {
        server.push(ScriptedReply::http_error(400, "the model is unavailable"));
    }
    let store = open_store(dir.path(), "alice").await;
    let clock = Arc::new(ManualWallClock::new(t("2026-11-28T08:00:00Z")));
    let schedules = schedules_over(&store, Some(clock.clone()));
    let alice = UserId::parse("alice").unwrap();
    let ws = WorkspacePaths::new(dir.path().join("alice"));
    let made = store
        .schedules()
        .create(
            &alice,
            due_at("report", t("2026-11-28T08:01:00Z"), None),
            10,
            None,
        )
        .await
        .unwrap();
    let host = Host {
        runtime: Some(runtime_with(
            &store,
            &schedules,
            provider_for(&server, ProviderKind::Anthropic),
        )),
        notices: Mutex::default(),
    };
    let scheduler = Scheduler::new(schedules, alice.clone(), ws);
    // (clock, runs started, attempts after, next run)
    let steps = [
        ("2026-11-28T08:00:59Z", 0, 0, "2026-11-28T08:01:00Z"),
        ("2026-11-28T08:01:00Z", 1, 1, "2026-11-28T08:01:30Z"),
        ("2026-11-28T08:01:29Z", 0, 1, "2026-11-28T08:01:30Z"),
        ("2026-11-28T08:01:30Z", 1, 2, "2026-11-28T08:02:30Z"),
    ];
    for (now, ran, attempts, next) in steps {
        clock.set(t(now));
        assert_eq!(scheduler.run_due(&host).await, ran, "at {now}");
        let s = &store.schedules().list(&alice).await.unwrap()[0];
        assert_eq!(
            (s.attempts, s.next_run),
            (attempts, Some(t(next))),
            "at {now}"
        );
    }
    assert!(host.notices.lock().unwrap().is_empty());
    clock.set(t("2026-11-28T08:02:30Z"));
    assert_eq!(scheduler.run_due(&host).await, 1);
    assert!(
        store.schedules().list(&alice).await.unwrap().is_empty(),
        "given up: done"
    );
    let notices = host.notices.lock().unwrap().clone();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        (notices[0].status.as_str(), notices[0].schedule_id.as_str()),
        ("failed", made.id.as_str())
    );
    assert!(
        notices[0].text.contains("failed 3 times"),
        "{}",
        notices[0].text
    );
    // Not shown to anyone yet: unread for the next connect.
    assert_eq!(scheduler.unread(10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn many_schedules_due_at_once_each_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), "alice").await;
    let clock = Arc::new(ManualWallClock::new(t("2026-11-28T08:00:00Z")));
    let schedules = schedules_over(&store, Some(clock.clone()));
    let alice = UserId::parse("alice").unwrap();
    for i in 0..300 {
        let recurrence = (i % 2 == 0).then_some("0 9 * * *");
        store
            .schedules()
            .create(
                &alice,
                due_at(&format!("s{i}"), t("2026-11-28T08:00:00Z"), recurrence),
                1000,
                None,
            )
            .await
            .unwrap();
    }
    let host = Host {
        runtime: None,
        notices: Mutex::default(),
    };
    let scheduler = Scheduler::new(
        schedules,
        alice.clone(),
        WorkspacePaths::new(dir.path().join("alice")),
    );
    let mut ran = 0;
    loop {
        let n = scheduler.run_due(&host).await;
        if n == 0 {
            break;
        }
        ran += n;
    }
    assert_eq!(ran, 300);
    assert_eq!(host.notices.lock().unwrap().len(), 300);
    let left = store.schedules().list(&alice).await.unwrap();
    assert_eq!(left.len(), 150);
    // 09:00 Paris is 08:00 UTC: the recurrences' next run is tomorrow's.
    assert!(
        left.iter()
            .all(|s| s.next_run == Some(t("2026-11-29T08:00:00Z")))
    );
}

/// The wall clock jumps (a suspended laptop wakes, NTP steps the clock, the operator sets the
/// date): forward three days, a daily schedule runs once, marked late, and its next run is the
/// next 09:00 local after the new now; back two days, nothing runs again and the next run stays
/// where it was; either way the loop looks again within `MAX_SLEEP`, so a jump is noticed.
#[tokio::test]
async fn a_clock_that_jumps_runs_a_daily_schedule_once_and_never_again_backwards() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), "alice").await;
    let clock = Arc::new(ManualWallClock::new(t("2026-11-28T07:00:00Z")));
    let schedules = schedules_over(&store, Some(clock.clone()));
    let alice = UserId::parse("alice").unwrap();
    // 09:00 Paris (08:00 UTC) every day, first due in an hour.
    store
        .schedules()
        .create(
            &alice,
            due_at("daily", t("2026-11-28T08:00:00Z"), Some("0 9 * * *")),
            10,
            None,
        )
        .await
        .unwrap();
    let host = Host {
        runtime: None,
        notices: Mutex::default(),
    };
    let scheduler = Scheduler::new(
        schedules,
        alice.clone(),
        WorkspacePaths::new(dir.path().join("alice")),
    );
    let next_run = || async {
        store.schedules().list(&alice).await.unwrap()[0]
            .next_run
            .unwrap()
    };
    // An hour away: the loop sleeps no longer than MAX_SLEEP, so a jump is seen within it.
    assert_eq!(scheduler.until_next().await, MAX_SLEEP);
    assert_eq!(scheduler.run_due(&host).await, 0);

    // Forward three days: one run (the three missed 09:00s do not pile up), marked late.
    clock.set(t("2026-12-01T12:00:00Z"));
    assert_eq!(scheduler.until_next().await, Duration::ZERO);
    assert_eq!(scheduler.run_due(&host).await, 1);
    assert_eq!(scheduler.run_due(&host).await, 0, "ran twice");
    {
        let notices = host.notices.lock().unwrap();
        assert_eq!(notices.len(), 1);
        assert!(
            notices[0].late && notices[0].status == "ok",
            "{:?}",
            notices[0]
        );
    }
    assert_eq!(next_run().await, t("2026-12-02T08:00:00Z"));

    // Back two days: the run that happened does not happen again, the next run does not move.
    clock.set(t("2026-11-29T08:00:30Z"));
    assert_eq!(scheduler.run_due(&host).await, 0);
    assert_eq!(scheduler.until_next().await, MAX_SLEEP);
    assert_eq!(next_run().await, t("2026-12-02T08:00:00Z"));
    assert_eq!(host.notices.lock().unwrap().len(), 1);

    // Time then catches up to the next 09:00 and it runs, on time.
    clock.set(t("2026-12-02T08:00:00Z"));
    assert_eq!(scheduler.run_due(&host).await, 1);
    let notices = host.notices.lock().unwrap().clone();
    assert_eq!(notices.len(), 2);
    assert!(!notices[1].late, "{:?}", notices[1]);
}
