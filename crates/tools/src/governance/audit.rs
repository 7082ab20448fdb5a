//! Where the governance stage appends the audit rows it writes itself (reads, denials, failed
//! writes). A successful write's row is not appended here: it is inserted by the store inside the
//! write's own transaction, from the [`types::AuditTag`] the registry puts in the call's context
//! (see [`crate::audited_call_key`]).

use async_trait::async_trait;
use memory::{AuditEntry, MemoryError, MemoryStore};
use types::UserId;

/// Appends audit rows: the user's store, or a test double.
#[async_trait]
pub trait AuditSink: Send + Sync + std::fmt::Debug {
    async fn append(&self, user: &UserId, entry: &AuditEntry<'_>) -> Result<(), MemoryError>;
}

#[async_trait]
impl AuditSink for MemoryStore {
    async fn append(&self, user: &UserId, entry: &AuditEntry<'_>) -> Result<(), MemoryError> {
        self.audit().append_audit(user, entry).await
    }
}
