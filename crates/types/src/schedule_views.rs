//! Schedules and their notifications as clients see them (the `schedules` and `notification`
//! frames, and the schedule tools' answers): times are RFC 3339 in the user's time zone.

use serde::{Deserialize, Serialize};

/// One of the user's schedules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleView {
    pub id: String,
    pub title: String,
    pub instruction: String,
    /// What the user asked for (`in 20 minutes`, `every day at 09:00`).
    pub when: String,
    /// The cron expression of a recurrence (none for a one-off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurrence: Option<String>,
    pub timezone: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run: Option<String>,
    /// `active`, `paused`, `done` or `cancelled`.
    pub state: String,
    /// Failed tries of the run now due.
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<String>,
    /// `ok` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_outcome: Option<String>,
}

/// What `change_schedule` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleAction {
    Cancel,
    Pause,
    Resume,
}

/// The result of a scheduled run, for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationView {
    pub id: i64,
    pub schedule_id: String,
    /// The session the run's turn is in (its history holds the whole run).
    pub session_id: String,
    pub title: String,
    /// The run's answer, or why it failed.
    pub text: String,
    /// `ok` or `failed` (given up after its retries).
    pub status: String,
    /// The run started well after its time (the agent was not running then).
    pub late: bool,
    pub due_at: String,
    pub at: String,
    /// Stored while no client was connected, shown now on connect.
    pub unread: bool,
}
