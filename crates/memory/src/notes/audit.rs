//! The audit log (`audit_log`, migration 6): one row per memory operation from any surface.
//!
//! A write's row is inserted inside the write's own transaction (the [`AuditTag`] rides on the
//! write's [`crate::CallKey`]), so the log and the notes never disagree: a rolled-back write
//! leaves no row claiming it happened. Reads, denials and failures get a row of their own through
//! [`Audit::append_audit`](crate::Audit::append_audit). Rows never hold note text: only the surface and client, tool,
//! operation, namespace, key, note id, outcome, a short reason code and redaction counts.
//!
//! The names in a row (client, namespace, key) are chosen by callers: the governance stage
//! redacts them, and every row is cut here to a fixed length per field ([`MAX_NAME_CHARS`]) with
//! control characters replaced, so no caller can fill the log or forge a line in it.
//! [`Audit::audit_page`](crate::Audit::audit_page) reads the log newest first, a page at a time, and says whether
//! older rows remain; [`Audit::prune_audit`](crate::Audit::prune_audit) (run by the sweeper for `[governance]
//! audit_retention_days`) deletes rows past the retention window.

use chrono::{DateTime, Utc};
use libsql::{Connection, Value};
use serde::Serialize;
use types::{AuditTag, NoteId, UserId};

use crate::error::MemoryError;
use crate::rooms::Audit;
use crate::store::stmt::Stmt;
use crate::time::{now_text, parse, to_text};

/// Most rows one [`Audit::audit_log`](crate::Audit::audit_log) or [`Audit::audit_page`](crate::Audit::audit_page) call returns.
pub const MAX_AUDIT_ROWS: usize = 10_000;

/// Longest client, namespace or key a row keeps, in characters (a cut ends with `…`).
pub const MAX_NAME_CHARS: usize = 128;
/// Longest tool name, outcome or reason code a row keeps.
const MAX_CODE_CHARS: usize = 64;

/// Which rows [`Audit::audit_page`](crate::Audit::audit_page) reads: newest first, older than the cursor `before`
/// (a row id from the previous page's [`AuditPage::next_before`]), at or after `since`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub since: Option<DateTime<Utc>>,
    pub before: Option<i64>,
    /// Rows per page ([`MAX_AUDIT_ROWS`] at most; 0 means 100).
    pub limit: usize,
}

/// One page of the log, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditPage {
    pub rows: Vec<AuditRecord>,
    /// Set when older rows match too: pass it as [`AuditQuery::before`] for the next page.
    pub next_before: Option<i64>,
}

/// `text` as a row keeps it: control characters replaced by `?`, at most `max` characters.
fn capped(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if text.chars().nth(max).is_some() {
        out.pop();
        out.push('…');
    }
    out
}

/// An operation to record: what the governance stage knows, plus how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry<'a> {
    pub tag: &'a AuditTag,
    pub note_id: Option<&'a NoteId>,
    /// `ok`, `denied`, `rate_limited`, `rejected`, `error`.
    pub outcome: &'a str,
    /// A short code (`namespace`, `operation`, `read_only`, `ttl`, `pii`, `secret`, an error
    /// kind), never free text from the call.
    pub reason: Option<&'a str>,
}

/// One row of the log, as read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditRecord {
    pub id: i64,
    pub at: DateTime<Utc>,
    pub user_id: String,
    pub surface: String,
    pub client: Option<String>,
    pub tool: String,
    pub operation: String,
    pub namespace: Option<String>,
    pub key: Option<String>,
    pub note_id: Option<String>,
    pub outcome: String,
    pub reason: Option<String>,
    /// Kind → count of values redacted from the write or the result.
    pub redactions: serde_json::Map<String, serde_json::Value>,
}

/// The row of a write that succeeded, when the call carries a tag (a governed call): written on
/// the write's own open transaction.
pub(crate) async fn record_write(
    conn: &Connection,
    user: &UserId,
    tag: Option<&AuditTag>,
    note_id: Option<&NoteId>,
) -> Result<(), MemoryError> {
    if let Some(row) = write_row(user, tag, note_id) {
        row.run(conn, "recording an audit row").await?;
    }
    Ok(())
}

/// Inserts one row on `conn` (a write's open transaction, or the writer on its own).
pub(crate) async fn insert(
    conn: &Connection,
    user: &UserId,
    entry: &AuditEntry<'_>,
) -> Result<(), MemoryError> {
    row(user, entry).run(conn, "recording an audit row").await?;
    Ok(())
}

/// The row of a write that succeeded, as a statement (for a remote one-request batch).
pub(crate) fn write_row(
    user: &UserId,
    tag: Option<&AuditTag>,
    note_id: Option<&NoteId>,
) -> Option<Stmt> {
    let entry = AuditEntry {
        tag: tag?,
        note_id,
        outcome: "ok",
        reason: None,
    };
    Some(row(user, &entry))
}

fn row(user: &UserId, entry: &AuditEntry<'_>) -> Stmt {
    let tag = entry.tag;
    let redactions = if tag.redactions.is_empty() {
        None
    } else {
        let map: serde_json::Map<String, serde_json::Value> = tag
            .redactions
            .iter()
            .map(|(k, n)| (k.clone(), serde_json::Value::from(*n)))
            .collect();
        Some(serde_json::Value::Object(map).to_string())
    };
    let text = |t: Option<&str>, max| t.map_or(Value::Null, |t| Value::Text(capped(t, max)));
    let name = |t: &Option<String>| text(t.as_deref(), MAX_NAME_CHARS);
    let code = |t: &str| Value::Text(capped(t, MAX_CODE_CHARS));
    Stmt::new(
        "INSERT INTO audit_log (at, user_id, surface, client, tool, operation, namespace, key,
                                note_id, outcome, reason, redactions)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        vec![
            Value::Text(now_text()),
            Value::Text(user.as_str().to_owned()),
            Value::Text(tag.surface.kind.as_str().to_owned()),
            name(&tag.surface.client),
            code(&tag.tool),
            Value::Text(tag.operation.to_owned()),
            name(&tag.namespace),
            name(&tag.key),
            text(entry.note_id.map(NoteId::as_str), MAX_NAME_CHARS),
            code(entry.outcome),
            text(entry.reason, MAX_CODE_CHARS),
            redactions.map_or(Value::Null, Value::Text),
        ],
    )
}

/// The rows `filter` (a `WHERE … ORDER BY … LIMIT …` tail) selects.
async fn records(
    conn: &Connection,
    filter: &str,
    params: Vec<Value>,
) -> Result<Vec<AuditRecord>, MemoryError> {
    let ctx = "reading the audit log";
    let sql = format!(
        "SELECT id, at, user_id, surface, client, tool, operation, namespace, key, note_id,
                outcome, reason, redactions
         FROM audit_log {filter}"
    );
    let mut rows = conn
        .query(&sql, params)
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        let at: String = row.get(1).map_err(MemoryError::db(ctx))?;
        let redactions: Option<String> = row.get(12).map_err(MemoryError::db(ctx))?;
        let redactions = match redactions.map(|r| serde_json::from_str(&r)) {
            Some(Ok(serde_json::Value::Object(map))) => map,
            _ => serde_json::Map::new(),
        };
        out.push(AuditRecord {
            id: row.get(0).map_err(MemoryError::db(ctx))?,
            at: parse(&at)?,
            user_id: row.get(2).map_err(MemoryError::db(ctx))?,
            surface: row.get(3).map_err(MemoryError::db(ctx))?,
            client: row.get(4).map_err(MemoryError::db(ctx))?,
            tool: row.get(5).map_err(MemoryError::db(ctx))?,
            operation: row.get(6).map_err(MemoryError::db(ctx))?,
            namespace: row.get(7).map_err(MemoryError::db(ctx))?,
            key: row.get(8).map_err(MemoryError::db(ctx))?,
            note_id: row.get(9).map_err(MemoryError::db(ctx))?,
            outcome: row.get(10).map_err(MemoryError::db(ctx))?,
            reason: row.get(11).map_err(MemoryError::db(ctx))?,
            redactions,
        });
    }
    Ok(out)
}

impl Audit<'_> {
    /// Appends a row of its own (a read, a denial, a failed write).
    pub async fn append_audit(
        &self,
        user: &UserId,
        entry: &AuditEntry<'_>,
    ) -> Result<(), MemoryError> {
        let user = user.clone();
        let tag = entry.tag.clone();
        let note_id = entry.note_id.cloned();
        let outcome = entry.outcome.to_owned();
        let reason = entry.reason.map(str::to_owned);
        self.write(move |conn| async move {
            let entry = AuditEntry {
                tag: &tag,
                note_id: note_id.as_ref(),
                outcome: &outcome,
                reason: reason.as_deref(),
            };
            insert(&conn, &user, &entry).await
        })
        .await
    }

    /// Rows at or after `since` (all when `None`), oldest first, at most `limit`
    /// ([`MAX_AUDIT_ROWS`] at most).
    pub async fn audit_log(
        &self,
        since: Option<DateTime<Utc>>,
        limit: usize,
    ) -> Result<Vec<AuditRecord>, MemoryError> {
        let since = since.map_or_else(String::new, to_text);
        let limit = i64::try_from(limit.min(MAX_AUDIT_ROWS)).unwrap_or(0);
        self.read(move |conn| async move {
            records(
                &conn,
                "WHERE at >= ?1 ORDER BY at, id LIMIT ?2",
                vec![Value::Text(since), Value::Integer(limit)],
            )
            .await
        })
        .await
    }

    /// One page of the log, newest first (so a flood of reads never hides a recent write behind
    /// a cut): rows older than `query.before`, at or after `query.since`, at most `query.limit`.
    pub async fn audit_page(&self, query: &AuditQuery) -> Result<AuditPage, MemoryError> {
        let since = query.since.map_or_else(String::new, to_text);
        let before = query.before.unwrap_or(i64::MAX);
        let limit = match query.limit {
            0 => 100,
            n => n.min(MAX_AUDIT_ROWS),
        };
        let probe = i64::try_from(limit + 1).unwrap_or(i64::MAX);
        let mut rows = self
            .read(move |conn| async move {
                records(
                    &conn,
                    "WHERE at >= ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
                    vec![
                        Value::Text(since),
                        Value::Integer(before),
                        Value::Integer(probe),
                    ],
                )
                .await
            })
            .await?;
        let next_before = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|r| r.id)
        } else {
            None
        };
        Ok(AuditPage { rows, next_before })
    }

    /// Deletes the rows older than `keep` (the sweeper's `[governance] audit_retention_days`);
    /// returns how many.
    pub async fn prune_audit(&self, keep: chrono::Duration) -> Result<u64, MemoryError> {
        let cutoff = to_text(Utc::now() - keep);
        let pruned = self
            .write(move |conn| async move {
                conn.execute("DELETE FROM audit_log WHERE at < ?1", [cutoff])
                    .await
                    .map_err(MemoryError::db("pruning the audit log"))
            })
            .await?;
        if pruned > 0 {
            tracing::info!(rows = pruned, "pruned audit rows past the retention window");
        }
        Ok(pruned)
    }
}
