//! `scheduler-bench`: what schedules cost the agent (issue 36's targets).
//!
//! (a) How late a due run starts: 20 one-offs due 1–3 s ahead, run by the real
//! [`runtime::Scheduler`] loop over a real store with a run host that answers at once; the delay
//! is the run host's start minus the schedule's `next_run_at`. (b) 10,000 active schedules: the
//! resident memory they add (`VmRSS` before and after creating them and waking once), and the
//! cost of one idle-loop wake — `until_next` (the `min(next_run_at)` query) and a pass with
//! nothing due (`run_due`: the due query) — p50/p95 over 1,000 wakes.
//!
//! `cargo run -p runtime --bin scheduler-bench [--release]`

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memory::{MemoryStore, NewSchedule, Origin, Provenance};
use runtime::{RunHost, Scheduler};
use tools::Schedules;
use types::{
    CancellationToken, NotificationView, SchedulesConfig, ToolExecutionContext, UserId,
    WorkspacePaths,
};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const DUE_RUNS: usize = 20;
const MANY: usize = 10_000;
const WAKES: usize = 1_000;

/// Answers at once, noting when each run (`bench-<i>` in its input) started.
#[derive(Default)]
struct Host {
    started: Mutex<HashMap<usize, DateTime<Utc>>>,
}

#[async_trait]
impl RunHost for Host {
    async fn run_turn(&self, _ctx: ToolExecutionContext, input: String) -> Result<String, String> {
        let at = Utc::now();
        let n = input
            .split("bench-")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse().ok());
        if let Some(n) = n {
            let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
            started.entry(n).or_insert(at);
        }
        Ok("done".to_owned())
    }

    async fn notify(&self, _notice: NotificationView) -> bool {
        false
    }
}

#[allow(clippy::print_stdout, reason = "a benchmark binary reports on stdout")]
fn main() -> Result<(), BoxError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let dir = std::env::temp_dir().join(format!("oxydra-scheduler-bench-{}", std::process::id()));
    let result = rt.block_on(bench(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    println!("{}", result?);
    Ok(())
}

fn new_schedule(n: usize, at: DateTime<Utc>) -> NewSchedule {
    NewSchedule {
        title: format!("bench {n}"),
        instruction: format!("bench-{n}: a trivial run."),
        when_text: "in a moment".to_owned(),
        recurrence: None,
        timezone: "UTC".to_owned(),
        first_run: at,
        provenance: Provenance::outside_turn(Origin::Cli),
    }
}

async fn open(dir: &std::path::Path, name: &str) -> Result<(Scheduler, UserId), BoxError> {
    let user = UserId::parse(name)?;
    let root = dir.join(name);
    let store = MemoryStore::open(
        memory::Target::File(&root.join(".oxydra/memory.db")),
        memory::OpenOptions::default(),
    )
    .await?;
    let config = SchedulesConfig {
        max_active: u32::MAX,
        ..SchedulesConfig::default()
    };
    let zone = tools::resolve_timezone(Some("UTC"))?;
    let schedules = Schedules::new(store, config, zone);
    let scheduler = Scheduler::new(schedules, user.clone(), WorkspacePaths::new(&root));
    Ok((scheduler, user))
}

async fn bench(dir: &std::path::Path) -> Result<String, BoxError> {
    let mut report = String::new();
    // (a) due runs, on the real loop.
    let (scheduler, user) = open(dir, "due").await?;
    let store = scheduler.schedules().store.clone();
    let start = Utc::now() + chrono::Duration::seconds(1);
    let mut due = HashMap::new();
    for n in 0..DUE_RUNS {
        let at = start + chrono::Duration::milliseconds(100 * n as i64);
        store
            .schedules()
            .create(&user, new_schedule(n, at), u32::MAX, None)
            .await?;
        due.insert(n, at);
    }
    let host = Arc::new(Host::default());
    let stop = CancellationToken::default();
    let task = tokio::spawn(Arc::new(scheduler).run(host.clone(), stop.clone()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while host
        .started
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .len()
        < DUE_RUNS
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.cancel();
    let _ = task.await;
    let mut delays: Vec<Duration> = {
        let started = host.started.lock().unwrap_or_else(PoisonError::into_inner);
        started
            .iter()
            .filter_map(|(n, at)| (*at - *due.get(n)?).to_std().ok())
            .collect()
    };
    delays.sort();
    report.push_str(&format!(
        "due runs started: {}/{DUE_RUNS}; delay after next_run_at: p50 {}, p95 {}, max {}\n",
        delays.len(),
        ms(pct(&delays, 0.50)),
        ms(pct(&delays, 0.95)),
        ms(delays.last().copied().unwrap_or_default()),
    ));
    store.close().await;

    // (b) 10,000 active schedules.
    let (scheduler, user) = open(dir, "many").await?;
    let store = scheduler.schedules().store.clone();
    let host = Host::default();
    scheduler.until_next().await;
    scheduler.run_due(&host).await;
    let before = vm_rss_kib()?;
    let far = Utc::now() + chrono::Duration::days(30);
    let made = Instant::now();
    for n in 0..MANY {
        let at = far + chrono::Duration::seconds(n as i64);
        store
            .schedules()
            .create(&user, new_schedule(n, at), u32::MAX, None)
            .await?;
    }
    let made = made.elapsed();
    scheduler.until_next().await;
    scheduler.run_due(&host).await;
    let after = vm_rss_kib()?;
    let mut next = Vec::with_capacity(WAKES);
    let mut pass = Vec::with_capacity(WAKES);
    for _ in 0..WAKES {
        let t = Instant::now();
        scheduler.until_next().await;
        next.push(t.elapsed());
        let t = Instant::now();
        scheduler.run_due(&host).await;
        pass.push(t.elapsed());
    }
    let after_wakes = vm_rss_kib()?;
    next.sort();
    pass.sort();
    report.push_str(&format!(
        "{MANY} active schedules created in {:.1} s; VmRSS {before} KiB -> {after} KiB \
         (+{:.2} MiB), after {WAKES} wakes {after_wakes} KiB (+{:.2} MiB)\n",
        made.as_secs_f64(),
        after.saturating_sub(before) as f64 / 1024.0,
        after_wakes.saturating_sub(before) as f64 / 1024.0,
    ));
    report.push_str(&format!(
        "idle wake, until_next (min(next_run_at)): p50 {}, p95 {}\n\
         idle wake, run_due with nothing due: p50 {}, p95 {}\n",
        ms(pct(&next, 0.50)),
        ms(pct(&next, 0.95)),
        ms(pct(&pass, 0.50)),
        ms(pct(&pass, 0.95)),
    ));
    store.close().await;
    Ok(report)
}

/// The `q` quantile of `sorted`.
fn pct(sorted: &[Duration], q: f64) -> Duration {
    let i = (sorted.len().saturating_sub(1) as f64 * q).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// This process's resident set, from `/proc/self/status`.
fn vm_rss_kib() -> Result<u64, BoxError> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .ok_or("no VmRSS in /proc/self/status")?;
    Ok(line.trim().trim_end_matches("kB").trim().parse()?)
}
