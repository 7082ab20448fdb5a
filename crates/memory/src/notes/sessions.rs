//! Sessions and their events: creation on first write, sequence allocation, history, titles.

use chrono::{DateTime, Utc};
use libsql::{Connection, Value};
use serde::{Deserialize, Serialize};
use types::{Message, Role, SessionId, UserId};

use crate::error::MemoryError;
use crate::notes::indexing::{ChunkMeta, EventRef, insert_chunks, prepare};
use crate::rooms::Sessions;
use crate::store::rows::query_first;
use crate::store::stmt_cache::each_row;
use crate::store::{begin, finish};
use crate::time::{self, now_text};

/// A conversation, or the user's memory namespace `memory:{user}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    Conversation,
    Memory,
}

impl SessionKind {
    pub(crate) fn of(session: &SessionId) -> Self {
        if session.is_user_memory() {
            SessionKind::Memory
        } else {
            SessionKind::Conversation
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SessionKind::Conversation => "conversation",
            SessionKind::Memory => "memory",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub session_id: SessionId,
    pub user_id: UserId,
    pub kind: SessionKind,
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    pub last_active_at: DateTime<Utc>,
    /// Events currently stored (deleted notes no longer count).
    pub events: u64,
    /// The model chosen for the session (a `[models.<name>]` name); `None`: the default.
    pub model: Option<String>,
}

/// One stored message with its place in the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    pub seq: u64,
    pub message: Message,
    pub created_at: DateTime<Utc>,
}

/// Roles whose text is indexed for search. System prompts and tool output are stored but not
/// indexed: they repeat and would crowd out what the user and the agent actually said.
fn indexed(role: Role) -> bool {
    matches!(role, Role::User | Role::Assistant)
}

async fn query_sessions(
    conn: &Connection,
    condition: &str,
    param: &str,
) -> Result<Vec<SessionInfo>, MemoryError> {
    let sql = format!(
        "SELECT s.session_id, s.user_id, s.kind, s.title, s.created_at, s.last_active_at,
                (SELECT count(*) FROM events e WHERE e.session_id = s.session_id), s.model
         FROM sessions s WHERE {condition}"
    );
    let ctx = "listing sessions";
    let mut out = Vec::new();
    let args = vec![Value::Text(param.to_owned())];
    each_row(conn, &sql, args, ctx, |row| {
        let text = |i| row.get::<String>(i).map_err(MemoryError::db(ctx));
        let kind = if text(2)? == "memory" {
            SessionKind::Memory
        } else {
            SessionKind::Conversation
        };
        out.push(SessionInfo {
            session_id: SessionId::parse(&text(0)?).map_err(MemoryError::corrupt("session id"))?,
            user_id: UserId::parse(&text(1)?).map_err(MemoryError::corrupt("user id"))?,
            kind,
            title: row.get::<Option<String>>(3).map_err(MemoryError::db(ctx))?,
            created_at: time::parse(&text(4)?)?,
            last_active_at: time::parse(&text(5)?)?,
            events: u64::try_from(row.get::<i64>(6).map_err(MemoryError::db(ctx))?).unwrap_or(0),
            model: row.get::<Option<String>>(7).map_err(MemoryError::db(ctx))?,
        });
        Ok(())
    })
    .await?;
    Ok(out)
}

/// The user `session` belongs to, if it exists.
pub(crate) async fn session_owner(
    conn: &Connection,
    session: &SessionId,
) -> Result<Option<String>, MemoryError> {
    let ctx = "opening the session";
    query_first(
        conn,
        "SELECT user_id FROM sessions WHERE session_id = ?1",
        [session.as_str()],
        ctx,
        |row| row.get::<String>(0).map_err(MemoryError::db(ctx)),
    )
    .await
}

/// Creates `session` for `user` on first write, or marks it active. A session belongs to the user
/// who created it: writing to another user's session is refused.
pub(crate) async fn ensure_session(
    conn: &Connection,
    session: &SessionId,
    user: &UserId,
    now: &str,
) -> Result<(), MemoryError> {
    let ctx = "opening the session";
    match session_owner(conn, session).await? {
        Some(owner) if owner != user.as_str() => {
            Err(MemoryError::SessionOwnedByOtherUser(session.clone()))
        }
        Some(_) => {
            conn.execute(
                "UPDATE sessions SET last_active_at = ?2 WHERE session_id = ?1",
                [session.as_str(), now],
            )
            .await
            .map_err(MemoryError::db(ctx))?;
            Ok(())
        }
        None => {
            if session.is_user_memory() && session != &SessionId::user_memory(user) {
                return Err(MemoryError::SessionOwnedByOtherUser(session.clone()));
            }
            conn.execute(
                "INSERT INTO sessions (session_id, user_id, kind, created_at, last_active_at, next_seq)
                 VALUES (?1, ?2, ?3, ?4, ?4, 1)",
                [session.as_str(), user.as_str(), SessionKind::of(session).as_str(), now],
            )
            .await
            .map_err(MemoryError::db(ctx))?;
            Ok(())
        }
    }
}

/// Takes the session's next sequence number, inside the caller's write transaction.
pub(crate) async fn allocate_seq(
    conn: &Connection,
    session: &SessionId,
) -> Result<u64, MemoryError> {
    let ctx = "allocating a sequence number";
    let seq: i64 = query_first(
        conn,
        "SELECT next_seq FROM sessions WHERE session_id = ?1",
        [session.as_str()],
        ctx,
        |row| row.get(0).map_err(MemoryError::db(ctx)),
    )
    .await?
    .ok_or_else(|| MemoryError::SessionNotFound(session.clone()))?;
    let next = seq
        .checked_add(1)
        .ok_or_else(|| MemoryError::SequenceOverflow(session.clone()))?;
    conn.execute(
        "UPDATE sessions SET next_seq = ?2 WHERE session_id = ?1",
        libsql::params![session.as_str(), next],
    )
    .await
    .map_err(MemoryError::db(ctx))?;
    from_sql_seq(seq)
}

pub(crate) fn to_sql_seq(seq: u64) -> Result<i64, MemoryError> {
    i64::try_from(seq)
        .map_err(|_| MemoryError::InvalidInput(format!("sequence {seq} is out of range")))
}

pub(crate) fn from_sql_seq(seq: i64) -> Result<u64, MemoryError> {
    u64::try_from(seq).map_err(MemoryError::corrupt("sequence number"))
}

impl Sessions<'_> {
    /// Appends `message` to `session` (created on first write, owned by `user`) and indexes its text,
    /// all in one transaction. Returns the event's sequence number (1, 2, 3, ... per session).
    pub async fn append_message(
        &self,
        session: &SessionId,
        user: &UserId,
        message: &Message,
    ) -> Result<u64, MemoryError> {
        self.append_message_at(session, user, message, None).await
    }

    /// [`Sessions::append_message`] dated `at` (an import of a conversation held elsewhere)
    /// instead of now.
    pub async fn append_message_at(
        &self,
        session: &SessionId,
        user: &UserId,
        message: &Message,
        at: Option<DateTime<Utc>>,
    ) -> Result<u64, MemoryError> {
        let text = message
            .content
            .as_deref()
            .filter(|_| indexed(message.role))
            .unwrap_or("");
        let prepared = prepare(self.inner.embedder.as_ref(), text).await?;
        let payload = serde_json::to_string(message).map_err(MemoryError::corrupt("message"))?;
        let (session, user) = (session.clone(), user.clone());
        let role = message.role.as_str();
        let index = self.inner.index.clone();
        self.write(move |conn| async move {
            let now = at.map_or_else(now_text, time::to_text);
            let tx = begin(&conn).await?;
            let mut changes = Vec::new();
            let outcome = async {
                ensure_session(&tx, &session, &user, &now).await?;
                let seq = allocate_seq(&tx, &session).await?;
                let seq_sql = to_sql_seq(seq)?;
                tx.execute(
                    "INSERT INTO events (session_id, seq, role, payload_json, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    libsql::params![session.as_str(), seq_sql, role, payload, now.as_str()],
                )
                .await
                .map_err(MemoryError::db("storing a message"))?;
                let meta = ChunkMeta {
                    source: "conversation".into(),
                    role: Some(role.into()),
                    created_at: now.clone(),
                    updated_at: now.clone(),
                    ..ChunkMeta::default()
                };
                let event = EventRef {
                    session: session.as_str(),
                    seq: seq_sql,
                };
                let facets = crate::notes::facet_rows::stored_facets(&meta, None, None);
                insert_chunks(&tx, event, &meta, &facets, &prepared, &mut changes).await?;
                Ok(seq)
            }
            .await;
            let seq = finish(tx, outcome).await?;
            index.apply(&changes);
            Ok(seq)
        })
        .await
    }

    /// Up to `limit` events of `session` before `before_seq` (or the latest), oldest first.
    pub async fn history(
        &self,
        session: &SessionId,
        before_seq: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, MemoryError> {
        let session = session.clone();
        let before = before_seq.map_or(Ok(i64::MAX), to_sql_seq)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |conn| async move {
            let mut rows = conn
                .query(
                    "SELECT seq, payload_json, created_at FROM events
                     WHERE session_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3",
                    libsql::params![session.as_str(), before, limit],
                )
                .await
                .map_err(MemoryError::db("reading history"))?;
            let mut events = Vec::new();
            while let Some(row) = rows
                .next()
                .await
                .map_err(MemoryError::db("reading history"))?
            {
                let seq: i64 = row.get(0).map_err(MemoryError::db("reading history"))?;
                let payload: String = row.get(1).map_err(MemoryError::db("reading history"))?;
                let created: String = row.get(2).map_err(MemoryError::db("reading history"))?;
                events.push(StoredEvent {
                    seq: from_sql_seq(seq)?,
                    message: serde_json::from_str(&payload)
                        .map_err(MemoryError::corrupt("stored message"))?,
                    created_at: time::parse(&created)?,
                });
            }
            events.reverse();
            Ok(events)
        })
        .await
    }

    /// The user's sessions, most recently active first.
    pub async fn list_sessions(&self, user: &UserId) -> Result<Vec<SessionInfo>, MemoryError> {
        let user = user.clone();
        self.read(move |conn| async move {
            query_sessions(
                &conn,
                "s.user_id = ?1 ORDER BY s.last_active_at DESC",
                user.as_str(),
            )
            .await
        })
        .await
    }

    pub async fn session_info(&self, session: &SessionId) -> Result<SessionInfo, MemoryError> {
        let session = session.clone();
        self.read(move |conn| async move {
            query_sessions(&conn, "s.session_id = ?1", session.as_str())
                .await?
                .pop()
                .ok_or(MemoryError::SessionNotFound(session))
        })
        .await
    }

    /// Creates `session` for `user` now (rather than with its first message), with an optional
    /// title, so that an empty session a user asked for survives a restart. Creating a session that
    /// exists and belongs to `user` is harmless (the title, when given, is set); another user's is
    /// refused.
    pub async fn create_session(
        &self,
        session: &SessionId,
        user: &UserId,
        title: Option<&str>,
    ) -> Result<SessionInfo, MemoryError> {
        let (id, owner) = (session.clone(), user.clone());
        let title = title
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        self.write(move |conn| async move {
            ensure_session(&conn, &id, &owner, &now_text()).await?;
            if let Some(title) = title {
                conn.execute(
                    "UPDATE sessions SET title = ?2 WHERE session_id = ?1",
                    libsql::params![id.as_str(), title],
                )
                .await
                .map_err(MemoryError::db("setting a session title"))?;
            }
            Ok(())
        })
        .await?;
        self.session_info(session).await
    }

    /// Sets the model the session uses (`None`: the default again).
    pub async fn set_session_model(
        &self,
        session: &SessionId,
        model: Option<&str>,
    ) -> Result<(), MemoryError> {
        let model = model.map(str::to_owned);
        self.set_column(session, SessionColumn::Model, model).await
    }

    /// Sets the session's title (an empty title clears it).
    pub async fn set_session_title(
        &self,
        session: &SessionId,
        title: &str,
    ) -> Result<(), MemoryError> {
        let title = Some(title.trim().to_owned()).filter(|t| !t.is_empty());
        self.set_column(session, SessionColumn::Title, title).await
    }

    /// Sets one of the session's own settings; the session must exist.
    async fn set_column(
        &self,
        session: &SessionId,
        column: SessionColumn,
        value: Option<String>,
    ) -> Result<(), MemoryError> {
        let session = session.clone();
        let (sql, ctx) = match column {
            SessionColumn::Title => (
                "UPDATE sessions SET title = ?2 WHERE session_id = ?1",
                "setting a session title",
            ),
            SessionColumn::Model => (
                "UPDATE sessions SET model = ?2 WHERE session_id = ?1",
                "setting a session's model",
            ),
        };
        self.write(move |conn| async move {
            let changed = conn
                .execute(sql, libsql::params![session.as_str(), value])
                .await
                .map_err(MemoryError::db(ctx))?;
            if changed == 0 {
                return Err(MemoryError::SessionNotFound(session));
            }
            Ok(())
        })
        .await
    }
}

/// A setting of a session stored in its own column.
#[derive(Debug, Clone, Copy)]
enum SessionColumn {
    Title,
    Model,
}
