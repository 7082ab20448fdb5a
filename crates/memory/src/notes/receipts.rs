//! What makes a model's writes safe to retry and safe to replace: call keys and receipts, and edit
//! tokens.
//!
//! - A [`CallKey`] names one tool call (session, call id, tool, arguments). A write made for a call
//!   records a receipt (`write_receipts`) in its own transaction; a write with the same key finds it
//!   and returns it (`replayed: true`) without writing again. So a call retried after a timeout or
//!   a lost connection never saves a note twice, and a retried delete reports the delete it made.
//!   Receipts older than [`RECEIPT_DAYS`] are dropped by later writes.
//! - A note's [`edit_token`] is a hash of its text. Tools hand it out only with the whole text,
//!   and a checked update ([`crate::MemoryStore::update`]) replaces a note only when
//!   the token given is the current text's: whoever replaces a note has been shown all of it, as it
//!   is now.

use chrono::{Duration, Utc};
use libsql::{Connection, Value};
use types::{AuditTag, NoteId, UserId};

use crate::error::MemoryError;
use crate::notes::audit;
use crate::notes::note::Note;
use crate::store::rows::query_first;
use crate::store::stmt::Stmt;
use crate::time::to_text;

/// Receipts are kept this long: far longer than any retry, short enough to stay small.
pub const RECEIPT_DAYS: i64 = 7;

/// One tool call's identity, for idempotent writes. Built from the call's session, its id (as the
/// model's provider sent it), the tool and its arguments: providers that reuse call ids across
/// calls (some local servers number them from 0 in every reply) never make two different writes
/// look like one.
///
/// A key may also carry the call's [`AuditTag`]: the write then records its audit row in its own
/// transaction (see [`crate::AuditEntry`]). A call without an id can still be audited
/// ([`CallKey::audit_only`]): it just is not idempotent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallKey {
    key: Option<String>,
    audit: Option<AuditTag>,
}

impl CallKey {
    pub fn new(session: &str, call_id: &str, tool: &str, arguments: &str) -> Self {
        let mut h = Fnv128::default();
        for part in [session, call_id, tool, arguments] {
            h.write(part.as_bytes());
            h.write(&[0x1f]);
        }
        Self {
            key: Some(format!("{:032x}", h.0)),
            audit: None,
        }
    }

    /// A call with no id whose write is still audited.
    pub fn audit_only(tag: AuditTag) -> Self {
        Self {
            key: None,
            audit: Some(tag),
        }
    }

    /// The same key, also recording `tag` in the write's transaction.
    #[must_use]
    pub fn with_audit(mut self, tag: AuditTag) -> Self {
        self.audit = Some(tag);
        self
    }

    /// The idempotency key, when the call has an id.
    pub fn as_str(&self) -> Option<&str> {
        self.key.as_deref()
    }

    pub fn audit(&self) -> Option<&AuditTag> {
        self.audit.as_ref()
    }
}

/// What a write did, as recorded for its call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteReceipt {
    pub note_id: NoteId,
    /// The note's edit token after the write (none after a delete).
    pub edit_token: Option<String>,
    /// True when this is the receipt of an earlier attempt of the same call: nothing was written now.
    pub replayed: bool,
}

/// The edit token of a note with this text: a hash that changes whenever the text does, which an
/// update must name (so it never overwrites a text its caller has not seen). Not a version: a
/// note's versions are numbered from 1 in its history ([`NoteVersion`](crate::NoteVersion)).
pub fn edit_token(content: &str) -> String {
    let mut h = Fnv128::default();
    h.write(content.as_bytes());
    // 64 bits are plenty to tell two texts of one note apart, and short for a model to copy.
    format!("{:016x}", (h.0 >> 64) as u64 ^ h.0 as u64)
}

/// FNV-1a, 128 bits: stable across builds and platforms (unlike std's hasher), no dependency.
struct Fnv128(u128);

impl Default for Fnv128 {
    fn default() -> Self {
        Self(0x6c62_272e_07bb_0142_62b8_2175_6295_c58d)
    }
}

impl Fnv128 {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u128::from(*b);
            self.0 = self
                .0
                .wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
        }
    }
}

/// The receipt of an earlier write for `key` by `user`, if any.
pub(crate) async fn find(
    conn: &Connection,
    user: &UserId,
    key: &CallKey,
) -> Result<Option<WriteReceipt>, MemoryError> {
    let ctx = "reading a write receipt";
    let Some(key) = key.as_str() else {
        return Ok(None);
    };
    query_first(
        conn,
        "SELECT note_id, version FROM write_receipts WHERE call_key = ?1 AND user_id = ?2",
        [key, user.as_str()],
        ctx,
        |row| {
            let note_id: String = row.get(0).map_err(MemoryError::db(ctx))?;
            Ok(WriteReceipt {
                note_id: NoteId::parse(&note_id)
                    .map_err(MemoryError::corrupt("receipt note id"))?,
                edit_token: row.get(1).map_err(MemoryError::db(ctx))?,
                replayed: true,
            })
        },
    )
    .await
}

/// Records `receipt` for `key` (inside the write's transaction): drops the expired receipts, then
/// inserts this one (which fails if a receipt for `key` is still there).
pub(crate) fn record_rows(user: &UserId, key: &str, receipt: &WriteReceipt) -> [Stmt; 2] {
    let now = Utc::now();
    [
        Stmt::new(
            "DELETE FROM write_receipts WHERE created_at < ?1",
            vec![Value::Text(to_text(now - Duration::days(RECEIPT_DAYS)))],
        ),
        Stmt::new(
            "INSERT INTO write_receipts (call_key, user_id, note_id, version, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            vec![
                Value::Text(key.to_owned()),
                Value::Text(user.as_str().to_owned()),
                Value::Text(receipt.note_id.as_str().to_owned()),
                receipt.edit_token.clone().map_or(Value::Null, Value::Text),
                Value::Text(to_text(now)),
            ],
        ),
    ]
}

/// What a write returns: its receipt, and the note when it was written now.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub receipt: WriteReceipt,
    /// The note as written now; none when the call was replayed.
    pub note: Option<Note>,
}

impl Written {
    pub(crate) fn note(note: Note) -> Result<Self, MemoryError> {
        Ok(Self {
            receipt: WriteReceipt {
                note_id: note.note_id.clone(),
                edit_token: Some(edit_token(&note.content)),
                replayed: false,
            },
            note: Some(note),
        })
    }

    pub(crate) fn replayed(receipt: WriteReceipt) -> Self {
        Self {
            receipt,
            note: None,
        }
    }

    /// The note written; only calls without a call key use this, and they never replay.
    pub fn into_note(self) -> Result<Note, MemoryError> {
        self.note.ok_or(MemoryError::Corrupt {
            what: "write without a call key replayed",
            source: None,
        })
    }
}

pub(crate) async fn replay(
    conn: &Connection,
    user: &UserId,
    call: Option<&CallKey>,
) -> Result<Option<WriteReceipt>, MemoryError> {
    match call {
        Some(key) => find(conn, user, key).await,
        None => Ok(None),
    }
}

pub(crate) async fn record_for(
    conn: &Connection,
    user: &UserId,
    call: Option<&CallKey>,
    note_id: &NoteId,
    content: Option<&str>,
) -> Result<(), MemoryError> {
    for row in record_for_rows(user, call, note_id, content) {
        row.run(conn, "recording a write receipt").await?;
    }
    Ok(())
}

/// What a write made for `call` records in its transaction: its audit row (a governed call) and
/// its receipt (a call with an id).
pub(crate) fn record_for_rows(
    user: &UserId,
    call: Option<&CallKey>,
    note_id: &NoteId,
    content: Option<&str>,
) -> Vec<Stmt> {
    let Some(call) = call else {
        return Vec::new();
    };
    let mut rows: Vec<Stmt> = audit::write_row(user, call.audit(), Some(note_id))
        .into_iter()
        .collect();
    if let Some(key) = call.as_str() {
        let receipt = WriteReceipt {
            note_id: note_id.clone(),
            edit_token: content.map(edit_token),
            replayed: false,
        };
        rows.extend(record_rows(user, key, &receipt));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_versions_are_stable_and_tell_inputs_apart() {
        let k = |s, c, t, a| CallKey::new(s, c, t, a);
        assert_eq!(
            k("s", "call_0", "memory_save", "{}"),
            k("s", "call_0", "memory_save", "{}")
        );
        assert_ne!(
            k("s", "call_0", "memory_save", "{\"content\":\"a\"}"),
            k("s", "call_0", "memory_save", "{\"content\":\"b\"}")
        );
        assert_ne!(k("s1", "call_0", "t", "a"), k("s", "1call_0", "t", "a"));
        assert_eq!(k("s", "c", "t", "a").as_str().map(str::len), Some(32));
        // Fixed values: a version handed out before an upgrade still matches after it.
        assert_eq!(edit_token(""), "0eda065b652ec4cf".to_owned());
        assert_ne!(edit_token("tea"), edit_token("tea "));
        assert_eq!(edit_token("tea").len(), 16);
    }
}
