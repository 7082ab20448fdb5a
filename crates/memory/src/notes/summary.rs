//! The rolling summary of a session, replaced with compare-and-swap on an epoch counter so that two
//! summarizers racing on one session cannot overwrite each other's newer work.

use serde::{Deserialize, Serialize};
use types::SessionId;

use crate::error::MemoryError;
use crate::notes::sessions::{from_sql_seq, to_sql_seq};
use crate::rooms::Sessions;
use crate::store::rows::query_first;
use crate::time::now_text;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryState {
    /// Starts at 1 with the first summary and grows by 1 with each successful swap.
    pub epoch: u64,
    pub summary: String,
    /// The summary covers the session's events up to and including this sequence number.
    pub upto_seq: u64,
}

impl Sessions<'_> {
    pub async fn summary(&self, session: &SessionId) -> Result<Option<SummaryState>, MemoryError> {
        let session = session.clone();
        self.read(move |conn| async move {
            let ctx = "reading the summary";
            query_first(
                &conn,
                "SELECT epoch, summary, upto_seq FROM summary_state WHERE session_id = ?1",
                [session.as_str()],
                ctx,
                |row| {
                    Ok(SummaryState {
                        epoch: from_sql_seq(row.get(0).map_err(MemoryError::db(ctx))?)?,
                        summary: row.get(1).map_err(MemoryError::db(ctx))?,
                        upto_seq: from_sql_seq(row.get(2).map_err(MemoryError::db(ctx))?)?,
                    })
                },
            )
            .await
        })
        .await
    }

    /// Stores `summary` if the current epoch is `expected_epoch` (0 = no summary yet) and returns
    /// true; returns false, changing nothing, when someone else swapped first.
    pub async fn swap_summary(
        &self,
        session: &SessionId,
        expected_epoch: u64,
        summary: &str,
        upto_seq: u64,
    ) -> Result<bool, MemoryError> {
        let expected = to_sql_seq(expected_epoch)?;
        let next = expected
            .checked_add(1)
            .ok_or_else(|| MemoryError::InvalidInput("summary epoch out of range".into()))?;
        let upto = to_sql_seq(upto_seq)?;
        let (session, summary) = (session.clone(), summary.to_owned());
        self.write(move |conn| async move {
            let ctx = "storing the summary";
            let changed = if expected == 0 {
                conn.execute(
                    "INSERT INTO summary_state (session_id, epoch, summary, upto_seq, updated_at)
                     VALUES (?1, 1, ?2, ?3, ?4) ON CONFLICT (session_id) DO NOTHING",
                    libsql::params![session.as_str(), summary, upto, now_text()],
                )
                .await
            } else {
                conn.execute(
                    "UPDATE summary_state SET epoch = ?3, summary = ?4, upto_seq = ?5, updated_at = ?6
                     WHERE session_id = ?1 AND epoch = ?2",
                    libsql::params![session.as_str(), expected, next, summary, upto, now_text()],
                )
                .await
            }
            .map_err(MemoryError::db(ctx))?;
            Ok(changed == 1)
        })
        .await
    }
}
