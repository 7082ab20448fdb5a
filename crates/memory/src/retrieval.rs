//! The seam between the memory tools and the store.

use async_trait::async_trait;
use types::{NoteId, UserId};

use crate::error::MemoryError;
use crate::notes::{Note, NoteMetadata};
use crate::query::{HybridQuery, SearchHit};
use crate::store::MemoryStore;

/// What the memory tools need. The tools hold an `Arc<dyn MemoryRetrieval>`; tests wrap a real
/// store to inject failures.
#[async_trait]
pub trait MemoryRetrieval: Send + Sync + std::fmt::Debug {
    async fn store_note(
        &self,
        user: &UserId,
        content: &str,
        metadata: NoteMetadata,
    ) -> Result<Note, MemoryError>;
    async fn update_note(
        &self,
        user: &UserId,
        note_id: &NoteId,
        content: &str,
    ) -> Result<Note, MemoryError>;
    async fn delete_note(&self, user: &UserId, note_id: &NoteId) -> Result<(), MemoryError>;
    async fn get_note(&self, user: &UserId, note_id: &NoteId) -> Result<Note, MemoryError>;
    async fn hybrid_query(&self, query: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError>;
}

#[async_trait]
impl MemoryRetrieval for MemoryStore {
    async fn store_note(
        &self,
        user: &UserId,
        content: &str,
        metadata: NoteMetadata,
    ) -> Result<Note, MemoryError> {
        MemoryStore::store_note(self, user, content, metadata).await
    }

    async fn update_note(
        &self,
        user: &UserId,
        note_id: &NoteId,
        content: &str,
    ) -> Result<Note, MemoryError> {
        MemoryStore::update_note(self, user, note_id, content).await
    }

    async fn delete_note(&self, user: &UserId, note_id: &NoteId) -> Result<(), MemoryError> {
        MemoryStore::delete_note(self, user, note_id).await
    }

    async fn get_note(&self, user: &UserId, note_id: &NoteId) -> Result<Note, MemoryError> {
        MemoryStore::get_note(self, user, note_id).await
    }

    async fn hybrid_query(&self, query: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError> {
        MemoryStore::hybrid_query(self, query).await
    }
}
