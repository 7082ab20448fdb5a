//! One scheduled run: the turn's context (the schedule's own session `schedule-<id>`, the
//! schedule's provenance), its input (the instruction, saying when it was due and whether it is
//! late), and its end — the schedule moved on (a recurrence to its next time from now, a one-off
//! done), a failed turn retried with doubling waits until `[schedules] max_attempts` and then
//! reported, and the notification stored and shown to the user's clients.

use chrono::{DateTime, SecondsFormat, Utc};
use memory::{NewNotification, Notification, RunNext, Schedule};
use types::{
    CallSurface, NotificationView, SessionId, Surface, ToolExecutionContext, TurnId, UntrustedInput,
};

use crate::RuntimeError;
use crate::runtime::AgentRuntime;
use crate::scheduler::{LATE_AFTER, RunHost, Scheduler};

/// The session a schedule's runs are turns of.
pub fn schedule_session(schedule_id: &str) -> Option<SessionId> {
    SessionId::parse(&format!("schedule-{schedule_id}")).ok()
}

impl AgentRuntime {
    /// The mark of a turn in the session of a schedule made after untrusted input: its runs'
    /// instructions (text the user never wrote) are in that session's context, so a turn the
    /// user takes there afterwards is marked as the runs are (its deletes wait for the user's
    /// answer, what it saves is unconfirmed). `None` in any other session. A schedule that
    /// cannot be read marks the turn: the safe side.
    pub(crate) async fn schedule_session_mark(
        &self,
        ctx: &ToolExecutionContext,
    ) -> Option<UntrustedInput> {
        let id = ctx.session_id.as_str().strip_prefix("schedule-")?;
        let store = self.notes_store().ok()?;
        match store.schedules().get(&ctx.user_id, id).await {
            Ok(schedule) => schedule.and_then(|s| tools::schedule_untrusted(&s.provenance)),
            Err(e) => {
                tracing::warn!(error = %e, "schedule of the session not read; turn marked");
                Some(UntrustedInput::Note)
            }
        }
    }
}

/// A stored notification as clients see it.
pub fn notification_view(n: &Notification, tz: tools::Tz) -> NotificationView {
    let local = |t: DateTime<Utc>| {
        t.with_timezone(&tz)
            .to_rfc3339_opts(SecondsFormat::Secs, true)
    };
    NotificationView {
        id: n.id,
        schedule_id: n.schedule_id.clone(),
        session_id: n.session_id.clone(),
        title: n.title.clone(),
        text: n.text.clone(),
        status: n.status.clone(),
        late: n.late,
        due_at: local(n.due_at),
        at: local(n.at),
        unread: !n.read,
    }
}

impl Scheduler {
    /// Runs `schedule` (due now) to its end; never fails: a failure is retried or reported.
    pub(crate) async fn run_one(&self, schedule: Schedule, host: &dyn RunHost) {
        let Some(due) = schedule.next_run else { return };
        let Some(session) = schedule_session(&schedule.id) else {
            tracing::warn!(schedule = %schedule.id, "schedule id makes no session name");
            return;
        };
        let Ok(turn) = TurnId::parse(&format!("t-{}", uuid::Uuid::new_v4())) else {
            return;
        };
        let started = self.schedules.now();
        let late = started - due > LATE_AFTER;
        let tz = self.schedules.timezone;
        let mut ctx = ToolExecutionContext::new(
            self.user.clone(),
            session.clone(),
            turn,
            self.workspace.clone(),
        );
        ctx.surface = CallSurface::new(Surface::Agent).with_client("scheduler");
        // What a schedule made after untrusted input asks is not the user's: its runs say so.
        ctx.untrusted_input = tools::schedule_untrusted(&schedule.provenance);
        let due_local = due.with_timezone(&tz).format("%Y-%m-%d %H:%M %Z");
        let late_note = match late {
            true => " It is running late: the agent was not running at that time.",
            false => "",
        };
        let input = format!(
            "[Scheduled run of \"{}\" ({}), due {due_local}.{late_note} Do what it asks and \
             answer with what the user should see.]\n{}",
            schedule.title, schedule.when_text, schedule.instruction
        );
        tracing::info!(schedule = %schedule.id, late, "scheduled run started");
        let result = host.run_turn(ctx, input).await;
        let ended = self.schedules.now();
        let next_time = schedule
            .recurrence
            .as_deref()
            .and_then(|r| tools::next_run(r, &schedule.timezone, ended));
        let on = next_time.map_or(RunNext::Done, RunNext::At);
        let notice = |text: String, status: &str| NewNotification {
            session_id: session.as_str().to_owned(),
            title: schedule.title.clone(),
            text,
            status: status.to_owned(),
            late,
        };
        let (next, notice) = match result {
            Ok(answer) => (on, Some(notice(answer, "ok"))),
            Err(reason) => {
                let attempts = schedule.attempts + 1;
                tracing::warn!(schedule = %schedule.id, attempts, reason, "scheduled run failed");
                if attempts < self.schedules.config.max_attempts {
                    let wait =
                        self.schedules.config.retry_base_secs * 2u64.saturating_pow(attempts - 1);
                    let wait = chrono::Duration::seconds(i64::try_from(wait).unwrap_or(86_400));
                    let at = ended + wait;
                    (RunNext::Retry { at, attempts }, None)
                } else {
                    let text = format!(
                        "The scheduled run failed {attempts} times and was given up: {reason}"
                    );
                    (on, Some(notice(text, "failed")))
                }
            }
        };
        let store = &self.schedules.store;
        let end = match store
            .schedules()
            .finish_run(&self.user, &schedule.id, due, next, notice)
            .await
        {
            Ok(end) => end,
            Err(e) => {
                // The schedule stays due: its run is made again.
                tracing::error!(schedule = %schedule.id, error = %e, "run end not stored");
                return;
            }
        };
        let Some(id) = end.notification else { return };
        self.deliver(id, tz, host).await;
    }

    /// Shows notification `id` to the user's clients; marked read once one was there.
    async fn deliver(&self, id: i64, tz: tools::Tz, host: &dyn RunHost) {
        let store = &self.schedules.store;
        let unread = match store
            .schedules()
            .unread_notifications(&self.user, 1000)
            .await
        {
            Ok(unread) => unread,
            Err(e) => {
                tracing::warn!(error = %e, "could not read notifications");
                return;
            }
        };
        let Some(n) = unread.iter().find(|n| n.id == id) else {
            return;
        };
        let mut view = notification_view(n, tz);
        view.unread = false;
        if host.notify(view).await
            && let Err(e) = store.schedules().mark_read(&self.user, &[id]).await
        {
            tracing::warn!(error = %e, "could not mark a notification read");
        }
    }
}

impl Scheduler {
    /// The user's notifications no client was shown yet, oldest first (at most `limit`).
    pub async fn unread(&self, limit: u32) -> Result<Vec<NotificationView>, RuntimeError> {
        let tz = self.schedules.timezone;
        let unread = self
            .schedules
            .store
            .schedules()
            .unread_notifications(&self.user, limit)
            .await
            .map_err(|source| RuntimeError::Memory {
                context: "reading notifications",
                source,
            })?;
        Ok(unread.iter().map(|n| notification_view(n, tz)).collect())
    }

    /// Marks the user's notifications `ids` as shown.
    pub async fn mark_read(&self, ids: &[i64]) -> Result<(), RuntimeError> {
        self.schedules
            .store
            .schedules()
            .mark_read(&self.user, ids)
            .await
            .map_err(|source| RuntimeError::Memory {
                context: "marking notifications read",
                source,
            })
    }
}
