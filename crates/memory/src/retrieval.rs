//! The seam between the memory tools and the store.

use async_trait::async_trait;
use types::{NoteId, UserId};

use crate::duplicates::{SaveOutcome, Similar};
use crate::error::MemoryError;
use crate::listing::{ListQuery, NotePage};
use crate::metadata::MetadataPatch;
use crate::notes::{Note, NoteMetadata};
use crate::query::{HybridQuery, SearchHit};
use crate::receipts::{CallKey, WriteReceipt};
use crate::store::MemoryStore;

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
    /// Saves unless `user` already has the note (see [`MemoryStore::store_note_checked`]). A
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
        MemoryStore::store_note_once(self, user, call, content, metadata).await
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
        MemoryStore::update_note_patched(
            self,
            user,
            call,
            note_id,
            content,
            expected_version,
            patch,
        )
        .await
    }

    async fn delete_note_once(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: &NoteId,
    ) -> Result<WriteReceipt, MemoryError> {
        MemoryStore::delete_note_once(self, user, call, note_id).await
    }

    async fn list_notes_page(
        &self,
        user: &UserId,
        query: &ListQuery,
    ) -> Result<NotePage, MemoryError> {
        MemoryStore::list_notes_page(self, user, query).await
    }

    async fn get_note(&self, user: &UserId, note_id: &NoteId) -> Result<Note, MemoryError> {
        MemoryStore::get_note(self, user, note_id).await
    }

    async fn hybrid_query(&self, query: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError> {
        MemoryStore::hybrid_query(self, query).await
    }

    async fn store_note_checked(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        content: &str,
        metadata: NoteMetadata,
        similar: Similar,
    ) -> Result<SaveOutcome, MemoryError> {
        MemoryStore::store_note_checked(self, user, call, content, metadata, similar).await
    }
}
