//! What capture keeps in the store (migration 14): how far each conversation session has been
//! captured (the sequence number of the last message a capture call read), and the proposals of
//! `mode = "suggest"` waiting for their user. Every row names its user; a user reads and takes
//! only their own proposals.

use chrono::{DateTime, Utc};
use types::{SessionId, TurnId, UserId};

use crate::error::MemoryError;
use crate::notes::audit::record_write;
use crate::notes::receipts::CallKey;
use crate::rooms::Captures;
use crate::store::{begin, finish};
use crate::time::{now_text, parse};

/// A proposal waiting for the user, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingProposal {
    pub id: i64,
    pub session_id: String,
    pub turn_id: String,
    /// The proposal (`{"action", "content"?, "note_id"?, "version"?, "category"?, "tags"?}`).
    pub proposal_json: String,
    /// The untrusted input the exchange it came from had read (`file`, `web`, …), if any.
    pub untrusted: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Where new proposals come from.
#[derive(Debug, Clone, Copy)]
pub struct ProposalPlace<'a> {
    pub user: &'a UserId,
    pub session: &'a SessionId,
    pub turn: &'a TurnId,
    pub untrusted: Option<&'a str>,
}

/// Most proposals waiting for one user: a new one beyond them pushes out the oldest (a user who
/// never reviews them sees the latest, and the table stays bounded).
pub const MAX_PENDING_PROPOSALS: usize = 200;

fn seq_value(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

impl Captures<'_> {
    /// The sequence number of the last message of `session` a capture read (0: none yet).
    pub async fn captured_upto(&self, session: &SessionId) -> Result<u64, MemoryError> {
        let session = session.as_str().to_owned();
        self.read_small(move |conn| async move {
            let ctx = "reading capture state";
            let mut rows = conn
                .query(
                    "SELECT upto_seq FROM capture_state WHERE session_id = ?1",
                    [session],
                )
                .await
                .map_err(MemoryError::db(ctx))?;
            match rows.next().await.map_err(MemoryError::db(ctx))? {
                Some(row) => {
                    let n: i64 = row.get(0).map_err(MemoryError::db(ctx))?;
                    Ok(u64::try_from(n).unwrap_or(0))
                }
                None => Ok(0),
            }
        })
        .await
    }

    /// Records that `session` of `user` has been captured up to `upto` (never moving back).
    pub async fn set_captured_upto(
        &self,
        user: &UserId,
        session: &SessionId,
        upto: u64,
    ) -> Result<(), MemoryError> {
        let row = (user.as_str().to_owned(), session.as_str().to_owned());
        self.write(move |conn| async move {
            let (user, session) = row;
            conn.execute(
                "INSERT INTO capture_state (session_id, user_id, upto_seq, updated_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (session_id) DO UPDATE SET
                   upto_seq = max(upto_seq, excluded.upto_seq), updated_at = excluded.updated_at
                 WHERE capture_state.user_id = excluded.user_id",
                libsql::params![session, user, seq_value(upto), now_text()],
            )
            .await
            .map_err(MemoryError::db("recording capture state"))?;
            Ok(())
        })
        .await
    }

    /// Stores proposals for the user to accept or reject; returns their ids, in order. Beyond
    /// [`MAX_PENDING_PROPOSALS`] of the user's, the oldest are dropped.
    pub async fn add_proposals(
        &self,
        place: ProposalPlace<'_>,
        proposals: Vec<String>,
    ) -> Result<Vec<i64>, MemoryError> {
        let row = (
            place.user.as_str().to_owned(),
            place.session.as_str().to_owned(),
            place.turn.as_str().to_owned(),
            place.untrusted.map(str::to_owned),
        );
        self.write(move |conn| async move {
            let (user, session, turn, untrusted) = row;
            let ctx = "storing capture proposals";
            let tx = begin(&conn).await?;
            let mut ids = Vec::with_capacity(proposals.len());
            let mut outcome = Ok(());
            for proposal in proposals {
                let inserted = tx
                    .execute(
                        "INSERT INTO capture_proposals
                           (user_id, session_id, turn_id, proposal_json, untrusted, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        libsql::params![
                            user.clone(),
                            session.clone(),
                            turn.clone(),
                            proposal,
                            untrusted.clone(),
                            now_text()
                        ],
                    )
                    .await;
                if let Err(e) = inserted {
                    outcome = Err(MemoryError::db(ctx)(e));
                    break;
                }
                ids.push(tx.last_insert_rowid());
            }
            if outcome.is_ok() {
                let pruned = tx
                    .execute(
                        "DELETE FROM capture_proposals WHERE user_id = ?1 AND id NOT IN
                           (SELECT id FROM capture_proposals WHERE user_id = ?1
                            ORDER BY id DESC LIMIT ?2)",
                        libsql::params![user.clone(), MAX_PENDING_PROPOSALS as i64],
                    )
                    .await;
                match pruned {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(
                        user = %user,
                        dropped = n,
                        "capture: the oldest proposals waiting were pushed out by new ones"
                    ),
                    Err(e) => outcome = Err(MemoryError::db(ctx)(e)),
                }
            }
            finish(tx, outcome.map(|()| ids)).await
        })
        .await
    }

    /// `user`'s pending proposals (the latest [`MAX_PENDING_PROPOSALS`]), oldest first.
    pub async fn pending_proposals(
        &self,
        user: &UserId,
    ) -> Result<Vec<PendingProposal>, MemoryError> {
        self.proposals(user, None).await
    }

    /// One of `user`'s pending proposals (`None`: not theirs, or gone).
    pub async fn proposal(
        &self,
        user: &UserId,
        id: i64,
    ) -> Result<Option<PendingProposal>, MemoryError> {
        Ok(self.proposals(user, Some(id)).await?.into_iter().next())
    }

    async fn proposals(
        &self,
        user: &UserId,
        id: Option<i64>,
    ) -> Result<Vec<PendingProposal>, MemoryError> {
        let user = user.as_str().to_owned();
        self.read(move |conn| async move {
            let ctx = "reading capture proposals";
            let mut rows = conn
                .query(
                    "SELECT * FROM
                       (SELECT id, session_id, turn_id, proposal_json, untrusted, created_at
                        FROM capture_proposals WHERE user_id = ?1 AND (?2 IS NULL OR id = ?2)
                        ORDER BY id DESC LIMIT ?3)
                     ORDER BY id",
                    libsql::params![user, id, MAX_PENDING_PROPOSALS as i64],
                )
                .await
                .map_err(MemoryError::db(ctx))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                let at: String = row.get(5).map_err(MemoryError::db(ctx))?;
                out.push(PendingProposal {
                    id: row.get(0).map_err(MemoryError::db(ctx))?,
                    session_id: row.get(1).map_err(MemoryError::db(ctx))?,
                    turn_id: row.get(2).map_err(MemoryError::db(ctx))?,
                    proposal_json: row.get(3).map_err(MemoryError::db(ctx))?,
                    untrusted: row.get(4).map_err(MemoryError::db(ctx))?,
                    created_at: parse(&at)?,
                });
            }
            Ok(out)
        })
        .await
    }

    /// Removes one of `user`'s proposals (accepted or rejected); `false` when there was none.
    /// With an audited `call` (a governed rejection) the removal writes its audit row in the
    /// same transaction.
    pub async fn drop_proposal(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        id: i64,
    ) -> Result<bool, MemoryError> {
        let user = user.clone();
        let audit = call.and_then(CallKey::audit).cloned();
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let outcome = async {
                let n = tx
                    .execute(
                        "DELETE FROM capture_proposals WHERE user_id = ?1 AND id = ?2",
                        libsql::params![user.as_str(), id],
                    )
                    .await
                    .map_err(MemoryError::db("removing a capture proposal"))?;
                if n > 0 {
                    record_write(&tx, &user, audit.as_ref(), None).await?;
                }
                Ok(n > 0)
            }
            .await;
            finish(tx, outcome).await
        })
        .await
    }
}
