//! Schedules (migration 13): what the user asked the agent to do at a time or on a recurrence —
//! one row each in `schedules`, the user's own, with its next run (UTC), its state and where it
//! was asked for (provenance). Creating one, listing them and changing a state (cancel, pause,
//! resume) are one transaction each, with the governed call's audit row inside it. Running them
//! is `schedule_runs.rs`; what `when` means is the caller's (the rows keep a cron expression and
//! a time zone, never parse them).

use chrono::{DateTime, Utc};
use libsql::{Connection, Row, Value};
use types::{AuditTag, UserId};

use crate::error::MemoryError;
use crate::notes::audit::record_write;
use crate::notes::provenance::Provenance;
use crate::rooms::Schedules;
use crate::store::rows::query_first;
use crate::store::{begin, finish};
use crate::time::{now_text, parse, to_text};

/// Longest title, in characters.
pub const MAX_SCHEDULE_TITLE_CHARS: usize = 200;
/// Longest `when` (the text the schedule was asked with), in characters: every form fits in far
/// less; a longer one (a cron expression padded with spaces) would be stored and listed with every
/// schedule. The schedule tool's schema states the same bound.
pub const MAX_WHEN_CHARS: usize = 200;
/// Longest instruction, in bytes.
pub const MAX_INSTRUCTION_BYTES: usize = 8 * 1024;

/// Where a schedule is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScheduleState {
    /// Waiting for its next run.
    Active,
    /// Kept, but not run until resumed.
    Paused,
    /// A one-off that has run.
    Done,
    Cancelled,
}

impl ScheduleState {
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleState::Active => "active",
            ScheduleState::Paused => "paused",
            ScheduleState::Done => "done",
            ScheduleState::Cancelled => "cancelled",
        }
    }

    fn parse(text: &str) -> Result<Self, MemoryError> {
        Ok(match text {
            "active" => ScheduleState::Active,
            "paused" => ScheduleState::Paused,
            "done" => ScheduleState::Done,
            "cancelled" => ScheduleState::Cancelled,
            _ => {
                return Err(MemoryError::Corrupt {
                    what: "schedule state",
                    source: None,
                });
            }
        })
    }
}

/// A schedule to create: `first_run` and `recurrence` are already worked out by the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSchedule {
    pub title: String,
    pub instruction: String,
    /// What the user asked for, as given (`in 20 minutes`, `0 9 * * 1-5`), for display.
    pub when_text: String,
    /// A cron expression for a recurrence; `None` for a one-off.
    pub recurrence: Option<String>,
    /// The IANA time zone `recurrence` is read in.
    pub timezone: String,
    pub first_run: DateTime<Utc>,
    pub provenance: Provenance,
}

/// One stored schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub id: String,
    pub title: String,
    pub instruction: String,
    pub when_text: String,
    pub recurrence: Option<String>,
    pub timezone: String,
    /// `None` once done or cancelled.
    pub next_run: Option<DateTime<Utc>>,
    pub state: ScheduleState,
    /// Failed tries of the run now due (reset when a run succeeds or is given up).
    pub attempts: u32,
    pub last_run: Option<DateTime<Utc>>,
    /// `ok` or `failed`.
    pub last_outcome: Option<String>,
    pub provenance: Provenance,
    pub created_at: DateTime<Utc>,
}

/// Who may change a schedule's state how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleChange {
    Cancel,
    Pause,
    /// Active again; a paused run whose time passed is due at once.
    Resume,
}

pub(crate) const COLUMNS: &str = "schedule_id, title, instruction, when_text, recurrence, \
     timezone, next_run_at, state, attempts, last_run_at, last_outcome, provenance_json, created_at";

pub(crate) fn schedule_from_row(row: &Row) -> Result<Schedule, MemoryError> {
    let ctx = "reading a schedule";
    let text = |i: i32| -> Result<String, MemoryError> { row.get(i).map_err(MemoryError::db(ctx)) };
    let opt = |i: i32| -> Result<Option<String>, MemoryError> {
        row.get(i).map_err(MemoryError::db(ctx))
    };
    let time = |t: Option<String>| t.as_deref().map(parse).transpose();
    let attempts: i64 = row.get(8).map_err(MemoryError::db(ctx))?;
    let provenance =
        serde_json::from_str(&text(11)?).map_err(MemoryError::corrupt("provenance"))?;
    Ok(Schedule {
        id: text(0)?,
        title: text(1)?,
        instruction: text(2)?,
        when_text: text(3)?,
        recurrence: opt(4)?,
        timezone: text(5)?,
        next_run: time(opt(6)?)?,
        state: ScheduleState::parse(&text(7)?)?,
        attempts: u32::try_from(attempts).unwrap_or(0),
        last_run: time(opt(9)?)?,
        last_outcome: opt(10)?,
        provenance,
        created_at: parse(&text(12)?)?,
    })
}

/// `user`'s schedule `id` on `conn`, or the not-found error (another user's looks absent).
pub(crate) async fn load(conn: &Connection, user: &str, id: &str) -> Result<Schedule, MemoryError> {
    find(conn, user, id).await?.ok_or_else(|| not_found(id))
}

/// `user`'s schedule `id` on `conn`, if there is one.
async fn find(conn: &Connection, user: &str, id: &str) -> Result<Option<Schedule>, MemoryError> {
    query_first(
        conn,
        &format!("SELECT {COLUMNS} FROM schedules WHERE schedule_id = ?1 AND user_id = ?2"),
        libsql::params![id, user],
        "reading a schedule",
        schedule_from_row,
    )
    .await
}

fn not_found(id: &str) -> MemoryError {
    let id: String = id.chars().take(80).collect();
    MemoryError::InvalidInput(format!(
        "schedule {id} was not found: schedule_list shows the ids"
    ))
}

fn check(new: &NewSchedule) -> Result<(), MemoryError> {
    let bad = |m: &str| Err(MemoryError::InvalidInput(m.to_owned()));
    if new.instruction.trim().is_empty() {
        return bad("the instruction is empty: say what the agent should do when it runs");
    }
    if new.instruction.len() > MAX_INSTRUCTION_BYTES {
        return bad("the instruction is over 8 KiB: shorten it");
    }
    if new.title.trim().is_empty() || new.title.chars().count() > MAX_SCHEDULE_TITLE_CHARS {
        return bad("the title must be 1 to 200 characters");
    }
    if new.when_text.trim().is_empty() {
        return bad(
            "`when` is empty: say when it runs (`0 9 * * *`, `in 2 hours`, a date and time)",
        );
    }
    if new.when_text.chars().count() > MAX_WHEN_CHARS {
        return Err(MemoryError::InvalidInput(format!(
            "`when` is over {MAX_WHEN_CHARS} characters: shorten it"
        )));
    }
    Ok(())
}

impl Schedules<'_> {
    /// Stores a new active schedule of `user`, unless `user` already has `max_active` active or
    /// paused ones; the governed call's audit row (`audit`) is written in the same transaction.
    pub async fn create(
        &self,
        user: &UserId,
        new: NewSchedule,
        max_active: u32,
        audit: Option<AuditTag>,
    ) -> Result<Schedule, MemoryError> {
        check(&new)?;
        let user = user.clone();
        let id = format!("sch-{}", uuid::Uuid::new_v4().simple());
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let outcome = async {
                let ctx = "creating a schedule";
                let live: i64 = query_first(
                    &tx,
                    "SELECT count(*) FROM schedules
                     WHERE user_id = ?1 AND state IN ('active', 'paused')",
                    [user.as_str()],
                    ctx,
                    |row| row.get(0).map_err(MemoryError::db(ctx)),
                )
                .await?
                .unwrap_or(0);
                if live >= i64::from(max_active) {
                    return Err(MemoryError::InvalidInput(format!(
                        "you already have {live} schedules, the most allowed \
                         ([schedules] max_active): cancel one first"
                    )));
                }
                let provenance = serde_json::to_string(&new.provenance)
                    .map_err(MemoryError::corrupt("provenance"))?;
                let now = now_text();
                tx.execute(
                    "INSERT INTO schedules (schedule_id, user_id, title, instruction, when_text,
                        recurrence, timezone, next_run_at, state, attempts, provenance_json,
                        created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'active', 0, ?9, ?10, ?10)",
                    vec![
                        Value::Text(id.clone()),
                        Value::Text(user.as_str().to_owned()),
                        Value::Text(new.title),
                        Value::Text(new.instruction),
                        Value::Text(new.when_text),
                        new.recurrence.map_or(Value::Null, Value::Text),
                        Value::Text(new.timezone),
                        Value::Text(to_text(new.first_run)),
                        Value::Text(provenance),
                        Value::Text(now),
                    ],
                )
                .await
                .map_err(MemoryError::db(ctx))?;
                record_write(&tx, &user, audit.as_ref(), None).await?;
                load(&tx, user.as_str(), &id).await
            }
            .await;
            finish(tx, outcome).await
        })
        .await
    }

    /// `user`'s schedule `id` in any state (done and cancelled ones too); `None` when the user
    /// has none of that id (another user's looks absent).
    pub async fn get(&self, user: &UserId, id: &str) -> Result<Option<Schedule>, MemoryError> {
        let (user, id) = (user.as_str().to_owned(), id.to_owned());
        self.read_small(move |conn| async move { find(&conn, &user, &id).await })
            .await
    }

    /// `user`'s active and paused schedules, next run first (paused ones last).
    pub async fn list(&self, user: &UserId) -> Result<Vec<Schedule>, MemoryError> {
        let user = user.as_str().to_owned();
        self.read_small(move |conn| async move {
            let ctx = "listing schedules";
            let mut rows = conn
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM schedules
                         WHERE user_id = ?1 AND state IN ('active', 'paused')
                         ORDER BY state, next_run_at, schedule_id"
                    ),
                    [user],
                )
                .await
                .map_err(MemoryError::db(ctx))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                out.push(schedule_from_row(&row)?);
            }
            Ok(out)
        })
        .await
    }

    /// Cancels, pauses or resumes `user`'s schedule `id` (another user's is not found), with the
    /// audit row in the same transaction; the schedule as it now is. Pausing a paused schedule
    /// or resuming an active one is refused and changes nothing. `resume_at` is the next run
    /// of a resumed schedule (the caller works it out from the recurrence).
    pub async fn change(
        &self,
        user: &UserId,
        id: &str,
        change: ScheduleChange,
        resume_at: Option<DateTime<Utc>>,
        audit: Option<AuditTag>,
    ) -> Result<Schedule, MemoryError> {
        let user = user.clone();
        let id = id.to_owned();
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let outcome = async {
                let current = load(&tx, user.as_str(), &id).await?;
                let live = matches!(current.state, ScheduleState::Active | ScheduleState::Paused);
                if !live {
                    return Err(MemoryError::InvalidInput(format!(
                        "schedule {id} is {} already: nothing was changed",
                        current.state.as_str()
                    )));
                }
                // A change to the state the schedule is in would change nothing but its next
                // run: a resume of an active one due now would skip the run (or its retry).
                let already = match (change, current.state) {
                    (ScheduleChange::Pause, ScheduleState::Paused) => Some("paused already"),
                    (ScheduleChange::Resume, ScheduleState::Active) => {
                        Some("not paused (it is active)")
                    }
                    _ => None,
                };
                if let Some(already) = already {
                    let id: String = id.chars().take(80).collect();
                    return Err(MemoryError::InvalidInput(format!(
                        "schedule {id} is {already}: nothing was changed"
                    )));
                }
                let (state, next) = match change {
                    ScheduleChange::Cancel => (ScheduleState::Cancelled, None),
                    ScheduleChange::Pause => (ScheduleState::Paused, current.next_run),
                    ScheduleChange::Resume => {
                        (ScheduleState::Active, resume_at.or(current.next_run))
                    }
                };
                tx.execute(
                    "UPDATE schedules SET state = ?1, next_run_at = ?2, updated_at = ?3
                     WHERE schedule_id = ?4 AND user_id = ?5",
                    vec![
                        Value::Text(state.as_str().to_owned()),
                        next.map_or(Value::Null, |t| Value::Text(to_text(t))),
                        Value::Text(now_text()),
                        Value::Text(id.clone()),
                        Value::Text(user.as_str().to_owned()),
                    ],
                )
                .await
                .map_err(MemoryError::db("changing a schedule"))?;
                record_write(&tx, &user, audit.as_ref(), None).await?;
                load(&tx, user.as_str(), &id).await
            }
            .await;
            finish(tx, outcome).await
        })
        .await
    }
}
