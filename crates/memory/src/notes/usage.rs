//! Token usage (`model_usage`, migration 11): one row per model call — its user, session, turn,
//! model and token counts — written by the runtime after each call, and read back as totals per
//! model (of one session, or of every session of the user), so that a price per model can turn
//! them into money (`getContext`'s `memory_usage`).

use chrono::{DateTime, Utc};
use types::{SessionId, TurnId, Usage, UserId};

use crate::error::MemoryError;
use crate::rooms::UsageLog;
use crate::time::{now_text, to_text};

/// The tokens one model used, summed over calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelUsage {
    pub model: String,
    pub usage: Usage,
}

/// Whose usage to sum: one session's, every session's of the user, or every session's since an
/// instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageScope<'a> {
    Session(&'a SessionId),
    AllSessions,
    Since(DateTime<Utc>),
}

/// Where one model call happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPlace<'a> {
    pub user: &'a UserId,
    pub session: &'a SessionId,
    pub turn: &'a TurnId,
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl UsageLog<'_> {
    /// Records what one call to `model` used.
    pub async fn record_usage(
        &self,
        place: CallPlace<'_>,
        model: &str,
        usage: Usage,
    ) -> Result<(), MemoryError> {
        let row = (
            place.user.as_str().to_owned(),
            place.session.as_str().to_owned(),
            place.turn.as_str().to_owned(),
            model.to_owned(),
        );
        self.write(move |conn| async move {
            let (user, session, turn, model) = row;
            conn.execute(
                "INSERT INTO model_usage (at, user_id, session_id, turn_id, model, prompt_tokens,
                                          completion_tokens)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                libsql::params![
                    now_text(),
                    user,
                    session,
                    turn,
                    model,
                    count(usage.prompt_tokens),
                    count(usage.completion_tokens)
                ],
            )
            .await
            .map_err(MemoryError::db("recording token usage"))?;
            Ok(())
        })
        .await
    }

    /// `user`'s token usage in `scope`, per model, in model order.
    pub async fn usage_by_model(
        &self,
        user: &UserId,
        scope: UsageScope<'_>,
    ) -> Result<Vec<ModelUsage>, MemoryError> {
        let user = user.as_str().to_owned();
        let (session, since) = match scope {
            UsageScope::Session(s) => (Some(s.as_str().to_owned()), None),
            UsageScope::AllSessions => (None, None),
            UsageScope::Since(at) => (None, Some(to_text(at))),
        };
        self.read(move |conn| async move {
            let ctx = "reading token usage";
            let mut rows = conn
                .query(
                    "SELECT model, sum(prompt_tokens), sum(completion_tokens) FROM model_usage
                     WHERE user_id = ?1 AND (?2 IS NULL OR session_id = ?2)
                       AND (?3 IS NULL OR at >= ?3)
                     GROUP BY model ORDER BY model",
                    libsql::params![user, session, since],
                )
                .await
                .map_err(MemoryError::db(ctx))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                let tokens = |i: i32| -> Result<u64, MemoryError> {
                    let n: i64 = row.get(i).map_err(MemoryError::db(ctx))?;
                    Ok(u64::try_from(n).unwrap_or(0))
                };
                out.push(ModelUsage {
                    model: row.get(0).map_err(MemoryError::db(ctx))?,
                    usage: Usage {
                        prompt_tokens: tokens(1)?,
                        completion_tokens: tokens(2)?,
                    },
                });
            }
            Ok(out)
        })
        .await
    }
}
