//! Listing notes page by page, and the expiry sweeper.
//!
//! A page is the user's live notes newest first, optionally of one category and carrying any of
//! some tags, with the total matching count. The cursor is the last note shown, as
//! `(created_at, note_id)`: the next page starts strictly after it in that order, so notes saved
//! between two pages (they are newer) never shift the pages that follow — no duplicate, no gap.
//!
//! The sweeper deletes expired notes of every user of the store, each with its event, chunks,
//! vectors, all of one sweep in one transaction (like any delete).

use libsql::{Connection, Rows, Value};
use serde::{Deserialize, Serialize};
use types::{NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::indexing::{EventRef, delete_event};
use crate::notes::lifecycle::forget_versions;
use crate::notes::metadata::Category;
use crate::notes::note::{Note, note_from_row};
use crate::rooms::Upkeep;
use crate::store::batch_read::Reads;
use crate::store::rows::first_row;
use crate::store::stmt::Stmt;
use crate::store::{begin, finish};
use crate::time::{self, now_text};

/// Largest page.
pub const MAX_PAGE: usize = 200;
/// Most notes one sweep deletes (the next sweep takes the rest).
const SWEEP_BATCH: i64 = 500;

/// Which notes to list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListQuery {
    pub category: Option<Category>,
    /// Only notes carrying at least one of these tags.
    #[serde(default)]
    pub tags_any: Vec<String>,
    /// Page size, clamped to `1..=`[`MAX_PAGE`].
    pub limit: usize,
    /// The `next_cursor` of the previous page; `None` for the first page.
    pub cursor: Option<String>,
}

/// One page of notes, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotePage {
    pub notes: Vec<Note>,
    /// Live notes matching the query (all pages).
    pub total: u64,
    /// Pass this to get the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

fn parse_cursor(cursor: &str) -> Result<(String, String), MemoryError> {
    let bad = || MemoryError::InvalidInput("the cursor is not one this store gave out".into());
    let (at, id) = cursor.split_once('~').ok_or_else(bad)?;
    time::parse(at).map_err(|_| bad())?;
    NoteId::parse(id).map_err(|_| bad())?;
    Ok((at.to_owned(), id.to_owned()))
}

/// `WHERE` conditions on `notes` for the query (not the cursor), with their parameters.
fn conditions(
    session: &SessionId,
    query: &ListQuery,
    now: &str,
    params: &mut Vec<Value>,
) -> String {
    params.push(Value::Text(session.to_string()));
    params.push(Value::Text(now.to_owned()));
    let mut sql = "session_id = ? AND (expires_at IS NULL OR expires_at > ?)".to_owned();
    if let Some(category) = query.category {
        sql.push_str(" AND category = ?");
        params.push(Value::Text(category.as_str().to_owned()));
    }
    if !query.tags_any.is_empty() {
        let marks = vec!["?"; query.tags_any.len()].join(", ");
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM json_each(metadata_json, '$.tags') t WHERE t.value IN ({marks}))"
        ));
        params.extend(query.tags_any.iter().map(|t| Value::Text(t.clone())));
    }
    sql
}

/// The total's statement. Without tags it reads indexes only: the session's (or category's) notes
/// from a covering index, less the expired ones from the expiry index — never every row's
/// `expires_at`, which costs ~100 ms at 100k notes.
fn count_query(
    session: &SessionId,
    query: &ListQuery,
    now: &str,
    filter: &str,
    params: &[Value],
) -> (String, Vec<Value>) {
    if !query.tags_any.is_empty() {
        return (
            format!("SELECT count(*) FROM notes WHERE {filter}"),
            params.to_vec(),
        );
    }
    let session = Value::Text(session.to_string());
    let (category_sql, category) = match query.category {
        Some(c) => (
            " AND category = ?",
            vec![Value::Text(c.as_str().to_owned())],
        ),
        None => ("", Vec::new()),
    };
    let sql = format!(
        "SELECT (SELECT count(*) FROM notes WHERE session_id = ?{category_sql})
              - (SELECT count(*) FROM notes INDEXED BY notes_by_expiry
                 WHERE expires_at IS NOT NULL AND expires_at <= ? AND session_id = ?{category_sql})"
    );
    let mut out = vec![session.clone()];
    out.extend(category.iter().cloned());
    out.push(Value::Text(now.to_owned()));
    out.push(session);
    out.extend(category);
    (sql, out)
}

async fn notes_of(
    conn: &Connection,
    sql: &str,
    params: Vec<Value>,
) -> Result<Vec<Note>, MemoryError> {
    let rows = conn
        .query(sql, params)
        .await
        .map_err(MemoryError::db(LIST_CTX))?;
    notes_from(rows).await
}

const LIST_CTX: &str = "listing notes";

async fn notes_from(mut rows: Rows) -> Result<Vec<Note>, MemoryError> {
    let mut notes = Vec::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(LIST_CTX))? {
        notes.push(note_from_row(&row)?.note);
    }
    Ok(notes)
}

impl MemoryStore {
    /// One page of `user`'s live notes, newest first, with the total count.
    pub async fn list(&self, user: &UserId, query: &ListQuery) -> Result<NotePage, MemoryError> {
        let cursor = query.cursor.as_deref().map(parse_cursor).transpose()?;
        let limit = query.limit.clamp(1, MAX_PAGE);
        let (session, query) = (SessionId::user_memory(user), query.clone());
        let batching = self.batching();
        self.read(move |conn| async move {
            let now = now_text();
            let mut params = Vec::new();
            let filter = conditions(&session, &query, &now, &mut params);
            let (count_sql, count_params) = count_query(&session, &query, &now, &filter, &params);
            let mut sql = format!(
                "SELECT note_id, content, metadata_json, created_at, updated_at, event_seq
                 FROM notes WHERE {filter}"
            );
            if let Some((at, id)) = cursor {
                sql.push_str(" AND (created_at, note_id) < (?, ?)");
                params.push(Value::Text(at));
                params.push(Value::Text(id));
            }
            sql.push_str(" ORDER BY created_at DESC, note_id DESC LIMIT ?");
            // One more than the page, to know whether another page follows.
            params.push(Value::Integer(i64::try_from(limit + 1).unwrap_or(i64::MAX)));
            // The count and the page: one request to a remote server.
            let stmts = [
                Stmt::built(count_sql, count_params),
                Stmt::built(sql, params),
            ];
            let [counted, page] = Reads::new(conn, batching).rows_n(stmts, LIST_CTX).await?;
            let total: i64 = first_row(counted, LIST_CTX, |row| {
                row.get(0).map_err(MemoryError::db(LIST_CTX))
            })
            .await?
            .unwrap_or(0);
            let mut notes = notes_from(page).await?;
            let next_cursor = (notes.len() > limit).then(|| {
                notes.truncate(limit);
                notes
                    .last()
                    .map(|n| format!("{}~{}", time::to_text(n.created_at), n.note_id))
            });
            Ok(NotePage {
                notes,
                total: u64::try_from(total).unwrap_or(0),
                next_cursor: next_cursor.flatten(),
            })
        })
        .await
    }
}

/// The sweeper task started by [`Upkeep::spawn_sweeper`](crate::Upkeep::spawn_sweeper); stops when dropped.
#[derive(Debug)]
pub struct Sweeper(tokio::task::JoinHandle<()>);

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Upkeep<'_> {
    /// `user`'s notes that have expired and are not swept yet, soonest expired first.
    pub async fn list_expired(&self, user: &UserId) -> Result<Vec<Note>, MemoryError> {
        let session = SessionId::user_memory(user);
        self.read(move |conn| async move {
            notes_of(
                &conn,
                "SELECT note_id, content, metadata_json, created_at, updated_at, event_seq
                 FROM notes WHERE session_id = ? AND expires_at IS NOT NULL AND expires_at <= ?
                 ORDER BY expires_at, note_id",
                vec![Value::Text(session.to_string()), Value::Text(now_text())],
            )
            .await
        })
        .await
    }

    /// Deletes notes expired by now (at most 500 per call) in one transaction; returns their ids.
    pub async fn sweep_expired(&self) -> Result<Vec<NoteId>, MemoryError> {
        let index = self.inner.index.clone();
        let swept = self
            .write(move |conn| async move {
                let tx = begin(&conn).await?;
                let mut changes = Vec::new();
                let outcome = async {
                    let ctx = "deleting expired notes";
                    let mut rows = tx
                        .query(
                            "SELECT note_id, session_id, event_seq FROM notes
                             WHERE expires_at IS NOT NULL AND expires_at <= ?1 LIMIT ?2",
                            libsql::params![now_text(), SWEEP_BATCH],
                        )
                        .await
                        .map_err(MemoryError::db(ctx))?;
                    let mut found = Vec::new();
                    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                        found.push((
                            row.get::<String>(0).map_err(MemoryError::db(ctx))?,
                            row.get::<String>(1).map_err(MemoryError::db(ctx))?,
                            row.get::<i64>(2).map_err(MemoryError::db(ctx))?,
                        ));
                    }
                    drop(rows);
                    let mut ids = Vec::with_capacity(found.len());
                    for (note_id, session, seq) in found {
                        let event = EventRef {
                            session: &session,
                            seq,
                        };
                        delete_event(&tx, event, &mut changes).await?;
                        tx.execute("DELETE FROM notes WHERE note_id = ?1", [note_id.as_str()])
                            .await
                            .map_err(MemoryError::db(ctx))?;
                        forget_versions(&tx, &note_id).await?;
                        ids.push(NoteId::parse(&note_id).map_err(MemoryError::corrupt("note id"))?);
                    }
                    Ok(ids)
                }
                .await;
                let ids = finish(tx, outcome).await?;
                index.apply(&changes);
                Ok(ids)
            })
            .await?;
        if !swept.is_empty() {
            tracing::info!(notes = swept.len(), "swept expired notes");
        }
        Ok(swept)
    }

    /// Sweeps expired notes (and purges deleted notes and read schedule notifications past the
    /// retention window, and audit rows older than `audit_retention` when set) now and then every `every` (expired notes are
    /// hidden from every read at once anyway; the sweeper only reclaims them). Stops when the
    /// returned handle is dropped.
    pub fn spawn_sweeper(
        &self,
        every: std::time::Duration,
        audit_retention: Option<chrono::Duration>,
    ) -> Sweeper {
        let store = MemoryStore::clone(self);
        Sweeper(tokio::spawn(async move {
            loop {
                // A full batch means more are waiting: sweep again at once.
                let full = match store.upkeep().sweep_expired().await {
                    Ok(ids) => ids.len() >= usize::try_from(SWEEP_BATCH).unwrap_or(usize::MAX),
                    Err(e) => {
                        tracing::warn!(error = %e, "sweeping expired notes failed");
                        false
                    }
                };
                // Deleted notes past the retention window are purged with everything they left.
                if let Err(e) = store
                    .upkeep()
                    .purge_deleted(store.upkeep().tombstone_retention())
                    .await
                {
                    tracing::warn!(error = %e, "purging deleted notes failed");
                }
                // Notifications a client was shown are kept as long as a deleted note.
                if let Err(e) = store
                    .schedules()
                    .prune_read_notifications(store.upkeep().tombstone_retention())
                    .await
                {
                    tracing::warn!(error = %e, "pruning read notifications failed");
                }
                if let Some(keep) = audit_retention
                    && let Err(e) = store.audit().prune_audit(keep).await
                {
                    tracing::warn!(error = %e, "pruning the audit log failed");
                }
                if !full {
                    tokio::time::sleep(every).await;
                }
            }
        }))
    }
}
