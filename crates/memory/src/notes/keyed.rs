//! Keyed notes: a value stored under a `(namespace, key)` of the user's own memory, as the MCP
//! `putMemory` / `listMemory` tools use them.
//!
//! A keyed note is an ordinary note (same event, chunks, vectors, index entries, expiry), so
//! `memory_search` finds it; it also carries its namespace and key in two columns (migration 9),
//! unique per namespace of the user's memory session. Putting a key that holds a live note
//! replaces that note's text in place (its `note_id` stays); an expired one is removed first. A
//! namespace is a label inside the user's store, never a path or another user's store.

use libsql::{Connection, Value};
use serde::{Deserialize, Serialize};
use types::{NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::notes::indexing::{EventRef, delete_event, prepare};
use crate::notes::lifecycle::keep_stored_version;
use crate::notes::note::{NoteMetadata, NoteWrite, insert_note, validate};
use crate::notes::provenance::{Provenance, after_rewrite};
use crate::notes::receipts::{CallKey, record_for, replay};
use crate::rooms::Keys;
use crate::store::rows::query_first;
use crate::store::{begin, finish};
use crate::time::now_text;

/// Longest namespace, in bytes.
pub const MAX_NAMESPACE_BYTES: usize = 128;
/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 256;
/// Largest page of keys.
pub const MAX_KEY_PAGE: usize = 100;

/// What a put did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedWrite {
    pub note_id: NoteId,
    /// `true` when the key held no live note before.
    pub created: bool,
}

/// Which keys to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyQuery {
    pub namespace: String,
    pub prefix: Option<String>,
    /// Clamped to `1..=`[`MAX_KEY_PAGE`].
    pub limit: usize,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// One page of keys in key order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyPage {
    pub keys: Vec<String>,
    /// Pass this to get the next page; `None` on the last page.
    pub next_cursor: Option<String>,
    /// Live keys in the namespace (all pages, any prefix).
    pub total: u64,
}

/// A namespace is 1..=128 bytes of letters, digits and `. _ - : *`-free punctuation `.`, `_`,
/// `-`, `:`.
pub fn check_namespace(namespace: &str) -> Result<(), MemoryError> {
    let ok = !namespace.is_empty()
        && namespace.len() <= MAX_NAMESPACE_BYTES
        && namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'));
    if ok {
        Ok(())
    } else {
        Err(MemoryError::InvalidInput(format!(
            "namespace must be 1 to {MAX_NAMESPACE_BYTES} characters of letters, digits, '.', \
             '_', '-' or ':' (for example \"agent.notes\")"
        )))
    }
}

/// A key is 1..=256 bytes with no control characters.
pub fn check_key(key: &str) -> Result<(), MemoryError> {
    if key.trim().is_empty() || key.len() > MAX_KEY_BYTES || key.chars().any(char::is_control) {
        return Err(MemoryError::InvalidInput(format!(
            "key must be 1 to {MAX_KEY_BYTES} bytes of text without control characters"
        )));
    }
    Ok(())
}

/// The cursor is the last key shown, tagged so that a made-up value is told apart.
const CURSOR_TAG: &str = "k1:";

fn new_note_id() -> Result<NoteId, MemoryError> {
    NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string())
        .map_err(|e| MemoryError::InvalidInput(e.to_string()))
}

struct KeyedRow {
    note_id: NoteId,
    event_seq: i64,
    created_at: String,
    live: bool,
    content: String,
    provenance: Option<Provenance>,
}

async fn find_key(
    conn: &Connection,
    session: &SessionId,
    namespace: &str,
    key: &str,
) -> Result<Option<KeyedRow>, MemoryError> {
    let ctx = "reading a key";
    query_first(
        conn,
        "SELECT note_id, event_seq, created_at,
                (expires_at IS NULL OR expires_at > ?4) AS live, content, metadata_json
         FROM notes WHERE session_id = ?1 AND mem_namespace = ?2 AND mem_key = ?3",
        [session.as_str(), namespace, key, now_text().as_str()],
        ctx,
        |row| {
            let id: String = row.get(0).map_err(MemoryError::db(ctx))?;
            Ok(KeyedRow {
                note_id: NoteId::parse(&id).map_err(MemoryError::corrupt("note id"))?,
                event_seq: row.get(1).map_err(MemoryError::db(ctx))?,
                created_at: row.get(2).map_err(MemoryError::db(ctx))?,
                live: row.get::<i64>(3).map_err(MemoryError::db(ctx))? != 0,
                content: row.get(4).map_err(MemoryError::db(ctx))?,
                provenance: serde_json::from_str::<NoteMetadata>(
                    &row.get::<String>(5).map_err(MemoryError::db(ctx))?,
                )
                .map_err(MemoryError::corrupt("note metadata"))?
                .provenance,
            })
        },
    )
    .await
}

impl Keys<'_> {
    /// Stores `content` under `(namespace, key)` in `user`'s memory, replacing the live note that
    /// key holds (same `note_id`), all in one transaction with the call's receipt and audit row
    /// (`call`, as for [`MemoryStore::save`]).
    pub async fn put_keyed(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        namespace: &str,
        key: &str,
        content: &str,
        metadata: NoteMetadata,
    ) -> Result<KeyedWrite, MemoryError> {
        check_namespace(namespace)?;
        check_key(key)?;
        let content = validate(content)?.to_owned();
        let mut metadata = metadata.validated()?;
        let prepared = prepare(self.inner.embedder.as_ref(), &content).await?;
        let (user, index) = (user.clone(), self.inner.index.clone());
        let (namespace, key) = (namespace.to_owned(), key.to_owned());
        let call = call.cloned();
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let mut changes = Vec::new();
            let outcome = async {
                // A retried call (same call key) gets the first attempt's note, written once.
                if let Some(receipt) = replay(&tx, &user, call.as_ref()).await? {
                    return Ok(KeyedWrite {
                        note_id: receipt.note_id,
                        created: false,
                    });
                }
                let session = SessionId::user_memory(&user);
                let now = now_text();
                let existing = find_key(&tx, &session, &namespace, &key).await?;
                let (note_id, created_at, created) = match existing {
                    Some(old) => {
                        delete_event(
                            &tx,
                            EventRef {
                                session: session.as_str(),
                                seq: old.event_seq,
                            },
                            &mut changes,
                        )
                        .await?;
                        if old.live {
                            // The value it replaces stays in the note's history.
                            keep_stored_version(&tx, &old.note_id, &content).await?;
                            metadata.provenance = after_rewrite(
                                (&old.content, old.provenance.as_ref()),
                                &content,
                                metadata.provenance.take(),
                            );
                            (old.note_id, old.created_at, false)
                        } else {
                            tx.execute(
                                "DELETE FROM notes WHERE note_id = ?1",
                                [old.note_id.as_str()],
                            )
                            .await
                            .map_err(MemoryError::db("replacing an expired key"))?;
                            (new_note_id()?, now.clone(), true)
                        }
                    }
                    None => (new_note_id()?, now.clone(), true),
                };
                let write = NoteWrite {
                    note_id: note_id.clone(),
                    content,
                    metadata,
                    created_at,
                    updated_at: now,
                    prepared,
                };
                insert_note(&tx, &user, &write, &mut changes).await?;
                tx.execute(
                    "UPDATE notes SET mem_namespace = ?1, mem_key = ?2 WHERE note_id = ?3",
                    [namespace.as_str(), key.as_str(), note_id.as_str()],
                )
                .await
                .map_err(MemoryError::db("keying a note"))?;
                // The receipt and the audit row of the call, in the write's own transaction.
                record_for(&tx, &user, call.as_ref(), &note_id, Some(&write.content)).await?;
                Ok(KeyedWrite { note_id, created })
            }
            .await;
            let written = finish(tx, outcome).await?;
            index.apply(&changes);
            tracing::info!(user = %user, note_id = %written.note_id, created = written.created, "put keyed note");
            Ok(written)
        })
        .await
    }

    /// The namespace `user`'s note `note_id` — live, or deleted and restorable — is kept under as
    /// a keyed value; `None` for one of the notes tools' own notes, or when `user` has no such
    /// note. Governance checks a call that names a note by its id against this namespace
    /// (`tools::governance`).
    pub async fn namespace_of(
        &self,
        user: &UserId,
        note_id: &NoteId,
    ) -> Result<Option<String>, MemoryError> {
        let session = SessionId::user_memory(user);
        let note = note_id.to_string();
        self.read(move |conn| async move {
            let ctx = "reading a note's namespace";
            let found = query_first(
                &conn,
                "SELECT mem_namespace FROM notes WHERE note_id = ?1 AND session_id = ?2
                 UNION ALL
                 SELECT mem_namespace FROM deleted_notes WHERE note_id = ?1 AND session_id = ?2
                 LIMIT 1",
                [note.as_str(), session.as_str()],
                ctx,
                |row| row.get::<Option<String>>(0).map_err(MemoryError::db(ctx)),
            )
            .await?;
            Ok(found.flatten())
        })
        .await
    }

    /// One page of the live keys of `query.namespace` in `user`'s memory, in key order.
    pub async fn list_keys(&self, user: &UserId, query: &KeyQuery) -> Result<KeyPage, MemoryError> {
        check_namespace(&query.namespace)?;
        let after =
            match query.cursor.as_deref() {
                None => None,
                Some(c) => Some(c.strip_prefix(CURSOR_TAG).map(str::to_owned).ok_or_else(
                    || {
                        MemoryError::InvalidInput(
                    "cursor is not one listMemory gave out: pass the cursor of the previous page, \
                     or leave it out for the first page"
                        .into(),
                )
                    },
                )?),
            };
        let limit = query.limit.clamp(1, MAX_KEY_PAGE);
        let session = SessionId::user_memory(user);
        let (namespace, prefix) = (query.namespace.clone(), query.prefix.clone());
        self.read(move |conn| async move {
            let ctx = "listing keys";
            let now = now_text();
            let live = "session_id = ?1 AND mem_namespace = ?2 AND mem_key IS NOT NULL
                        AND (expires_at IS NULL OR expires_at > ?3)";
            let base = vec![
                Value::Text(session.to_string()),
                Value::Text(namespace),
                Value::Text(now),
            ];
            let total: i64 = query_first(
                &conn,
                &format!("SELECT count(*) FROM notes WHERE {live}"),
                base.clone(),
                ctx,
                |row| row.get(0).map_err(MemoryError::db(ctx)),
            )
            .await?
            .unwrap_or(0);
            let mut sql = format!("SELECT mem_key FROM notes WHERE {live}");
            let mut params = base;
            if let Some(prefix) = prefix.filter(|p| !p.is_empty()) {
                sql.push_str(" AND substr(mem_key, 1, length(?4)) = ?4");
                params.push(Value::Text(prefix));
            }
            if let Some(after) = after {
                sql.push_str(&format!(" AND mem_key > ?{}", params.len() + 1));
                params.push(Value::Text(after));
            }
            sql.push_str(&format!(" ORDER BY mem_key LIMIT ?{}", params.len() + 1));
            params.push(Value::Integer(i64::try_from(limit + 1).unwrap_or(i64::MAX)));
            let mut rows = conn
                .query(&sql, params)
                .await
                .map_err(MemoryError::db(ctx))?;
            let mut keys = Vec::new();
            while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                keys.push(row.get::<String>(0).map_err(MemoryError::db(ctx))?);
            }
            let next_cursor = if keys.len() > limit {
                keys.truncate(limit);
                keys.last().map(|k| format!("{CURSOR_TAG}{k}"))
            } else {
                None
            };
            Ok(KeyPage {
                keys,
                next_cursor,
                total: u64::try_from(total).unwrap_or(0),
            })
        })
        .await
    }
}
