//! Where a conversation is kept: the user's memory store (durable), or process memory when the agent
//! runs without one (ephemeral: the agent still chats, but forgets everything on restart).
//!
//! Both keep the same shape: numbered events per session, owned by one user, and a rolling summary
//! replaced with compare-and-swap on its epoch.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use memory::{MemoryStore, SummaryState};
use types::{Message, SessionId, UserId};

use crate::RuntimeError;

/// One stored message and its sequence number in the session.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) seq: u64,
    pub(crate) message: Message,
}

#[derive(Debug)]
pub(crate) enum Journal {
    Durable(MemoryStore),
    Ephemeral(Mutex<HashMap<SessionId, EphemeralSession>>),
}

#[derive(Debug)]
pub(crate) struct EphemeralSession {
    owner: UserId,
    entries: Vec<Entry>,
    summary: Option<SummaryState>,
}

impl Journal {
    pub(crate) fn ephemeral() -> Self {
        Journal::Ephemeral(Mutex::new(HashMap::new()))
    }

    pub(crate) fn store(&self) -> Option<&MemoryStore> {
        match self {
            Journal::Durable(store) => Some(store),
            Journal::Ephemeral(_) => None,
        }
    }

    /// Appends `message`; returns its sequence number.
    pub(crate) async fn append(
        &self,
        session: &SessionId,
        user: &UserId,
        message: &Message,
    ) -> Result<u64, RuntimeError> {
        match self {
            Journal::Durable(store) => store
                .append_message(session, user, message)
                .await
                .map_err(RuntimeError::memory("storing a message")),
            Journal::Ephemeral(sessions) => {
                let mut sessions = lock(sessions);
                let log = sessions
                    .entry(session.clone())
                    .or_insert_with(|| EphemeralSession {
                        owner: user.clone(),
                        entries: Vec::new(),
                        summary: None,
                    });
                if &log.owner != user {
                    return Err(RuntimeError::SessionOwnedByOtherUser(session.clone()));
                }
                let seq = log.entries.last().map_or(1, |e| e.seq + 1);
                log.entries.push(Entry {
                    seq,
                    message: message.clone(),
                });
                Ok(seq)
            }
        }
    }

    /// The newest `limit` entries, oldest first.
    pub(crate) async fn recent(
        &self,
        session: &SessionId,
        limit: usize,
    ) -> Result<Vec<Entry>, RuntimeError> {
        match self {
            Journal::Durable(store) => Ok(store
                .history(session, None, limit)
                .await
                .map_err(RuntimeError::memory("reading the conversation"))?
                .into_iter()
                .map(|e| Entry {
                    seq: e.seq,
                    message: e.message,
                })
                .collect()),
            Journal::Ephemeral(sessions) => Ok(lock(sessions)
                .get(session)
                .map(|log| {
                    let skip = log.entries.len().saturating_sub(limit);
                    log.entries[skip..].to_vec()
                })
                .unwrap_or_default()),
        }
    }

    pub(crate) async fn summary(
        &self,
        session: &SessionId,
    ) -> Result<Option<SummaryState>, RuntimeError> {
        match self {
            Journal::Durable(store) => store
                .summary(session)
                .await
                .map_err(RuntimeError::memory("reading the summary")),
            Journal::Ephemeral(sessions) => {
                Ok(lock(sessions).get(session).and_then(|s| s.summary.clone()))
            }
        }
    }

    /// Stores a summary if the epoch is still `expected_epoch`; false when someone else won.
    pub(crate) async fn swap_summary(
        &self,
        session: &SessionId,
        expected_epoch: u64,
        summary: &str,
        upto_seq: u64,
    ) -> Result<bool, RuntimeError> {
        match self {
            Journal::Durable(store) => store
                .swap_summary(session, expected_epoch, summary, upto_seq)
                .await
                .map_err(RuntimeError::memory("storing the summary")),
            Journal::Ephemeral(sessions) => {
                let mut sessions = lock(sessions);
                let Some(log) = sessions.get_mut(session) else {
                    return Ok(false);
                };
                let current = log.summary.as_ref().map_or(0, |s| s.epoch);
                if current != expected_epoch {
                    return Ok(false);
                }
                log.summary = Some(SummaryState {
                    epoch: current + 1,
                    summary: summary.to_owned(),
                    upto_seq,
                });
                Ok(true)
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data: no invariant a panic could break half-way.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
