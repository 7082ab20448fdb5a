//! The seam between the memory tools and the store.

use async_trait::async_trait;
use types::{NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::duplicates::{SaveOutcome, Similar};
use crate::notes::keyed::{KeyPage, KeyQuery, KeyedWrite};
use crate::notes::listing::{ListQuery, NotePage};
use crate::notes::metadata::MetadataPatch;
use crate::notes::note::{Note, NoteMetadata};
use crate::notes::receipts::{CallKey, WriteReceipt};
use crate::notes::sessions::{SessionInfo, StoredEvent};
use crate::notes::usage::{ModelUsage, UsageScope};
use crate::search::query::{HybridQuery, SearchHit};
use crate::search::when::{TimeRange, time_range};

/// What the memory tools need. The tools hold an `Arc<dyn MemoryRetrieval>`; tests wrap a real
/// store to inject failures. Every write takes the tool call's key (a retry of the call writes
/// nothing and returns the first receipt); an update names the version of the text it replaces.
#[async_trait]
pub trait MemoryRetrieval: Send + Sync + std::fmt::Debug {
    async fn store_note_once(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        content: &str,
        metadata: NoteMetadata,
    ) -> Result<WriteReceipt, MemoryError>;
    /// Replaces the note's text if its version is `expected_version`, and changes category, tags
    /// or expiry as `patch` says (an empty patch keeps them).
    async fn update_note_patched(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: &NoteId,
        content: &str,
        expected_version: &str,
        patch: MetadataPatch,
    ) -> Result<WriteReceipt, MemoryError>;
    async fn delete_note_once(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: &NoteId,
    ) -> Result<WriteReceipt, MemoryError>;
    async fn list_notes_page(
        &self,
        user: &UserId,
        query: &ListQuery,
    ) -> Result<NotePage, MemoryError>;
    async fn get_note(&self, user: &UserId, note_id: &NoteId) -> Result<Note, MemoryError>;
    async fn hybrid_query(&self, query: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError>;
    /// The span of time `query`'s words speak of, as its search reads it (see
    /// [`MemoryStore::read_time`]). A store that cannot look events up reads only dates.
    async fn read_time(&self, query: &HybridQuery) -> Result<Option<TimeRange>, MemoryError> {
        Ok(query.time.and_then(|at| time_range(&query.text, &at)))
    }
    /// Stores `content` under `(namespace, key)` (see [`Keys::put_keyed`](crate::Keys::put_keyed)).
    async fn put_keyed(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        namespace: &str,
        key: &str,
        content: &str,
        metadata: NoteMetadata,
    ) -> Result<KeyedWrite, MemoryError>;
    /// One page of a namespace's keys (see [`Keys::list_keys`](crate::Keys::list_keys)).
    async fn list_keys(&self, user: &UserId, query: &KeyQuery) -> Result<KeyPage, MemoryError>;
    /// A stored session (see [`Sessions::session_info`](crate::Sessions::session_info)).
    async fn session_info(&self, session: &SessionId) -> Result<SessionInfo, MemoryError>;
    /// Up to `limit` latest events of `session`, oldest first.
    async fn recent_events(
        &self,
        session: &SessionId,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, MemoryError>;
    /// `user`'s conversation sessions (see [`MemoryStore::conversation_sessions`]). A store
    /// without conversations has none.
    async fn conversation_sessions(&self, user: &UserId) -> Result<Vec<SessionId>, MemoryError> {
        let _ = user;
        Ok(Vec::new())
    }
    /// The context of a message hit (see [`MemoryStore::conversation_context`]).
    async fn conversation_context(
        &self,
        user: &UserId,
        session: &SessionId,
        seq: u64,
        radius: usize,
    ) -> Result<crate::ConversationContext, MemoryError> {
        let _ = (user, seq, radius);
        Err(MemoryError::SessionNotFound(session.clone()))
    }
    /// The contexts of several message hits (see [`MemoryStore::conversation_contexts`]): `None`
    /// for a message that has none.
    async fn conversation_contexts(
        &self,
        user: &UserId,
        hits: &[(SessionId, u64)],
        radius: usize,
    ) -> Result<Vec<Option<crate::ConversationContext>>, MemoryError> {
        let mut out = Vec::with_capacity(hits.len());
        for (session, seq) in hits {
            let place = self.conversation_context(user, session, *seq, radius).await;
            out.push(place.ok());
        }
        Ok(out)
    }
    /// Saves unless `user` already has the note (see [`MemoryStore::save`]). A
    /// store without duplicate checks just saves.
    async fn store_note_checked(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        content: &str,
        metadata: NoteMetadata,
        _similar: Similar,
    ) -> Result<SaveOutcome, MemoryError> {
        self.store_note_once(user, call, content, metadata)
            .await
            .map(SaveOutcome::Saved)
    }

    /// The store itself when it offers the `/memories` file tree (see [`crate::PathFile`]).
    fn files(&self) -> Option<&MemoryStore> {
        None
    }

    /// `user`'s token usage per model (see [`UsageLog::usage_by_model`](crate::UsageLog::usage_by_model)); none recorded in a
    /// store that does not keep it.
    async fn usage_by_model(
        &self,
        _user: &UserId,
        _scope: UsageScope<'_>,
    ) -> Result<Vec<ModelUsage>, MemoryError> {
        Ok(Vec::new())
    }
}

#[async_trait]
impl MemoryRetrieval for MemoryStore {
    async fn store_note_once(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        content: &str,
        metadata: NoteMetadata,
    ) -> Result<WriteReceipt, MemoryError> {
        MemoryStore::save(self, user, call, content, metadata, Similar::Unchecked)
            .await?
            .into_receipt()
    }

    async fn update_note_patched(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: &NoteId,
        content: &str,
        expected_version: &str,
        patch: MetadataPatch,
    ) -> Result<WriteReceipt, MemoryError> {
        MemoryStore::update(
            self,
            user,
            call,
            note_id,
            content,
            Some(expected_version),
            patch,
        )
        .await
        .map(|written| written.receipt)
    }

    async fn delete_note_once(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: &NoteId,
    ) -> Result<WriteReceipt, MemoryError> {
        MemoryStore::delete(self, user, call, note_id).await
    }

    async fn list_notes_page(
        &self,
        user: &UserId,
        query: &ListQuery,
    ) -> Result<NotePage, MemoryError> {
        MemoryStore::list(self, user, query).await
    }

    async fn get_note(&self, user: &UserId, note_id: &NoteId) -> Result<Note, MemoryError> {
        MemoryStore::get(self, user, note_id).await
    }

    async fn hybrid_query(&self, query: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError> {
        MemoryStore::search(self, query).await
    }

    async fn read_time(&self, query: &HybridQuery) -> Result<Option<TimeRange>, MemoryError> {
        MemoryStore::read_time(self, query).await
    }

    async fn put_keyed(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        namespace: &str,
        key: &str,
        content: &str,
        metadata: NoteMetadata,
    ) -> Result<KeyedWrite, MemoryError> {
        self.keys()
            .put_keyed(user, call, namespace, key, content, metadata)
            .await
    }

    async fn list_keys(&self, user: &UserId, query: &KeyQuery) -> Result<KeyPage, MemoryError> {
        self.keys().list_keys(user, query).await
    }

    async fn session_info(&self, session: &SessionId) -> Result<SessionInfo, MemoryError> {
        self.sessions().session_info(session).await
    }

    async fn recent_events(
        &self,
        session: &SessionId,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, MemoryError> {
        self.sessions().history(session, None, limit).await
    }

    async fn conversation_sessions(&self, user: &UserId) -> Result<Vec<SessionId>, MemoryError> {
        MemoryStore::conversation_sessions(self, user).await
    }

    async fn conversation_context(
        &self,
        user: &UserId,
        session: &SessionId,
        seq: u64,
        radius: usize,
    ) -> Result<crate::ConversationContext, MemoryError> {
        MemoryStore::conversation_context(self, user, session, seq, radius).await
    }

    async fn conversation_contexts(
        &self,
        user: &UserId,
        hits: &[(SessionId, u64)],
        radius: usize,
    ) -> Result<Vec<Option<crate::ConversationContext>>, MemoryError> {
        MemoryStore::conversation_contexts(self, user, hits, radius).await
    }

    async fn usage_by_model(
        &self,
        user: &UserId,
        scope: UsageScope<'_>,
    ) -> Result<Vec<ModelUsage>, MemoryError> {
        self.usage().usage_by_model(user, scope).await
    }

    async fn store_note_checked(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        content: &str,
        metadata: NoteMetadata,
        similar: Similar,
    ) -> Result<SaveOutcome, MemoryError> {
        MemoryStore::save(self, user, call, content, metadata, similar)
            .await
            .map(|saved| saved.outcome)
    }

    fn files(&self) -> Option<&MemoryStore> {
        Some(self)
    }
}
