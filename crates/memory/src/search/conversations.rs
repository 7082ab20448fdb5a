//! Past conversations as a search scope: every conversation session of a user (their messages
//! are indexed like notes — user and assistant text, chunked and embedded in the message's own
//! transaction, kept fresh through the same trigger-fed change log), and what a message hit needs
//! to be read as a memory: its session's title, its date and speaker, and the turns around it.
//! Scoped by user before anything is read: another user's sessions are never listed.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use chrono::{DateTime, Utc};
use libsql::Value;
use serde::{Deserialize, Serialize};
use types::{Message, Role, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::sessions::{from_sql_seq, to_sql_seq};
use crate::store::batch_read::Reads;
use crate::store::stmt::Stmt;
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
    /// statement (a search's hits are read together: one request to a server, one prepared
    /// statement on a file); `None` for a message that is not in one of `user`'s conversations.
    pub async fn conversation_contexts(
        &self,
        user: &UserId,
        hits: &[(SessionId, u64)],
        radius: usize,
    ) -> Result<Vec<Option<ConversationContext>>, MemoryError> {
        let (user, hits) = (user.clone(), hits.to_vec());
        let batching = self.batching();
        self.read_small(move |conn| async move {
            let reads = Reads::new(conn, batching);
            let mut out = Vec::with_capacity(hits.len());
            for part in hits.chunks(HITS_PER_READ) {
                // The `radius` events on each side first: all it takes when no tool call sits
                // between the turns. A hit short of spoken neighbours where its conversation
                // goes on is read again, wider.
                let mut near = spoken_near(&reads, &user, part, radius).await?;
                let mut found = Vec::with_capacity(part.len());
                let mut short = Vec::new();
                for (k, (session, seq)) in part.iter().enumerate() {
                    let context = match near.remove(&k) {
                        Some(near) => context_of(session, &near, *seq, radius, radius, false)?,
                        None => Found::Nothing,
                    };
                    if matches!(context, Found::Short) {
                        short.push(k);
                    }
                    found.push(context);
                }
                if !short.is_empty() {
                    let wide = radius * 4 + 1;
                    let again: Vec<(SessionId, u64)> =
                        short.iter().map(|&k| part[k].clone()).collect();
                    let mut near = spoken_near(&reads, &user, &again, wide).await?;
                    for (j, &k) in short.iter().enumerate() {
                        let (session, seq) = &part[k];
                        found[k] = match near.remove(&j) {
                            Some(near) => context_of(session, &near, *seq, radius, wide, true)?,
                            None => Found::Nothing,
                        };
                    }
                }
                out.extend(found.into_iter().map(|f| match f {
                    Found::Context(c) => Some(c),
                    Found::Nothing | Found::Short => None,
                }));
            }
            Ok(out)
        })
        .await
    }
}

/// Hits whose contexts one statement reads (four arguments each, far under SQLite's limit).
const HITS_PER_READ: usize = 64;

/// One user or assistant message: its sequence number, speaker, text and date.
type Spoken = (u64, &'static str, String, DateTime<Utc>);

/// A user or assistant event as read: its sequence number, payload and date, parsed only when
/// it is shown.
struct Raw {
    seq: u64,
    payload: String,
    created: String,
}

/// A conversation's title and next sequence number, and the events read around a hit.
struct Near {
    title: Option<String>,
    next_seq: u64,
    events: Vec<Raw>,
}

/// For each hit `k` of `hits` in one of `user`'s conversations, its session's title and the user
/// and assistant events around it, oldest first. Tool calls and results sit between the turns:
/// `window` events on each side. A session that is not `user`'s conversation yields no row: its
/// events are never read.
async fn spoken_near(
    reads: &Reads,
    user: &UserId,
    hits: &[(SessionId, u64)],
    window: usize,
) -> Result<HashMap<usize, Near>, MemoryError> {
    let ctx = "reading a conversation";
    let window = window as u64;
    let mut args = Vec::with_capacity(hits.len() * 4 + 1);
    for (k, (session, seq)) in hits.iter().enumerate() {
        args.push(Value::Integer(i64::try_from(k).unwrap_or(i64::MAX)));
        args.push(Value::Text(session.as_str().to_owned()));
        args.push(Value::Integer(to_sql_seq(seq.saturating_sub(window))?));
        args.push(Value::Integer(to_sql_seq(seq.saturating_add(window))?));
    }
    // Last: SQLite numbers each `?` after those before it in the text, the windows' first.
    args.push(Value::Text(user.as_str().to_owned()));
    let windows = vec!["(?, ?, ?, ?)"; hits.len()].join(", ");
    let sql = format!(
        "WITH w (k, session_id, low, high) AS (VALUES {windows})
         SELECT w.k, s.title, s.next_seq, e.seq, e.payload_json, e.created_at
         FROM w JOIN sessions s ON s.session_id = w.session_id
         JOIN events e ON e.session_id = w.session_id AND e.seq BETWEEN w.low AND w.high
         WHERE s.user_id = ? AND s.kind = 'conversation' AND e.role IN ('user', 'assistant')
         ORDER BY w.k, e.seq"
    );
    let mut out: HashMap<usize, Near> = HashMap::new();
    reads
        .each(Stmt::built(sql, args), ctx, |row| {
            let k = usize::try_from(row.get::<i64>(0).map_err(MemoryError::db(ctx))?)
                .map_err(MemoryError::corrupt("hit number"))?;
            let near = match out.entry(k) {
                Entry::Occupied(near) => near.into_mut(),
                Entry::Vacant(new) => new.insert(Near {
                    title: row.get(1).map_err(MemoryError::db(ctx))?,
                    next_seq: from_sql_seq(row.get(2).map_err(MemoryError::db(ctx))?)?,
                    events: Vec::new(),
                }),
            };
            near.events.push(Raw {
                seq: from_sql_seq(row.get(3).map_err(MemoryError::db(ctx))?)?,
                payload: row.get(4).map_err(MemoryError::db(ctx))?,
                created: row.get(5).map_err(MemoryError::db(ctx))?,
            });
            Ok(())
        })
        .await?;
    Ok(out)
}

/// The event as a spoken message; `None` for one without text (a tool call).
fn spoken(raw: &Raw) -> Result<Option<Spoken>, MemoryError> {
    let message: Message =
        serde_json::from_str(&raw.payload).map_err(MemoryError::corrupt("stored message"))?;
    let Some(who) = speaker(message.role) else {
        return Ok(None);
    };
    let Some(text) = message.content.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    Ok(Some((raw.seq, who, text, time::parse(&raw.created)?)))
}

/// What the events read around a hit tell.
enum Found {
    Context(ConversationContext),
    /// Not a spoken message of the conversation.
    Nothing,
    /// Fewer than `radius` spoken messages on a side where the conversation has events beyond
    /// those read.
    Short,
}

/// Message `seq` of `near` (its `window` events on each side) with up to `radius` spoken messages
/// on each side, parsed from the message outwards (the rest left unread). Short only when asked
/// (`short_ok` false): the widest read takes what it found.
fn context_of(
    session: &SessionId,
    near: &Near,
    seq: u64,
    radius: usize,
    window: usize,
    short_ok: bool,
) -> Result<Found, MemoryError> {
    let events = &near.events;
    let Some(at) = events.iter().position(|r| r.seq == seq) else {
        return Ok(Found::Nothing);
    };
    let Some((_, who, _, when)) = spoken(&events[at])? else {
        return Ok(Found::Nothing);
    };
    let mut before = Vec::new();
    for raw in events[..at].iter().rev() {
        if before.len() == radius {
            break;
        }
        before.extend(spoken(raw)?);
    }
    let mut after = Vec::new();
    for raw in &events[at + 1..] {
        if after.len() == radius {
            break;
        }
        after.extend(spoken(raw)?);
    }
    // Sequence numbers start at 1 and end before `next_seq`.
    let window = window as u64;
    let more_before = before.len() < radius && seq > window + 1;
    let more_after =
        after.len() < radius && seq.saturating_add(window) < near.next_seq.saturating_sub(1);
    if !short_ok && (more_before || more_after) {
        return Ok(Found::Short);
    }
    let neighbours = before
        .into_iter()
        .rev()
        .chain(after)
        .map(|(seq, who, text, _)| NearbyTurn {
            seq,
            speaker: who.to_owned(),
            text: text.chars().take(NEIGHBOUR_CHARS).collect(),
        })
        .collect();
    Ok(Found::Context(ConversationContext {
        session_id: session.clone(),
        title: near.title.clone(),
        speaker: who.to_owned(),
        at: when,
        neighbours,
    }))
}
