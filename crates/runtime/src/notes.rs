//! The user's own view of their saved notes, for callers such as the gateway: list (by
//! category, paged), search, read, edit (only at the version the user was shown) and delete.
//! Every call is scoped to the `user` given by the caller, who takes it from the authenticated
//! connection; the store's `memory:{user}` namespace is the only one reached.
//!
//! Reads (list, search, read) pass the governance stages as the caller's surface (permission,
//! rate limit, an audit row and metrics: operations `list_notes`, `search_notes`, `get_note`),
//! like every other read of the user's memory. Edits and deletes run the notes tools (`memory_update`,
//! `memory_delete`) through the registry's one pipeline with the caller's context (its
//! `surface`, e.g. `gateway`): the same validation, permissions, rate limits, PII and secret
//! screening, audit row and scrubbing as the model's own calls. A stale version changes nothing.

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use memory::{Category, HybridQuery, ListQuery, MemoryError, MemoryStore, Note};
use serde_json::json;
use tools::{MEMORY_DELETE_TOOL_NAME, MEMORY_UPDATE_TOOL_NAME, MemoryAccess};
use types::{NoteId, NoteView, SessionId, TimeReadView, ToolExecutionContext, UserId, memory_ops};

use crate::RuntimeError;
use crate::note_lifecycle::provenance_view;
use crate::runtime::AgentRuntime;

/// Most notes one list or search returns.
pub const MAX_NOTES_PAGE: usize = memory::MAX_PAGE;

/// `note` as its user is shown it: the one note shape, the gateway protocol's [`NoteView`], its
/// times in the user's zone `tz`. `edit_token` changes whenever the text does; an edit must name
/// the current one.
pub(crate) fn note_view(note: Note, tz: Tz) -> NoteView {
    NoteView {
        edit_token: memory::edit_token(&note.content),
        note_id: note.note_id.to_string(),
        text: note.content,
        category: note.metadata.category.map(|c| c.as_str().to_owned()),
        tags: note.metadata.tags,
        created_at: rfc3339_in(note.created_at, tz),
        updated_at: rfc3339_in(note.updated_at, tz),
        provenance: note.metadata.provenance.map(provenance_view).map(Box::new),
        confirmed_text: None,
    }
}

/// For each of `notes` changed after untrusted input and awaiting the user's confirmation, its
/// id and the text the user last confirmed ([`MemoryStore::confirmed_texts`]).
async fn confirmed_texts(
    store: &MemoryStore,
    user: &UserId,
    notes: &[Note],
) -> Result<Vec<(NoteId, String)>, MemoryError> {
    let unconfirmed: Vec<NoteId> = notes
        .iter()
        .filter(|n| n.metadata.provenance.as_ref().is_some_and(|p| !p.confirmed))
        .map(|n| n.note_id.clone())
        .collect();
    store.confirmed_texts(user, &unconfirmed).await
}

/// `notes` as shown (see [`note_view`]), each with the confirmed text `confirmed` gives it.
fn note_views(notes: Vec<Note>, confirmed: &[(NoteId, String)], tz: Tz) -> Vec<NoteView> {
    notes
        .into_iter()
        .map(|n| {
            let mut view = note_view(n, tz);
            view.confirmed_text = confirmed
                .iter()
                .find(|(id, _)| id.as_str() == view.note_id)
                .map(|(_, text)| text.as_str().into());
            view
        })
        .collect()
}

/// A time as the protocol writes it: RFC 3339 UTC with milliseconds.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A time as the protocol shows it to a user: RFC 3339 with milliseconds and the offset of the
/// user's zone `tz` (so its first ten characters are the user's date, not UTC's).
pub fn rfc3339_in(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz)
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// What a search of the user's own memory found, best first, and how it read the query's words
/// about time (`None` when they name no time). Serde: it passes the governance stages whole (the
/// reading quotes a memory, and is screened like the hits).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Searched<T> {
    pub hits: Vec<T>,
    pub time: Option<TimeReadView>,
}

/// A page of notes, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteListing {
    pub notes: Vec<NoteView>,
    /// Notes matching the filter, over all pages.
    pub total: u64,
    /// Passed back as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

impl AgentRuntime {
    pub(crate) fn notes_store(&self) -> Result<&MemoryStore, RuntimeError> {
        self.journal.store().ok_or(RuntimeError::MemoryDisabled)
    }

    /// Up to `limit` (1 to [`MAX_NOTES_PAGE`]) of `user`'s notes, newest first, after `cursor`,
    /// of one `category` when given.
    pub async fn list_notes(
        &self,
        ctx: &ToolExecutionContext,
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
        let store = self.notes_store()?;
        let page = self
            .govern(
                ctx,
                memory_ops::LIST,
                MemoryAccess::notes_read(),
                |_| async {
                    let listed = async {
                        let page = store.list(&ctx.user_id, &query).await?;
                        let confirmed = confirmed_texts(store, &ctx.user_id, &page.notes).await?;
                        Ok((page, confirmed))
                    };
                    listed.await.map_err(note_error("listing notes"))
                },
            )
            .await;
        let (page, confirmed) = page?;
        Ok(NoteListing {
            notes: note_views(page.notes, &confirmed, self.zone()),
            total: page.total,
            next_cursor: page.next_cursor,
        })
    }

    /// `user`'s notes best matching `query`, whole, at most `limit` (1 to [`MAX_NOTES_PAGE`]),
    /// with how its words about time were read.
    pub async fn search_notes(
        &self,
        ctx: &ToolExecutionContext,
        query: &str,
        limit: usize,
    ) -> Result<Searched<NoteView>, RuntimeError> {
        check_limit(limit)?;
        let query = query.trim();
        if query.is_empty() {
            return Err(RuntimeError::InvalidNoteRequest(
                "the search is empty: give a few words to look for".into(),
            ));
        }
        if query.len() > HybridQuery::MAX_TEXT_BYTES {
            return Err(RuntimeError::InvalidNoteRequest(format!(
                "the search is too long (at most {} bytes): use a few words",
                HybridQuery::MAX_TEXT_BYTES
            )));
        }
        let store = self.notes_store()?;
        let user = &ctx.user_id;
        let search = |_| async move {
            let mut q = HybridQuery::new(vec![SessionId::user_memory(user)], query, limit);
            q.time = Some(tools::query_time(self.timezone));
            let time = store.read_and_settle_time(&mut q).await?;
            let hits = store.search(&q).await?;
            let mut seen = Vec::new();
            let mut notes = Vec::new();
            for id in hits.into_iter().filter_map(|hit| hit.note_id) {
                if seen.contains(&id) {
                    continue;
                }
                seen.push(id.clone());
                // A note deleted between the search and the read is simply left out.
                match store.get(user, &id).await {
                    Ok(note) => notes.push(note),
                    Err(MemoryError::NoteNotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            let confirmed = confirmed_texts(store, user, &notes).await?;
            Ok((notes, time, confirmed))
        };
        let (notes, time, confirmed) = self
            .govern(
                ctx,
                memory_ops::SEARCH,
                MemoryAccess::notes_read(),
                |call| async { search(call).await.map_err(note_error("searching notes")) },
            )
            .await?;
        Ok(Searched {
            hits: note_views(notes, &confirmed, self.zone()),
            time,
        })
    }

    /// One of `user`'s notes, whole.
    pub async fn note(
        &self,
        ctx: &ToolExecutionContext,
        note_id: &NoteId,
    ) -> Result<NoteView, RuntimeError> {
        let store = self.notes_store()?;
        let access = MemoryAccess::note_read(note_id);
        let (note, confirmed) = self
            .govern(ctx, memory_ops::GET, access, |_| async {
                let read = async {
                    let note = store.get(&ctx.user_id, note_id).await?;
                    let confirmed =
                        confirmed_texts(store, &ctx.user_id, std::slice::from_ref(&note)).await?;
                    Ok((note, confirmed))
                };
                read.await.map_err(note_error("reading a note"))
            })
            .await?;
        let mut view = note_view(note, self.zone());
        view.confirmed_text = confirmed.into_iter().next().map(|(_, text)| text.into());
        Ok(view)
    }

    /// Replaces the text of the caller's note `note_id` if its current text's edit token is
    /// `edit_token`; the note keeps its id, category and tags. The caller (`ctx.user_id`,
    /// `ctx.surface`) comes from its own authenticated context. Nothing changes when the token is
    /// stale, the text is
    /// empty or too long, or the governance stages refuse it.
    pub async fn edit_note(
        &self,
        ctx: &ToolExecutionContext,
        note_id: &NoteId,
        content: &str,
        edit_token: &str,
    ) -> Result<NoteView, RuntimeError> {
        let content = content.trim();
        if content.is_empty() {
            return Err(RuntimeError::InvalidNoteRequest(
                "the note is empty: give its new text, or delete it".into(),
            ));
        }
        if let Err(too_long) = memory::TooLong::check(content, memory::MAX_CONTENT_BYTES) {
            return Err(RuntimeError::InvalidNoteRequest(format!(
                "the note is too long ({too_long}): shorten it"
            )));
        }
        self.current_at(&ctx.user_id, note_id, edit_token).await?;
        // The update tool's argument keeps the name the model knows: `version`.
        let args =
            json!({ "note_id": note_id.as_str(), "content": content, "version": edit_token });
        let outcome = self.governed(MEMORY_UPDATE_TOOL_NAME, &args, ctx).await?;
        if !outcome.ok {
            // Changed in between, or refused by a governance stage.
            self.current_at(&ctx.user_id, note_id, edit_token).await?;
            return Err(refused(&outcome));
        }
        self.stored(&ctx.user_id, note_id).await
    }

    /// Deletes the caller's note `note_id` with everything indexed for it.
    pub async fn delete_note(
        &self,
        ctx: &ToolExecutionContext,
        note_id: &NoteId,
    ) -> Result<(), RuntimeError> {
        self.stored(&ctx.user_id, note_id).await?;
        if self.tools.get(MEMORY_DELETE_TOOL_NAME).is_none() {
            // The agent's dialect has no `memory_delete` (categorized, files): the same delete,
            // governed as one, without the tool (nothing to screen in an id).
            let store = self.notes_store()?;
            let access = tools::MemoryAccess::notes_delete().with_key(Some(note_id.as_str()));
            return self
                .govern(ctx, types::memory_ops::DELETE, access, |call| async move {
                    store
                        .delete(&ctx.user_id, call.as_ref(), note_id)
                        .await
                        .map(|_| ())
                        .map_err(note_error("deleting a note"))
                })
                .await;
        }
        let args = json!({ "note_id": note_id.as_str() });
        let outcome = self.governed(MEMORY_DELETE_TOOL_NAME, &args, ctx).await?;
        match (outcome.ok, outcome.error_kind) {
            (true, _) => Ok(()),
            (false, Some("not_found")) => Err(RuntimeError::NoteNotFound(note_id.clone())),
            (false, _) => Err(refused(&outcome)),
        }
    }

    /// The note an edit or delete is about, read as part of that governed call (its own audit
    /// row is the write's).
    async fn stored(&self, user: &UserId, note_id: &NoteId) -> Result<NoteView, RuntimeError> {
        let note = self
            .notes_store()?
            .get(user, note_id)
            .await
            .map_err(note_error("reading a note"))?;
        Ok(note_view(note, self.zone()))
    }

    /// `note_id` when it exists and its text's edit token is `edit_token`.
    async fn current_at(
        &self,
        user: &UserId,
        note_id: &NoteId,
        edit_token: &str,
    ) -> Result<(), RuntimeError> {
        if self.stored(user, note_id).await?.edit_token != edit_token.trim() {
            return Err(RuntimeError::NoteVersionMismatch(note_id.clone()));
        }
        Ok(())
    }

    /// Runs a notes tool through the registry's one pipeline (validation, permission, rate
    /// limit, PII and secrets, the write with its audit row, scrubbing), as the caller's surface.
    async fn governed(
        &self,
        tool: &str,
        args: &serde_json::Value,
        ctx: &ToolExecutionContext,
    ) -> Result<tools::ToolOutcome, RuntimeError> {
        self.notes_store()?;
        if self.tools.get(tool).is_none() {
            return Err(RuntimeError::InvalidNoteRequest(
                "this agent's memory dialect does not offer note edits here".into(),
            ));
        }
        Ok(self.tools.execute(tool, &args.to_string(), ctx).await)
    }
}

/// A refused write: the pipeline's own message (a governance refusal's `error.message`).
pub(crate) fn refused(outcome: &tools::ToolOutcome) -> RuntimeError {
    let message = serde_json::from_str::<serde_json::Value>(&outcome.output)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| outcome.output.clone());
    RuntimeError::NoteRefused {
        kind: outcome.error_kind.unwrap_or("refused"),
        message,
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
pub(crate) fn note_error(context: &'static str) -> impl FnOnce(MemoryError) -> RuntimeError {
    move |e| match e {
        MemoryError::NoteNotFound(id) => RuntimeError::NoteNotFound(id),
        MemoryError::VersionMismatch(id) => RuntimeError::NoteVersionMismatch(id),
        MemoryError::InvalidInput(message) => RuntimeError::InvalidNoteRequest(message),
        e => RuntimeError::memory(context)(e),
    }
}
