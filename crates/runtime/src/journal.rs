//! Where a conversation is kept: the user's memory store (durable), or process memory when the agent
//! runs without one (ephemeral: the agent still chats, but forgets everything on restart).
//!
//! Both keep the same shape: numbered events per session, owned by one user, a title, and a
//! rolling summary replaced with compare-and-swap on its epoch. The session reads callers page
//! through (`sessions`) come from here too, so they work the same with or without a store.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use memory::{CallPlace, MemoryError, MemoryStore, SessionInfo, SessionKind, SummaryState};
use types::{Message, SessionId, Usage, UserId};

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
    /// When each entry was added (same index as `entries`).
    times: Vec<DateTime<Utc>>,
    title: Option<String>,
    created_at: DateTime<Utc>,
    summary: Option<SummaryState>,
    model: Option<String>,
}

impl EphemeralSession {
    fn new(owner: &UserId) -> Self {
        Self {
            owner: owner.clone(),
            entries: Vec::new(),
            times: Vec::new(),
            title: None,
            created_at: Utc::now(),
            summary: None,
            model: None,
        }
    }

    fn info(&self, id: &SessionId) -> SessionRecord {
        SessionRecord {
            session_id: id.clone(),
            user_id: self.owner.clone(),
            conversation: !id.is_user_memory(),
            title: self.title.clone(),
            created_at: self.created_at,
            last_active_at: self.times.last().copied().unwrap_or(self.created_at),
            messages: self.entries.len() as u64,
            model: self.model.clone(),
        }
    }
}

/// What the journal knows about one session.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SessionRecord {
    pub(crate) session_id: SessionId,
    pub(crate) user_id: UserId,
    /// A conversation (not a `memory:` namespace).
    pub(crate) conversation: bool,
    pub(crate) title: Option<String>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) last_active_at: DateTime<Utc>,
    pub(crate) messages: u64,
    pub(crate) model: Option<String>,
}

impl From<SessionInfo> for SessionRecord {
    fn from(info: SessionInfo) -> Self {
        Self {
            session_id: info.session_id,
            user_id: info.user_id,
            conversation: info.kind == SessionKind::Conversation,
            title: info.title,
            created_at: info.created_at,
            last_active_at: info.last_active_at,
            messages: info.events,
            model: info.model,
        }
    }
}

/// One stored message with its number and time, for history pages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimedEntry {
    pub(crate) seq: u64,
    pub(crate) message: Message,
    pub(crate) created_at: DateTime<Utc>,
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

    /// Records what one model call used, with its session and turn (a store only: process
    /// memory keeps no usage). A failure is logged, never fatal to the turn.
    pub(crate) async fn record_usage(&self, place: CallPlace<'_>, model: &str, usage: Usage) {
        if let Journal::Durable(store) = self
            && let Err(e) = store.usage().record_usage(place, model, usage).await
        {
            tracing::warn!(error = %e, "token usage not recorded");
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
                .sessions()
                .append_message(session, user, message)
                .await
                .map_err(RuntimeError::memory("storing a message")),
            Journal::Ephemeral(sessions) => {
                let mut sessions = lock(sessions);
                let log = sessions
                    .entry(session.clone())
                    .or_insert_with(|| EphemeralSession::new(user));
                if &log.owner != user {
                    return Err(RuntimeError::SessionOwnedByOtherUser(session.clone()));
                }
                let seq = log.entries.last().map_or(1, |e| e.seq + 1);
                log.entries.push(Entry {
                    seq,
                    message: message.clone(),
                });
                log.times.push(Utc::now());
                Ok(seq)
            }
        }
    }

    /// The newest `limit` entries, oldest first: the last page.
    pub(crate) async fn recent(
        &self,
        session: &SessionId,
        limit: usize,
    ) -> Result<Vec<Entry>, RuntimeError> {
        let page = self.page(session, None, limit).await?;
        Ok(page
            .into_iter()
            .map(|e| Entry {
                seq: e.seq,
                message: e.message,
            })
            .collect())
    }

    pub(crate) async fn summary(
        &self,
        session: &SessionId,
    ) -> Result<Option<SummaryState>, RuntimeError> {
        match self {
            Journal::Durable(store) => store
                .sessions()
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
                .sessions()
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

    /// `session`'s record; `None` when it does not exist.
    pub(crate) async fn session(
        &self,
        session: &SessionId,
    ) -> Result<Option<SessionRecord>, RuntimeError> {
        match self {
            Journal::Durable(store) => match store.sessions().session_info(session).await {
                Ok(info) => Ok(Some(info.into())),
                Err(MemoryError::SessionNotFound(_)) => Ok(None),
                Err(e) => Err(RuntimeError::memory("reading a session")(e)),
            },
            Journal::Ephemeral(sessions) => {
                Ok(lock(sessions).get(session).map(|s| s.info(session)))
            }
        }
    }

    /// Every session of `user`, most recently active first.
    pub(crate) async fn sessions_of(
        &self,
        user: &UserId,
    ) -> Result<Vec<SessionRecord>, RuntimeError> {
        match self {
            Journal::Durable(store) => Ok(store
                .sessions()
                .list_sessions(user)
                .await
                .map_err(RuntimeError::memory("listing sessions"))?
                .into_iter()
                .map(SessionRecord::from)
                .collect()),
            Journal::Ephemeral(sessions) => {
                let mut out: Vec<SessionRecord> = lock(sessions)
                    .iter()
                    .filter(|(_, s)| &s.owner == user)
                    .map(|(id, s)| s.info(id))
                    .collect();
                out.sort_by_key(|s| std::cmp::Reverse(s.last_active_at));
                Ok(out)
            }
        }
    }

    /// Creates `session` for `user` (harmless when it is already theirs; another user's is
    /// refused) and sets its title when one is given.
    pub(crate) async fn create(
        &self,
        session: &SessionId,
        user: &UserId,
        title: Option<&str>,
    ) -> Result<SessionRecord, RuntimeError> {
        match self {
            Journal::Durable(store) => Ok(store
                .sessions()
                .create_session(session, user, title)
                .await
                .map_err(RuntimeError::memory("creating a session"))?
                .into()),
            Journal::Ephemeral(sessions) => {
                let mut sessions = lock(sessions);
                let log = sessions
                    .entry(session.clone())
                    .or_insert_with(|| EphemeralSession::new(user));
                if &log.owner != user {
                    return Err(RuntimeError::SessionOwnedByOtherUser(session.clone()));
                }
                if let Some(title) = clean_title(title) {
                    log.title = Some(title);
                }
                Ok(log.info(session))
            }
        }
    }

    /// Sets the title of an existing session (an empty title clears it).
    pub(crate) async fn set_title(
        &self,
        session: &SessionId,
        title: &str,
    ) -> Result<(), RuntimeError> {
        match self {
            Journal::Durable(store) => store
                .sessions()
                .set_session_title(session, title)
                .await
                .map_err(RuntimeError::memory("setting a session title")),
            Journal::Ephemeral(sessions) => {
                if let Some(log) = lock(sessions).get_mut(session) {
                    log.title = clean_title(Some(title));
                }
                Ok(())
            }
        }
    }

    /// Sets the model an existing session uses (`None`: the default).
    pub(crate) async fn set_model(
        &self,
        session: &SessionId,
        model: Option<&str>,
    ) -> Result<(), RuntimeError> {
        match self {
            Journal::Durable(store) => store
                .sessions()
                .set_session_model(session, model)
                .await
                .map_err(RuntimeError::memory("setting a session's model")),
            Journal::Ephemeral(sessions) => {
                if let Some(log) = lock(sessions).get_mut(session) {
                    log.model = model.map(str::to_owned);
                }
                Ok(())
            }
        }
    }

    /// `user`'s token usage in `session`, per model id (none kept without a store).
    pub(crate) async fn usage_by_model(
        &self,
        user: &UserId,
        session: &SessionId,
    ) -> Result<Vec<(String, types::Usage)>, RuntimeError> {
        match self {
            Journal::Durable(store) => Ok(store
                .usage()
                .usage_by_model(user, memory::UsageScope::Session(session))
                .await
                .map_err(RuntimeError::memory("reading token usage"))?
                .into_iter()
                .map(|m| (m.model, m.usage))
                .collect()),
            Journal::Ephemeral(_) => Ok(Vec::new()),
        }
    }

    /// Up to `limit` entries before `before` (all when `None`), oldest first.
    pub(crate) async fn page(
        &self,
        session: &SessionId,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<TimedEntry>, RuntimeError> {
        match self {
            Journal::Durable(store) => Ok(store
                .sessions()
                .history(session, before, limit)
                .await
                .map_err(RuntimeError::memory("reading the history"))?
                .into_iter()
                .map(|e| TimedEntry {
                    seq: e.seq,
                    message: e.message,
                    created_at: e.created_at,
                })
                .collect()),
            Journal::Ephemeral(sessions) => {
                let sessions = lock(sessions);
                let Some(log) = sessions.get(session) else {
                    return Ok(Vec::new());
                };
                let end = log
                    .entries
                    .iter()
                    .position(|e| before.is_some_and(|b| e.seq >= b))
                    .unwrap_or(log.entries.len());
                let start = end.saturating_sub(limit);
                Ok(log.entries[start..end]
                    .iter()
                    .zip(&log.times[start..end])
                    .map(|(e, at)| TimedEntry {
                        seq: e.seq,
                        message: e.message.clone(),
                        created_at: *at,
                    })
                    .collect())
            }
        }
    }
}

fn clean_title(title: Option<&str>) -> Option<String> {
    title
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data: no invariant a panic could break half-way.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> (SessionId, UserId, UserId) {
        (
            SessionId::parse("s1").unwrap(),
            UserId::parse("alice").unwrap(),
            UserId::parse("bob").unwrap(),
        )
    }

    /// Without a store, sessions are still listed, titled, owned and paged like stored ones.
    #[tokio::test]
    async fn ephemeral_sessions_are_listed_owned_titled_and_paged() {
        let journal = Journal::ephemeral();
        let (s1, alice, bob) = ids();
        journal.create(&s1, &alice, Some(" Tea ")).await.unwrap();
        for i in 1..=5 {
            let seq = journal
                .append(&s1, &alice, &Message::user(format!("m{i}")))
                .await
                .unwrap();
            assert_eq!(seq, i);
        }
        assert!(matches!(
            journal.create(&s1, &bob, None).await,
            Err(RuntimeError::SessionOwnedByOtherUser(_))
        ));
        let listed = journal.sessions_of(&alice).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (
                listed[0].title.as_deref(),
                listed[0].messages,
                listed[0].conversation
            ),
            (Some("Tea"), 5, true)
        );
        assert!(journal.sessions_of(&bob).await.unwrap().is_empty());

        let seqs = |page: Vec<TimedEntry>| page.iter().map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(seqs(journal.page(&s1, None, 2).await.unwrap()), vec![4, 5]);
        assert_eq!(
            seqs(journal.page(&s1, Some(4), 2).await.unwrap()),
            vec![2, 3]
        );
        assert_eq!(seqs(journal.page(&s1, Some(2), 5).await.unwrap()), vec![1]);
        assert!(journal.page(&s1, Some(1), 5).await.unwrap().is_empty());

        journal.set_title(&s1, "").await.unwrap();
        let record = journal.session(&s1).await.unwrap().unwrap();
        assert_eq!(record.title, None);
        let unknown = SessionId::parse("nope").unwrap();
        assert_eq!(journal.session(&unknown).await.unwrap(), None);
    }
}
