//! The per-user memory store behind the memory tools and the agent's recall.
//!
//! One [`MemoryStore`] is one user's libSQL database (`<user_root>/.oxydra/memory.db`, or a remote
//! libSQL server): numbered migrations; sessions and their events; notes saved, updated and deleted
//! each in one transaction; text chunked, embedded and indexed (in-memory BM25 postings); an in-memory int8 vector
//! index (exact scan, or a binary first pass with exact rescoring for large sessions); hybrid search
//! that scopes to the requested sessions before ranking; rolling-summary state
//! with compare-and-swap; re-embedding when the embedding model changes; stats, export and import;
//! a note's lifecycle (versions, tombstones, restore, purge), duplicate checks and provenance.
//! the `/memories` file tree of the `memory` tool, whose files are notes with a path; token usage
//! per model call, for reporting usage per session.
//! All SQL runs on dedicated database threads, never on the caller's async threads.
//!
//! It does not know about tools, providers or the network protocol; user identity is always passed
//! in by the caller.

mod audit;
mod calibration;
mod chunking;
mod dot;
mod duplicates;
pub mod embedding;
mod encryption;
mod erase;
mod error;
mod facets;
mod freshness;
mod fusion;
mod hamming;
mod index_change;
mod indexing;
mod inline_read;
mod keyed;
mod keyword;
mod keyword_index;
mod legs_alone;
mod lifecycle;
mod listing;
mod maintenance;
mod metadata;
mod migrations;
mod note_rows;
mod notes;
mod one_trip;
mod one_trip_edit;
mod paths;
mod placement;
mod provenance;
mod query;
mod query_words;
mod receipts;
mod reindex;

mod remote;
mod restore;
mod retrieval;
mod schedule_runs;
mod schedules;
mod search;
mod sessions;
mod sign_codes;
mod stmt;
mod store;
mod summary;
mod terms;
mod time;
mod topk;
mod transfer;
mod usage;
mod vector_index;
mod vector_leg;
mod worker;

pub use audit::{AuditEntry, AuditPage, AuditQuery, AuditRecord, MAX_AUDIT_ROWS, MAX_NAME_CHARS};
pub use chunking::{CHUNK_CHARS, MAX_OVERLAP_CHARS, chunk_text};
pub use duplicates::{
    DEFAULT_DUPLICATE_SIMILARITY, DuplicateCheck, SaveOutcome, Similar, SimilarNote, normalize,
};
pub use embedding::{Embedder, HashEmbedder};
pub use encryption::{EncryptionKey, MAX_KEY_CHARS, MIN_KEY_CHARS, change_key, is_plaintext};
pub use erase::Erased;
pub use error::{MemoryError, RemoteProblem};
pub use keyed::{
    KeyPage, KeyQuery, KeyedWrite, MAX_KEY_BYTES, MAX_KEY_PAGE, MAX_NAMESPACE_BYTES, check_key,
    check_namespace,
};
pub use lifecycle::{
    DEFAULT_TOMBSTONE_RETENTION_DAYS, DeletedNote, NoteHistory, NoteState, NoteVersion,
};
pub use listing::{ListQuery, MAX_PAGE, NotePage, Sweeper};
pub use maintenance::StoreStats;
pub use metadata::{
    Category, MAX_CONTEXT_CHARS, MAX_TAG_CHARS, MAX_TAGS, MetadataPatch, NoteMetadata,
};
pub use notes::{ExportedNote, MAX_NOTE_BYTES, Note};
pub use paths::{MEMORIES_ROOT, PathEntry, PathExpect, PathFile, PathMove, PathPut};
pub use placement::LegacyDir;
pub use provenance::{Origin, Provenance};
pub use query::{Fusion, HitSource, HybridQuery, QueryFilters, SearchHit, Weights};
pub use query_words::query_terms;
pub use receipts::{CallKey, RECEIPT_DAYS, WriteReceipt, note_version};
pub use retrieval::MemoryRetrieval;
pub use schedule_runs::{NewNotification, Notification, RunEnded, RunNext};
pub use schedules::{
    MAX_INSTRUCTION_BYTES, MAX_SCHEDULE_TITLE_CHARS, NewSchedule, Schedule, ScheduleChange,
    ScheduleState,
};
pub use sessions::{SessionInfo, SessionKind, StoredEvent};
pub use store::{MemoryStore, OpenOptions, ProgressFn};
pub use summary::SummaryState;
pub use transfer::{ImportReport, ImportSimilar, ImportSkip};
pub use usage::{CallPlace, ModelUsage, UsageScope};
pub use vector_leg::{APPROX_MIN_ROWS, VectorLeg};
