//! The user's own view of their saved notes, for callers such as the gateway: list (by
//! category, paged), search, read, edit (only at the version the user was shown) and delete.
//! Every call is scoped to the `user` given by the caller, who takes it from the authenticated
//! connection; the store's `memory:{user}` namespace is the only one reached.
//!
//! Edits pass the same checks as the model's `memory_update`: the text is validated (not empty,
//! at most [`tools::MAX_CONTENT_BYTES`]), a text holding a secret is refused, and a stale version
//! changes nothing.

use chrono::{DateTime, Utc};
use memory::{Category, HybridQuery, ListQuery, MemoryError, MemoryStore, MetadataPatch, Note};
use types::{NoteId, SessionId, UserId};

use crate::RuntimeError;
use crate::runtime::AgentRuntime;

/// Most notes one list or search returns.
pub const MAX_NOTES_PAGE: usize = memory::MAX_PAGE;

/// One saved note as shown to its user.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteEntry {
    pub note_id: NoteId,
    pub text: String,
    /// Changes whenever the text does; an edit must name the current one.
    pub version: String,
    pub category: Option<String>,
    pub tags: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Note> for NoteEntry {
    fn from(note: Note) -> Self {
        Self {
            version: memory::note_version(&note.content),
            note_id: note.note_id,
            text: note.content,
            category: note.metadata.category.map(|c| c.as_str().to_owned()),
            tags: note.metadata.tags,
            created_at: note.created_at,
            updated_at: note.updated_at,
        }
    }
}

/// A page of notes, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteListing {
    pub notes: Vec<NoteEntry>,
    /// Notes matching the filter, over all pages.
    pub total: u64,
    /// Passed back as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

impl AgentRuntime {
    fn notes_store(&self) -> Result<&MemoryStore, RuntimeError> {
        self.journal.store().ok_or(RuntimeError::MemoryDisabled)
    }

    /// Up to `limit` (1 to [`MAX_NOTES_PAGE`]) of `user`'s notes, newest first, after `cursor`,
    /// of one `category` when given.
    pub async fn list_notes(
        &self,
        user: &UserId,
        category: Option<&str>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<NoteListing, RuntimeError> {
        check_limit(limit)?;
        let category = category
            .map(|c| {
                c.parse::<Category>().map_err(|_| {
                    let known: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
                    RuntimeError::InvalidNoteRequest(format!(
                        "unknown category: use one of {}",
                        known.join(", ")
                    ))
                })
            })
            .transpose()?;
        let query = ListQuery {
            category,
            tags_any: Vec::new(),
            limit,
            cursor: cursor.map(str::to_owned),
        };
        let page = self
            .notes_store()?
            .list_notes_page(user, &query)
            .await
            .map_err(note_error("listing notes"))?;
        Ok(NoteListing {
            notes: page.notes.into_iter().map(NoteEntry::from).collect(),
            total: page.total,
            next_cursor: page.next_cursor,
        })
    }

    /// `user`'s notes best matching `query`, whole, at most `limit` (1 to [`MAX_NOTES_PAGE`]).
    pub async fn search_notes(
        &self,
        user: &UserId,
        query: &str,
        limit: usize,
    ) -> Result<Vec<NoteEntry>, RuntimeError> {
        check_limit(limit)?;
        let query = query.trim();
        if query.is_empty() {
            return Err(RuntimeError::InvalidNoteRequest(
                "the search is empty: give a few words to look for".into(),
            ));
        }
        let store = self.notes_store()?;
        let hits = store
            .hybrid_query(&HybridQuery::new(
                vec![SessionId::user_memory(user)],
                query,
                limit,
            ))
            .await
            .map_err(note_error("searching notes"))?;
        let mut seen = Vec::new();
        let mut notes = Vec::new();
        for id in hits.into_iter().filter_map(|hit| hit.note_id) {
            if seen.contains(&id) {
                continue;
            }
            seen.push(id.clone());
            // A note deleted between the search and the read is simply left out.
            match store.get_note(user, &id).await {
                Ok(note) => notes.push(NoteEntry::from(note)),
                Err(MemoryError::NoteNotFound(_)) => {}
                Err(e) => return Err(note_error("reading a note")(e)),
            }
        }
        Ok(notes)
    }

    /// One of `user`'s notes, whole.
    pub async fn note(&self, user: &UserId, note_id: &NoteId) -> Result<NoteEntry, RuntimeError> {
        let note = self
            .notes_store()?
            .get_note(user, note_id)
            .await
            .map_err(note_error("reading a note"))?;
        Ok(note.into())
    }

    /// Replaces the text of `user`'s note `note_id` if its current version is `version`; the note
    /// keeps its id, category and tags. Nothing changes when the version is stale, the text is
    /// empty or too long, or it holds a secret.
    pub async fn edit_note(
        &self,
        user: &UserId,
        note_id: &NoteId,
        content: &str,
        version: &str,
    ) -> Result<NoteEntry, RuntimeError> {
        let store = self.notes_store()?;
        let content = content.trim();
        if content.is_empty() {
            return Err(RuntimeError::InvalidNoteRequest(
                "the note is empty: give its new text, or delete it".into(),
            ));
        }
        if content.len() > tools::MAX_CONTENT_BYTES {
            return Err(RuntimeError::InvalidNoteRequest(format!(
                "the note is too long ({} bytes, at most {}): shorten it",
                content.len(),
                tools::MAX_CONTENT_BYTES
            )));
        }
        if tools::scrub_secrets(content) != content {
            return Err(RuntimeError::InvalidNoteRequest(
                "the text looks like it holds a secret (a key, token or password): keep secrets \
                 out of memory"
                    .into(),
            ));
        }
        store
            .update_note_patched(
                user,
                None,
                note_id,
                content,
                version,
                MetadataPatch::default(),
            )
            .await
            .map_err(note_error("editing a note"))?;
        self.note(user, note_id).await
    }

    /// Deletes `user`'s note `note_id` with everything indexed for it.
    pub async fn delete_note(&self, user: &UserId, note_id: &NoteId) -> Result<(), RuntimeError> {
        self.notes_store()?
            .delete_note(user, note_id)
            .await
            .map_err(note_error("deleting a note"))
    }
}

fn check_limit(limit: usize) -> Result<(), RuntimeError> {
    if limit == 0 || limit > MAX_NOTES_PAGE {
        return Err(RuntimeError::InvalidNoteRequest(format!(
            "limit must be between 1 and {MAX_NOTES_PAGE}"
        )));
    }
    Ok(())
}

/// The caller's mistakes become their own variants; the rest stays a memory failure.
fn note_error(context: &'static str) -> impl FnOnce(MemoryError) -> RuntimeError {
    move |e| match e {
        MemoryError::NoteNotFound(id) => RuntimeError::NoteNotFound(id),
        MemoryError::VersionMismatch(id) => RuntimeError::NoteVersionMismatch(id),
        MemoryError::InvalidInput(message) => RuntimeError::InvalidNoteRequest(message),
        e => RuntimeError::memory(context)(e),
    }
}
