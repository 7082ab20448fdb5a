//! Running schedules, as the store sees it: which of a user's schedules are due, when the next
//! one is, and the end of a run — the schedule's next time (or done, or a retry) and the
//! notification of its result, in one transaction. A run that ends after its schedule was
//! cancelled, paused or moved changes no schedule (compare-and-swap on the run's due time) but
//! still leaves its notification. Notifications stay unread until a client was shown them.

use chrono::{DateTime, Utc};
use libsql::Value;
use types::UserId;

use crate::error::MemoryError;
use crate::notes::schedules::{COLUMNS, Schedule, schedule_from_row};
use crate::rooms::Schedules;
use crate::store::rows::query_first;
use crate::store::{begin, finish};
use crate::time::{now_text, parse, to_text};

/// What follows a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunNext {
    /// The recurrence's next time.
    At(DateTime<Utc>),
    /// A one-off that ran (or was given up): done.
    Done,
    /// The run failed; try again at this time (`attempts` failed tries so far).
    Retry { at: DateTime<Utc>, attempts: u32 },
}

/// The notification a run leaves for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNotification {
    pub session_id: String,
    pub title: String,
    pub text: String,
    /// `ok`, `failed` (given up) or `retrying`.
    pub status: String,
    /// The run started well after its time (the agent was down).
    pub late: bool,
}

/// How a run's end went: whether the schedule moved on, and the stored notification's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunEnded {
    pub moved: bool,
    pub notification: Option<i64>,
}

/// One notification, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub id: i64,
    pub schedule_id: String,
    pub session_id: String,
    pub title: String,
    pub text: String,
    pub status: String,
    pub late: bool,
    pub due_at: DateTime<Utc>,
    pub at: DateTime<Utc>,
    pub read: bool,
}

impl Schedules<'_> {
    /// `user`'s active schedules due at `now`, earliest first, at most `limit`.
    pub async fn due(
        &self,
        user: &UserId,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Schedule>, MemoryError> {
        let user = user.as_str().to_owned();
        self.read_small(move |conn| async move {
            let ctx = "reading due schedules";
            let mut rows = conn
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM schedules
                         WHERE user_id = ?1 AND state = 'active' AND next_run_at <= ?2
                         ORDER BY next_run_at LIMIT ?3"
                    ),
                    libsql::params![user, to_text(now), i64::from(limit)],
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

    /// When `user`'s next active schedule is due (`None`: none is).
    pub async fn next_due(&self, user: &UserId) -> Result<Option<DateTime<Utc>>, MemoryError> {
        let user = user.as_str().to_owned();
        self.read_small(move |conn| async move {
            let ctx = "reading the next schedule";
            let next: Option<String> = query_first(
                &conn,
                "SELECT min(next_run_at) FROM schedules
                 WHERE user_id = ?1 AND state = 'active'",
                [user],
                ctx,
                |row| row.get(0).map_err(MemoryError::db(ctx)),
            )
            .await?
            .flatten();
            next.as_deref().map(parse).transpose()
        })
        .await
    }

    /// Ends the run of `user`'s schedule `id` that was due at `due`: moves the schedule on as
    /// `next` says (only if it is still active and still due at `due`) and stores `notice`.
    pub async fn finish_run(
        &self,
        user: &UserId,
        id: &str,
        due: DateTime<Utc>,
        next: RunNext,
        notice: Option<NewNotification>,
    ) -> Result<RunEnded, MemoryError> {
        let user = user.as_str().to_owned();
        let id = id.to_owned();
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let outcome = async {
                let ctx = "ending a scheduled run";
                let now = now_text();
                let (state, next_at, attempts, last) = match next {
                    RunNext::At(at) => ("active", Some(at), 0, "ok"),
                    RunNext::Done => ("done", None, 0, "ok"),
                    RunNext::Retry { at, attempts } => ("active", Some(at), attempts, "failed"),
                };
                let last = match &notice {
                    Some(n) if n.status == "failed" => "failed",
                    _ => last,
                };
                let moved = tx
                    .execute(
                        "UPDATE schedules SET state = ?1, next_run_at = ?2, attempts = ?3,
                            last_run_at = ?4, last_outcome = ?5, updated_at = ?4
                         WHERE schedule_id = ?6 AND user_id = ?7 AND state = 'active'
                           AND next_run_at = ?8",
                        vec![
                            Value::Text(state.to_owned()),
                            next_at.map_or(Value::Null, |t| Value::Text(to_text(t))),
                            Value::Integer(i64::from(attempts)),
                            Value::Text(now.clone()),
                            Value::Text(last.to_owned()),
                            Value::Text(id.clone()),
                            Value::Text(user.clone()),
                            Value::Text(to_text(due)),
                        ],
                    )
                    .await
                    .map_err(MemoryError::db(ctx))?;
                let mut notification = None;
                if let Some(n) = notice {
                    tx.execute(
                        "INSERT INTO schedule_notifications (user_id, schedule_id, session_id,
                            title, text, status, late, due_at, at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                        vec![
                            Value::Text(user.clone()),
                            Value::Text(id.clone()),
                            Value::Text(n.session_id),
                            Value::Text(n.title),
                            Value::Text(n.text),
                            Value::Text(n.status),
                            Value::Integer(i64::from(n.late)),
                            Value::Text(to_text(due)),
                            Value::Text(now),
                        ],
                    )
                    .await
                    .map_err(MemoryError::db(ctx))?;
                    notification = Some(tx.last_insert_rowid());
                }
                Ok(RunEnded {
                    moved: moved == 1,
                    notification,
                })
            }
            .await;
            finish(tx, outcome).await
        })
        .await
    }

    /// `user`'s notifications no client has been shown, oldest first, at most `limit`.
    pub async fn unread_notifications(
        &self,
        user: &UserId,
        limit: u32,
    ) -> Result<Vec<Notification>, MemoryError> {
        let user = user.as_str().to_owned();
        self.read_small(move |conn| async move {
            let ctx = "reading notifications";
            let mut rows = conn
                .query(
                    "SELECT id, schedule_id, session_id, title, text, status, late, due_at, at,
                            read_at
                     FROM schedule_notifications WHERE user_id = ?1 AND read_at IS NULL
                     ORDER BY id LIMIT ?2",
                    libsql::params![user, i64::from(limit)],
                )
                .await
                .map_err(MemoryError::db(ctx))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                let text = |i: i32| -> Result<String, MemoryError> {
                    row.get(i).map_err(MemoryError::db(ctx))
                };
                let late: i64 = row.get(6).map_err(MemoryError::db(ctx))?;
                let read: Option<String> = row.get(9).map_err(MemoryError::db(ctx))?;
                out.push(Notification {
                    id: row.get(0).map_err(MemoryError::db(ctx))?,
                    schedule_id: text(1)?,
                    session_id: text(2)?,
                    title: text(3)?,
                    text: text(4)?,
                    status: text(5)?,
                    late: late != 0,
                    due_at: parse(&text(7)?)?,
                    at: parse(&text(8)?)?,
                    read: read.is_some(),
                });
            }
            Ok(out)
        })
        .await
    }

    /// Deletes the notifications of every user of the store that a client was shown more than
    /// `older_than` ago (unread ones stay, however old); how many. Nothing reads a notification
    /// once shown (its run stays in its session's history), so without this the rows — each
    /// with a run's answer — would pile up for as long as the store lives. The sweeper calls
    /// it with [`Upkeep::tombstone_retention`](crate::Upkeep::tombstone_retention).
    pub async fn prune_read_notifications(
        &self,
        older_than: chrono::Duration,
    ) -> Result<u64, MemoryError> {
        let cutoff = to_text(Utc::now() - older_than);
        let pruned = self
            .write(move |conn| async move {
                conn.execute(
                    "DELETE FROM schedule_notifications WHERE read_at IS NOT NULL AND read_at < ?1",
                    [cutoff],
                )
                .await
                .map_err(MemoryError::db("pruning read notifications"))
            })
            .await?;
        if pruned > 0 {
            tracing::info!(
                rows = pruned,
                "pruned read notifications past the retention window"
            );
        }
        Ok(pruned)
    }

    /// Marks `user`'s notifications `ids` as shown (another user's are left alone).
    pub async fn mark_read(&self, user: &UserId, ids: &[i64]) -> Result<(), MemoryError> {
        if ids.is_empty() {
            return Ok(());
        }
        let user = user.as_str().to_owned();
        let ids = ids.to_vec();
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let outcome = async {
                let now = now_text();
                for id in ids {
                    tx.execute(
                        "UPDATE schedule_notifications SET read_at = ?1
                         WHERE id = ?2 AND user_id = ?3 AND read_at IS NULL",
                        libsql::params![now.clone(), id, user.clone()],
                    )
                    .await
                    .map_err(MemoryError::db("marking notifications read"))?;
                }
                Ok(())
            }
            .await;
            finish(tx, outcome).await
        })
        .await
    }
}
