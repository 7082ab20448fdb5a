//! Session and history reads for the runtime's callers: a user's conversations, one
//! conversation's summary, titles, and pages of stored history. They read wherever the runtime
//! keeps history (the user's store, or process memory when memory is disabled), so a caller such
//! as the gateway never reaches into the store itself.

use chrono::{DateTime, Utc};
use types::{Message, SessionId, UserId};

use crate::RuntimeError;
use crate::journal::{SessionRecord, TimedEntry};
use crate::runtime::AgentRuntime;

/// One of a user's conversations.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub session_id: SessionId,
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    pub last_active_at: DateTime<Utc>,
    /// Messages stored so far.
    pub messages: u64,
    /// The model the session chose (`/model`), by name; `None`: the default.
    pub model: Option<String>,
}

/// One stored message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// Its number in the session (1, 2, …).
    pub seq: u64,
    pub message: Message,
    pub created_at: DateTime<Utc>,
}

impl From<SessionRecord> for Conversation {
    fn from(r: SessionRecord) -> Self {
        Self {
            session_id: r.session_id,
            title: r.title,
            created_at: r.created_at,
            last_active_at: r.last_active_at,
            messages: r.messages,
            model: r.model,
        }
    }
}

impl From<TimedEntry> for HistoryEntry {
    fn from(e: TimedEntry) -> Self {
        Self {
            seq: e.seq,
            message: e.message,
            created_at: e.created_at,
        }
    }
}

impl AgentRuntime {
    /// `session` when it is one of `user`'s conversations; `None` when it does not exist, is
    /// another user's, or is a memory namespace (callers answer all three the same way).
    pub async fn conversation(
        &self,
        user: &UserId,
        session: &SessionId,
    ) -> Result<Option<Conversation>, RuntimeError> {
        Ok(self
            .journal
            .session(session)
            .await?
            .filter(|r| &r.user_id == user && r.conversation)
            .map(Conversation::from))
    }

    /// `user`'s conversations, most recently active first.
    pub async fn conversations(&self, user: &UserId) -> Result<Vec<Conversation>, RuntimeError> {
        Ok(self
            .journal
            .sessions_of(user)
            .await?
            .into_iter()
            .filter(|r| r.conversation)
            .map(Conversation::from)
            .collect())
    }

    /// Stores a new (empty) conversation for `user` now, with an optional title, so that it
    /// exists before its first message. Another user's session is refused.
    pub async fn create_conversation(
        &self,
        user: &UserId,
        session: &SessionId,
        title: Option<&str>,
    ) -> Result<Conversation, RuntimeError> {
        let record = self.journal.create(session, user, title).await?;
        Ok(record.into())
    }

    /// Sets the title of `user`'s conversation `session` (an empty title clears it); false when
    /// it is not one of `user`'s conversations.
    pub async fn set_conversation_title(
        &self,
        user: &UserId,
        session: &SessionId,
        title: &str,
    ) -> Result<bool, RuntimeError> {
        if self.conversation(user, session).await?.is_none() {
            return Ok(false);
        }
        self.journal.set_title(session, title).await?;
        Ok(true)
    }

    /// Up to `limit` stored messages of `session` numbered below `before` (the newest when
    /// `None`), oldest first. Callers check ownership with [`AgentRuntime::conversation`].
    pub async fn history_page(
        &self,
        session: &SessionId,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<HistoryEntry>, RuntimeError> {
        Ok(self
            .journal
            .page(session, before, limit)
            .await?
            .into_iter()
            .map(HistoryEntry::from)
            .collect())
    }
}
