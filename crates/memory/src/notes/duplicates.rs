//! Finding a note the user already has before saving another copy.
//!
//! Two probes, cheapest first, over the user's current (live, unexpired) notes only:
//! 1. the normalised-text hash ([`normalize`]: case, punctuation and spacing ignored), one
//!    indexed lookup — a hit is a duplicate: the caller returns the existing note id and stores
//!    nothing;
//! 2. the cosine of the new text's vector against the in-memory index of the user's notes — notes
//!    at or above the store's similarity threshold (`[memory] duplicate_similarity`, measured on a
//!    corpus: see `docs/guidebook/memory.md`) that also state the same fact
//!    ([`memory_index::fact_difference`] finds no other number, name, negation, person or word in
//!    place) are near-duplicates: the caller shows them so the model updates one of them
//!    instead, and saves anyway only when told to.
//!
//! Deleted notes and old versions are not compared (they have no index entries), nor are keyed
//! values (an MCP client's `putMemory` under a namespace and key): they are their namespace's,
//! whose text, id and version the saver may not be allowed to read, and a capture that took one
//! for the same fact would rewrite it.

use libsql::Connection;
use serde::{Deserialize, Serialize};
use types::{NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::indexing::embed_checked;
use crate::notes::metadata::NoteMetadata;
use crate::notes::note::{Note, validate};
use crate::notes::receipts::{CallKey, WriteReceipt, edit_token, replay};
use crate::rooms::Upkeep;
use crate::store::rows::query_first;
use crate::time::now_text;

pub use memory_index::facts::DEFAULT_DUPLICATE_SIMILARITY;
/// At most this many near-duplicates are reported.
const MAX_SIMILAR: usize = 5;
/// Characters of each near-duplicate's text shown.
const SIMILAR_PREVIEW_CHARS: usize = 160;

/// The text with case, punctuation and spacing removed: words of letters and digits joined by
/// single spaces. Two notes with the same normalised text are the same note.
pub fn normalize(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The stored hash of a note's normalised text.
pub(crate) fn text_hash(text: &str) -> String {
    edit_token(&normalize(text))
}

/// A current note close to the text being saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimilarNote {
    pub note_id: NoteId,
    /// The start of the note's text.
    pub preview: String,
    /// Cosine similarity to the new text, `0..=1`.
    pub similarity: f32,
}

/// What a save would add, compared with the notes the user has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DuplicateCheck {
    /// Nothing like it is stored.
    Unique,
    /// This note already says it (same normalised text).
    Duplicate { note_id: NoteId },
    /// These notes say nearly the same, most similar first.
    Similar { notes: Vec<SimilarNote> },
}

/// What a checked save did.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveOutcome {
    /// Stored (or, for a retried call, stored by its first attempt).
    Saved(WriteReceipt),
    /// Nothing stored: this note already says it; `edit_token` is its current text's token.
    Duplicate { note_id: NoteId, edit_token: String },
    /// Nothing stored: these notes say nearly the same (the caller may insist).
    Similar(Vec<SimilarNote>),
}

/// Whether a checked save may store a near-duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Similar {
    /// Refuse, listing the similar notes.
    Refuse,
    /// Store anyway (the writer insists the note says something new).
    Allow,
    /// No duplicate check at all (plain saves and imports: fixtures, benches, restores).
    Unchecked,
}

/// What [`MemoryStore::save`] did, with the note it wrote (none when it wrote nothing now).
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    pub outcome: SaveOutcome,
    pub note: Option<Note>,
}

impl Saved {
    fn nothing(outcome: SaveOutcome) -> Self {
        Self {
            outcome,
            note: None,
        }
    }

    /// The receipt of the save (also of a replayed one); an error when it saved nothing.
    pub fn into_receipt(self) -> Result<WriteReceipt, MemoryError> {
        match self.outcome {
            SaveOutcome::Saved(receipt) => Ok(receipt),
            _ => Err(MemoryError::InvalidInput(
                "nothing saved: the note is a duplicate".to_owned(),
            )),
        }
    }

    /// The note written now; an error when the save wrote nothing (a duplicate or a replay).
    pub fn into_note(self) -> Result<Note, MemoryError> {
        self.note.ok_or_else(|| match self.outcome {
            SaveOutcome::Duplicate { note_id, .. } => MemoryError::InvalidInput(format!(
                "nothing saved: note {note_id} already says this"
            )),
            _ => MemoryError::InvalidInput("nothing saved: the call was replayed".to_owned()),
        })
    }
}

impl MemoryStore {
    /// Saves a new note for `user` with a fresh id `note-<uuid>`. A retried call (same key) gets
    /// its first receipt and writes nothing. Unless `similar` is [`Similar::Unchecked`], a note
    /// `user` already has is not saved again: an exact duplicate (normalised text) never, a
    /// near-duplicate only with [`Similar::Allow`].
    pub async fn save(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        content: &str,
        metadata: NoteMetadata,
        similar: Similar,
    ) -> Result<Saved, MemoryError> {
        if similar == Similar::Unchecked {
            return self.saved(user, call, content, metadata).await;
        }
        if let Some(key) = call {
            let (owner, key) = (user.clone(), key.clone());
            let earlier = self
                .read(move |conn| async move { replay(&conn, &owner, Some(&key)).await })
                .await?;
            if let Some(receipt) = earlier {
                return Ok(Saved::nothing(SaveOutcome::Saved(receipt)));
            }
        }
        match self.check_duplicate(user, content).await? {
            DuplicateCheck::Duplicate { note_id } => {
                let note = self.get(user, &note_id).await?;
                self.audit_check(user, call, Some(&note_id), "duplicate")
                    .await?;
                return Ok(Saved::nothing(SaveOutcome::Duplicate {
                    edit_token: edit_token(&note.content),
                    note_id,
                }));
            }
            DuplicateCheck::Similar { notes } if similar == Similar::Refuse => {
                self.audit_check(user, call, None, "similar").await?;
                return Ok(Saved::nothing(SaveOutcome::Similar(notes)));
            }
            _ => {}
        }
        self.saved(user, call, content, metadata).await
    }

    async fn saved(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        content: &str,
        metadata: NoteMetadata,
    ) -> Result<Saved, MemoryError> {
        let written = self.write_new(user, call, content, metadata).await?;
        Ok(Saved {
            outcome: SaveOutcome::Saved(written.receipt),
            note: written.note,
        })
    }

    /// A governed save that stored nothing but answered with what is stored (a duplicate's id, or
    /// similar notes' text) read the user's notes: its audit row says so (operation `read`,
    /// reason `duplicate` or `similar`), as the write's own row would have said it wrote.
    async fn audit_check(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: Option<&NoteId>,
        reason: &str,
    ) -> Result<(), MemoryError> {
        let Some(tag) = call.and_then(CallKey::audit) else {
            return Ok(());
        };
        let tag = types::AuditTag {
            operation: "read",
            ..tag.clone()
        };
        let entry = crate::AuditEntry {
            tag: &tag,
            note_id,
            outcome: "ok",
            reason: Some(reason),
        };
        self.audit().append_audit(user, &entry).await
    }

    /// Compares `content` with `user`'s current notes (see the module doc). Reads only.
    pub async fn check_duplicate(
        &self,
        user: &UserId,
        content: &str,
    ) -> Result<DuplicateCheck, MemoryError> {
        let content = validate(content)?;
        self.catch_up().await?;
        let session = SessionId::user_memory(user);
        let (probe_session, hash) = (session.clone(), text_hash(content));
        let exact = self
            .read(move |conn| async move { same_text(&conn, &probe_session, &hash).await })
            .await?;
        if let Some(note_id) = exact {
            return Ok(DuplicateCheck::Duplicate { note_id });
        }
        let Some(first) = memory_index::chunking::chunk_text(content)
            .into_iter()
            .next()
        else {
            return Ok(DuplicateCheck::Unique);
        };
        let vector = embed_checked(self.inner.embedder.as_ref(), &[first])
            .await?
            .pop()
            .unwrap_or_default();
        let threshold = self.inner.duplicate_similarity;
        let found: Vec<(i64, f32)> = self
            .inner
            .index
            .search(&[session.to_string()], &vector, MAX_SIMILAR * 3, None)
            .into_iter()
            .filter(|(_, score)| *score >= threshold)
            .collect();
        if found.is_empty() {
            return Ok(DuplicateCheck::Unique);
        }
        let text = content.to_owned();
        let notes = self
            .read(move |conn| async move { notes_of_chunks(&conn, &session, &found, &text).await })
            .await?;
        Ok(match notes.is_empty() {
            true => DuplicateCheck::Unique,
            false => DuplicateCheck::Similar { notes },
        })
    }
}

async fn same_text(
    conn: &Connection,
    session: &SessionId,
    hash: &str,
) -> Result<Option<NoteId>, MemoryError> {
    let ctx = "looking for a duplicate note";
    // `+created_at`: without it SQLite orders by walking `notes_by_session_newest`, reading every
    // note of the session (4 ms at 10k notes) instead of the one or two rows with this hash.
    query_first(
        conn,
        "SELECT note_id FROM notes WHERE session_id = ?1 AND text_hash = ?2
         AND mem_namespace IS NULL
         AND (expires_at IS NULL OR expires_at > ?3) ORDER BY +created_at LIMIT 1",
        [session.as_str(), hash, now_text().as_str()],
        ctx,
        |row| {
            let id: String = row.get(0).map_err(MemoryError::db(ctx))?;
            NoteId::parse(&id).map_err(MemoryError::corrupt("note id"))
        },
    )
    .await
}

/// The live notes owning `chunks` (chunk id, cosine), one entry per note with its best cosine,
/// that restate `text` (no [`memory_index::fact_difference`]: a note with another number, name,
/// negation, person or word in place is a different fact however close its vector).
async fn notes_of_chunks(
    conn: &Connection,
    session: &SessionId,
    chunks: &[(i64, f32)],
    text: &str,
) -> Result<Vec<SimilarNote>, MemoryError> {
    let ctx = "looking for similar notes";
    let now = now_text();
    let mut notes: Vec<SimilarNote> = Vec::new();
    for (chunk_id, similarity) in chunks {
        let found = query_first(
            conn,
            "SELECT n.note_id, n.content FROM chunks c JOIN notes n ON n.note_id = c.note_id
             WHERE c.chunk_id = ?1 AND n.session_id = ?2 AND n.mem_namespace IS NULL
             AND (n.expires_at IS NULL OR n.expires_at > ?3)",
            libsql::params![*chunk_id, session.as_str(), now.as_str()],
            ctx,
            |row| {
                let id: String = row.get(0).map_err(MemoryError::db(ctx))?;
                let note_id = NoteId::parse(&id).map_err(MemoryError::corrupt("note id"))?;
                Ok((note_id, row.get::<String>(1).map_err(MemoryError::db(ctx))?))
            },
        )
        .await?;
        let Some((note_id, content)) = found else {
            continue;
        };
        if notes.iter().any(|n| n.note_id == note_id) {
            continue;
        }
        if let Some(difference) = memory_index::fact_difference(text, &content) {
            tracing::debug!(?difference, "a close note states a different fact");
            continue;
        }
        notes.push(SimilarNote {
            note_id,
            preview: content.chars().take(SIMILAR_PREVIEW_CHARS).collect(),
            similarity: similarity.clamp(0.0, 1.0),
        });
        if notes.len() == MAX_SIMILAR {
            break;
        }
    }
    Ok(notes)
}

/// Fills `text_hash` for notes written before migration 7 (run once at open; a no-op after).
pub(crate) async fn fill_missing_hashes(conn: &Connection) -> Result<usize, MemoryError> {
    let ctx = "hashing older notes";
    let mut rows = conn
        .query(
            "SELECT note_id, content FROM notes WHERE text_hash IS NULL",
            (),
        )
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut missing = Vec::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        let id: String = row.get(0).map_err(MemoryError::db(ctx))?;
        let content: String = row.get(1).map_err(MemoryError::db(ctx))?;
        missing.push((id, text_hash(&content)));
    }
    drop(rows);
    for (id, hash) in &missing {
        conn.execute(
            "UPDATE notes SET text_hash = ?2 WHERE note_id = ?1",
            [id.as_str(), hash.as_str()],
        )
        .await
        .map_err(MemoryError::db(ctx))?;
    }
    Ok(missing.len())
}

impl Upkeep<'_> {
    /// The near-duplicate threshold this store applies (cosine, `0..=1`).
    pub fn duplicate_similarity(&self) -> f32 {
        self.inner.duplicate_similarity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalising_ignores_case_punctuation_and_spacing() {
        for (a, b) in [
            ("The user's cat is Mia.", "the user s cat is mia"),
            ("  Prefers TEA, not coffee!", "prefers tea not coffee"),
            ("Zoë lives in Zürich", "zoë lives in zürich"),
        ] {
            assert_eq!(normalize(a), b);
        }
        assert_eq!(text_hash("Likes tea."), text_hash("likes   TEA"));
        assert_ne!(text_hash("likes tea"), text_hash("likes coffee"));
    }
}
