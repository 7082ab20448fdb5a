//! [`MemoryAccess`]: what a memory call is about to do, as its tool describes it — the operation,
//! namespace, key, lifetime and the text fields screening reads — with the constructors every
//! surface uses; and the namespace and error codes the pipeline speaks in.

use types::Operation;

/// The namespace of the notes tools (`memory_*`, `store_memory`, …): the user's own notes.
pub const NOTES_NAMESPACE: &str = "notes";

/// The ADR's error codes.
pub const PERMISSION_DENIED: &str = "PERMISSION_DENIED";
pub const PII_DETECTED: &str = "PII_DETECTED";
pub const RATE_LIMITED: &str = "RATE_LIMITED";

/// What a memory call is about to do, as its tool describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryAccess {
    pub operation: Operation,
    pub namespace: String,
    /// The key or note id the call names, for the audit log.
    pub key: Option<String>,
    /// The time-to-live a write asks for, checked against `max_ttl_seconds` (`None` or 0: kept
    /// forever, over any limit).
    pub ttl_seconds: Option<u64>,
    /// A write that leaves the note's lifetime as it is (an edit, a rename, a confirmation): no
    /// time-to-live to check.
    pub keeps_lifetime: bool,
    /// `getContext`'s `context_type`.
    pub context_type: Option<String>,
    /// Arguments holding free text (scanned for PII and secrets on a write; any JSON inside is
    /// walked). Ids, versions and enums are not listed.
    pub text_fields: &'static [&'static str],
}

impl MemoryAccess {
    /// A read of the user's notes.
    pub fn notes_read() -> Self {
        Self {
            operation: Operation::Read,
            namespace: NOTES_NAMESPACE.to_owned(),
            key: None,
            ttl_seconds: None,
            keeps_lifetime: false,
            context_type: None,
            text_fields: &[],
        }
    }

    /// A delete of one of the user's notes (or a write that empties it).
    pub fn notes_delete() -> Self {
        Self {
            operation: Operation::Delete,
            ..Self::notes_read()
        }
    }

    /// A read of the user's note `note_id`.
    pub fn note_read(note_id: &types::NoteId) -> Self {
        Self::notes_read().with_key(Some(note_id.as_str()))
    }

    /// A write to the user's note `note_id` that stores no new text and keeps its lifetime (a
    /// restore, a confirmation).
    pub fn note_change(note_id: &types::NoteId) -> Self {
        Self::notes_write(&[])
            .keeping_lifetime()
            .with_key(Some(note_id.as_str()))
    }

    /// A write to the user's notes whose free text is in `text_fields`.
    pub fn notes_write(text_fields: &'static [&'static str]) -> Self {
        Self {
            operation: Operation::Write,
            text_fields,
            ..Self::notes_read()
        }
    }

    /// The time-to-live the write asks for (`None`: forever).
    #[must_use]
    pub fn with_ttl(mut self, ttl_seconds: Option<u64>) -> Self {
        self.ttl_seconds = ttl_seconds;
        self
    }

    /// The write keeps the note's lifetime (see [`MemoryAccess::keeps_lifetime`]).
    #[must_use]
    pub fn keeping_lifetime(mut self) -> Self {
        self.keeps_lifetime = true;
        self
    }

    #[must_use]
    pub fn with_key(mut self, key: Option<&str>) -> Self {
        self.key = key.map(|k| k.chars().take(200).collect());
        self
    }
}
