//! [`Scheduler`]: runs one user's due schedules, each as a turn of its own, on a clock that can be
//! injected ([`tools::WallClock`]).
//!
//! Nothing is kept in memory that the store does not also hold: a schedule stays due until its
//! run has ended and moved it on (in one transaction with its notification), so a restart, a
//! crash or a reboot loses no run — the run is simply made again at start, marked late when it
//! starts well after its time. A recurrence's next time is counted from when its run ended, so
//! runs missed while the agent was down do not pile up: one late run, then the next on time.
//! The loop sleeps until the next schedule is due (at most [`MAX_SLEEP`], so a wall-clock jump is
//! noticed) or until a tool changes a schedule ([`tools::Schedules::wake`]).
//!
//! Where a run's turn runs and where its notification goes is the [`RunHost`]'s (the gateway,
//! which numbers the turn's events on the session's hub and pushes the notification to every
//! client of the user).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use memory::Schedule;
use tools::Schedules;
use types::{CancellationToken, NotificationView, ToolExecutionContext, UserId, WorkspacePaths};

/// Longest sleep of the loop.
pub const MAX_SLEEP: Duration = Duration::from_secs(30);

/// A run that starts this long after its time is marked late.
pub const LATE_AFTER: chrono::Duration = chrono::Duration::seconds(60);

/// How often the loop looks again while a due schedule's run is under way.
const BUSY_POLL: Duration = Duration::from_secs(1);

/// Most due schedules started in one pass.
const BATCH: u32 = 64;

/// Where scheduled runs' turns run and their notifications go.
#[async_trait]
pub trait RunHost: Send + Sync {
    /// Runs one turn with `ctx` and `input`; its final answer, or why it failed.
    async fn run_turn(&self, ctx: ToolExecutionContext, input: String) -> Result<String, String>;

    /// Shows `notice` to the user's connected clients; whether any was there to see it.
    async fn notify(&self, notice: NotificationView) -> bool;
}

/// One user's scheduler.
#[derive(Debug)]
pub struct Scheduler {
    pub(crate) schedules: Schedules,
    pub(crate) user: UserId,
    pub(crate) workspace: WorkspacePaths,
    /// Schedules whose run is under way (not started twice).
    running: Mutex<HashSet<String>>,
}

impl Scheduler {
    pub fn new(schedules: Schedules, user: UserId, workspace: WorkspacePaths) -> Self {
        Self {
            schedules,
            user,
            workspace,
            running: Mutex::default(),
        }
    }

    pub fn schedules(&self) -> &Schedules {
        &self.schedules
    }

    /// The due schedules not yet running, now marked running.
    async fn claim_due(&self) -> Vec<Schedule> {
        let now = self.schedules.now();
        let due = match self
            .schedules
            .store
            .schedules()
            .due(&self.user, now, BATCH)
            .await
        {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "could not read due schedules");
                return Vec::new();
            }
        };
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        due.into_iter()
            .filter(|s| running.insert(s.id.clone()))
            .collect()
    }

    fn release(&self, id: &str) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Runs every schedule due now and waits for their runs to end (tests step a manual clock
    /// with it); how many ran.
    pub async fn run_due(&self, host: &dyn RunHost) -> usize {
        let due = self.claim_due().await;
        let n = due.len();
        let runs = due.into_iter().map(|s| async move {
            let id = s.id.clone();
            self.run_one(s, host).await;
            self.release(&id);
        });
        futures::future::join_all(runs).await;
        n
    }

    /// How long until the next schedule is due (capped at [`MAX_SLEEP`]).
    pub async fn until_next(&self) -> Duration {
        let next = match self.schedules.store.schedules().next_due(&self.user).await {
            Ok(next) => next,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the next schedule");
                None
            }
        };
        let Some(next) = next else {
            return MAX_SLEEP;
        };
        (next - self.schedules.now())
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(MAX_SLEEP)
    }

    /// The loop: starts each due run in a task of its own, sleeps until the next is due or a
    /// schedule changes, until `stop`.
    pub async fn run(self: Arc<Self>, host: Arc<dyn RunHost>, stop: CancellationToken) {
        tracing::info!(user = %self.user, "scheduler started");
        loop {
            for schedule in self.claim_due().await {
                let (me, host) = (Arc::clone(&self), Arc::clone(&host));
                tokio::spawn(async move {
                    let id = schedule.id.clone();
                    me.run_one(schedule, host.as_ref()).await;
                    me.release(&id);
                    me.schedules.wake.notify_one();
                });
            }
            let wait = self.until_next().await;
            // A run under way keeps its schedule due: look again each second (its end wakes the
            // loop too) rather than spin, so other schedules still start on time.
            let wait = match wait.is_zero() {
                true => BUSY_POLL,
                false => wait,
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.schedules.wake.notified() => {}
                () = stop.cancelled() => break,
            }
        }
        tracing::info!(user = %self.user, at = %Utc::now(), "scheduler stopped");
    }
}
