//! The namespace of a note a call names by its id. The notes tools (`memory_update`,
//! `memory_delete`, the gateway's edits, …) describe their calls as on the `notes` namespace,
//! yet the id they are given may be a keyed value's (an MCP client's `putMemory` under a
//! namespace and key, which `memory_search` shows where reads are open): the permission stage
//! checks such a call against the value's own namespace, as it checks `putMemory`.

use async_trait::async_trait;
use memory::{MemoryError, MemoryStore};
use types::{NoteId, UserId};

/// Tells which namespace a note is kept under: the user's store, or a test double.
#[async_trait]
pub trait NoteNamespaces: Send + Sync + std::fmt::Debug {
    /// `Some(namespace)` for a keyed value of `user`, `None` for one of the notes tools' own
    /// notes or a note `user` does not have.
    async fn namespace_of(
        &self,
        user: &UserId,
        note_id: &NoteId,
    ) -> Result<Option<String>, MemoryError>;
}

#[async_trait]
impl NoteNamespaces for MemoryStore {
    async fn namespace_of(
        &self,
        user: &UserId,
        note_id: &NoteId,
    ) -> Result<Option<String>, MemoryError> {
        self.keys().namespace_of(user, note_id).await
    }
}
