//! Past conversations as a search scope: every conversation session of a user (their messages
//! are indexed like notes — user and assistant text, chunked and embedded in the message's own
//! transaction, kept fresh through the same trigger-fed change log), and what a message hit needs
//! to be read as a memory: its session's title, its date and speaker, and the turns around it.
//! Scoped by user before anything is read: another user's sessions are never listed.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use libsql::Connection;
use serde::{Deserialize, Serialize};
use types::{Message, Role, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::sessions::{from_sql_seq, to_sql_seq};
use crate::store::rows::query_first;
use crate::time;

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

/// A conversation session's owner, kind and title.
struct SessionHead {
    user: String,
    conversation: bool,
    title: Option<String>,
}

impl MemoryStore {
    /// `user`'s conversation sessions (not the notes namespace), most recently active first. One
    /// small read of the `sessions` table (nothing is counted: a search of every conversation
    /// lists them each time).
    pub async fn conversation_sessions(
        &self,
        user: &UserId,
    ) -> Result<Vec<SessionId>, MemoryError> {
        let user = user.clone();
        self.read_small(move |conn| async move {
            let ctx = "listing conversation sessions";
            let mut rows = conn
                .query(
                    "SELECT session_id FROM sessions
                     WHERE user_id = ?1 AND kind = 'conversation' ORDER BY last_active_at DESC",
                    [user.as_str()],
                )
                .await
                .map_err(MemoryError::db(ctx))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                let id = row.get::<String>(0).map_err(MemoryError::db(ctx))?;
                out.push(SessionId::parse(&id).map_err(MemoryError::corrupt("session id"))?);
            }
            Ok(out)
        })
        .await
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
        let hit = [(session.clone(), seq)];
        self.conversation_contexts(user, &hit, radius)
            .await?
            .pop()
            .flatten()
            .ok_or_else(|| MemoryError::SessionNotFound(session.clone()))
    }

    /// [`MemoryStore::conversation_context`] of each message `(session, seq)` of `hits`, in one
    /// small read (a search's hits are read together, not one request each); `None` for a
    /// message that is not in one of `user`'s conversations.
    pub async fn conversation_contexts(
        &self,
        user: &UserId,
        hits: &[(SessionId, u64)],
        radius: usize,
    ) -> Result<Vec<Option<ConversationContext>>, MemoryError> {
        let (user, hits) = (user.clone(), hits.to_vec());
        self.read_small(move |conn| async move {
            let mut heads: HashMap<SessionId, Option<SessionHead>> = HashMap::new();
            let mut out = Vec::with_capacity(hits.len());
            for (session, seq) in hits {
                if !heads.contains_key(&session) {
                    let head = session_head(&conn, &session).await?;
                    heads.insert(session.clone(), head);
                }
                let head = heads.get(&session).and_then(Option::as_ref);
                let Some(head) = head.filter(|h| h.conversation && h.user == user.as_str()) else {
                    out.push(None);
                    continue;
                };
                let spoken = spoken_near(&conn, &session, seq, radius).await?;
                out.push(context_of(
                    &session,
                    head.title.clone(),
                    &spoken,
                    seq,
                    radius,
                ));
            }
            Ok(out)
        })
        .await
    }
}

async fn session_head(
    conn: &Connection,
    session: &SessionId,
) -> Result<Option<SessionHead>, MemoryError> {
    query_first(
        conn,
        "SELECT user_id, kind, title FROM sessions WHERE session_id = ?1",
        [session.as_str()],
        "reading a conversation",
        |row| {
            let ctx = "reading a conversation";
            Ok(SessionHead {
                user: row.get(0).map_err(MemoryError::db(ctx))?,
                conversation: row.get::<String>(1).map_err(MemoryError::db(ctx))? == "conversation",
                title: row.get(2).map_err(MemoryError::db(ctx))?,
            })
        },
    )
    .await
}

/// One user or assistant message: its sequence number, speaker, text and date.
type Spoken = (u64, &'static str, String, DateTime<Utc>);

/// The user and assistant messages around `seq`, oldest first. Tool calls and results sit between
/// the turns: read generously (`4 × radius + 1` events each side), keep the spoken ones.
async fn spoken_near(
    conn: &Connection,
    session: &SessionId,
    seq: u64,
    radius: usize,
) -> Result<Vec<Spoken>, MemoryError> {
    let ctx = "reading a conversation";
    let window = (radius * 4 + 1) as u64;
    let low = to_sql_seq(seq.saturating_sub(window))?;
    let high = to_sql_seq(seq.saturating_add(window))?;
    let mut rows = conn
        .query(
            "SELECT seq, payload_json, created_at FROM events
             WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq",
            libsql::params![session.as_str(), low, high],
        )
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut spoken = Vec::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        let payload: String = row.get(1).map_err(MemoryError::db(ctx))?;
        let message: Message =
            serde_json::from_str(&payload).map_err(MemoryError::corrupt("stored message"))?;
        let Some(who) = speaker(message.role) else {
            continue;
        };
        let Some(text) = message.content.filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        let at = time::parse(&row.get::<String>(2).map_err(MemoryError::db(ctx))?)?;
        let seq = from_sql_seq(row.get(0).map_err(MemoryError::db(ctx))?)?;
        spoken.push((seq, who, text, at));
    }
    Ok(spoken)
}

/// Message `seq` of `spoken` with up to `radius` spoken messages on each side; `None` when it is
/// not among them.
fn context_of(
    session: &SessionId,
    title: Option<String>,
    spoken: &[Spoken],
    seq: u64,
    radius: usize,
) -> Option<ConversationContext> {
    let at = spoken.iter().position(|(s, ..)| *s == seq)?;
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
    Some(ConversationContext {
        session_id: session.clone(),
        title,
        speaker: (*who).to_owned(),
        at: *when,
        neighbours,
    })
}
