//! Past conversations as a search scope: every conversation session of a user (their messages
//! are indexed like notes — user and assistant text, chunked and embedded in the message's own
//! transaction, kept fresh through the same trigger-fed change log), and what a message hit needs
//! to be read as a memory: its session's title, its date and speaker, and the turns around it.
//! Scoped by user before anything is read: another user's sessions are never listed.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use types::{Role, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::sessions::SessionKind;

/// Longest text of one neighbouring turn, in characters.
const NEIGHBOUR_CHARS: usize = 200;

/// One message near a hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NearbyTurn {
    pub seq: u64,
    /// `user` or `assistant`.
    pub speaker: String,
    /// The message's text, cut at [`NEIGHBOUR_CHARS`] characters.
    pub text: String,
}

/// Where a conversation hit was said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationContext {
    pub session_id: SessionId,
    pub title: Option<String>,
    /// `user` or `assistant`: who said the message.
    pub speaker: String,
    pub at: DateTime<Utc>,
    /// The user and assistant messages just before and after it, oldest first.
    pub neighbours: Vec<NearbyTurn>,
}

fn speaker(role: Role) -> Option<&'static str> {
    match role {
        Role::User => Some("user"),
        Role::Assistant => Some("assistant"),
        _ => None,
    }
}

impl MemoryStore {
    /// `user`'s conversation sessions (not the notes namespace), most recently active first.
    pub async fn conversation_sessions(
        &self,
        user: &UserId,
    ) -> Result<Vec<SessionId>, MemoryError> {
        Ok(self
            .sessions()
            .list_sessions(user)
            .await?
            .into_iter()
            .filter(|s| s.kind == SessionKind::Conversation && &s.user_id == user)
            .map(|s| s.session_id)
            .collect())
    }

    /// The context of message `seq` of `user`'s conversation `session`: its title, speaker and
    /// date, and up to `radius` user or assistant messages on each side. A session that is not
    /// `user`'s is [`MemoryError::SessionNotFound`].
    pub async fn conversation_context(
        &self,
        user: &UserId,
        session: &SessionId,
        seq: u64,
        radius: usize,
    ) -> Result<ConversationContext, MemoryError> {
        let info = self.sessions().session_info(session).await?;
        if &info.user_id != user || info.kind != SessionKind::Conversation {
            return Err(MemoryError::SessionNotFound(session.clone()));
        }
        // Tool calls and results sit between the turns: read generously, keep the spoken ones.
        let window = radius * 4 + 1;
        let events = self
            .sessions()
            .history(
                session,
                Some(seq.saturating_add(1 + radius as u64 * 2)),
                window * 2,
            )
            .await?;
        let spoken: Vec<(u64, &'static str, String, DateTime<Utc>)> = events
            .into_iter()
            .filter_map(|e| {
                let who = speaker(e.message.role)?;
                let text = e.message.content.filter(|t| !t.trim().is_empty())?;
                Some((e.seq, who, text, e.created_at))
            })
            .collect();
        let at = spoken.iter().position(|(s, ..)| *s == seq);
        let Some(at) = at else {
            return Err(MemoryError::SessionNotFound(session.clone()));
        };
        let (_, who, _, when) = &spoken[at];
        let neighbours = spoken
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != at && i.abs_diff(at) <= radius)
            .map(|(_, (seq, who, text, _))| NearbyTurn {
                seq: *seq,
                speaker: (*who).to_owned(),
                text: text.chars().take(NEIGHBOUR_CHARS).collect(),
            })
            .collect();
        Ok(ConversationContext {
            session_id: session.clone(),
            title: info.title,
            speaker: (*who).to_owned(),
            at: *when,
            neighbours,
        })
    }
}
