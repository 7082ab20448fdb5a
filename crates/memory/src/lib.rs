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
//!
//! Where things are:
//! - [`MemoryStore`] (`memory_store.rs`): the handle and [`MemoryStore::open`]; the embedder and
//!   the indexes of `memory-index` it keeps beside the database.
//! - `store/`: the database itself — opening a target (local file, encrypted file, remote server,
//!   replica; `placement`, `encryption`, `remote`), the database threads (`worker`, `inline_read`),
//!   migrations, and the statements shared by local and remote writes (`stmt`). The connections
//!   are private to it; everything else runs SQL through its read and write functions.
//! - `notes/`: what is written — notes and their lifecycle (versions, tombstones, restore,
//!   provenance, receipts, duplicates), paths and keys, listing, import/export, erase, audit,
//!   usage, summaries and sessions, and the chunk rows a write indexes (`indexing`).
//! - `search/`: what is read back by meaning — hybrid search (`hybrid`), the query types,
//!   freshness of the in-memory indexes against other writers, and re-embedding (`reindex`).
//! - `rooms.rs`: the views of a store for what is not a note operation — [`MemoryStore::files`],
//!   `keys`, `sessions`, `audit`, `usage`, `upkeep`.
//! - [`MemoryRetrieval`] (`retrieval.rs`): the store seen by the tools and the runtime.

mod error;
mod memory_store;
mod notes;
mod retrieval;
mod rooms;
mod search;
mod store;
mod time;

pub use notes::audit::{
    AuditEntry, AuditPage, AuditQuery, AuditRecord, MAX_AUDIT_ROWS, MAX_NAME_CHARS,
};
pub use notes::capture::{MAX_PENDING_PROPOSALS, PendingProposal, ProposalPlace};
pub use notes::duplicates::{DuplicateCheck, SaveOutcome, Saved, Similar, SimilarNote, normalize};
pub use notes::erase::Erased;
pub use store::encryption::{EncryptionKey, change_key, is_plaintext};
// The embedders are part of `MemoryStore::open`'s signature.
pub use error::{MemoryError, RemoteProblem};
pub use memory_index::{Embedder, HashEmbedder, VectorLeg, embedding};
pub use memory_store::{MemoryStore, OpenOptions, ProgressFn, Target};
pub use notes::bounds::{MAX_CONTENT_BYTES, MAX_NOTE_BYTES, TooLong};
pub use notes::keyed::{KeyPage, KeyQuery, KeyedWrite};
pub use notes::lifecycle::{DeletedNote, NoteHistory, NoteState, NoteVersion};
pub use notes::listing::{ListQuery, MAX_PAGE, NotePage, Sweeper};
pub use notes::maintenance::StoreStats;
pub use notes::metadata::{Category, MAX_TAG_CHARS, MAX_TAGS, MetadataPatch, NoteMetadata};
pub use notes::note::{ExportedNote, Note};
pub use notes::paths::{MEMORIES_ROOT, PathEntry, PathExpect, PathFile, PathMove, PathPut};
pub use notes::provenance::{Origin, Provenance};
pub use notes::recallable::Recallable;
pub use notes::receipts::{CallKey, WriteReceipt, Written, edit_token};
pub use notes::schedule_runs::{NewNotification, Notification, RunEnded, RunNext};
pub use notes::schedules::{
    MAX_INSTRUCTION_BYTES, MAX_SCHEDULE_TITLE_CHARS, MAX_WHEN_CHARS, NewSchedule, Schedule,
    ScheduleChange, ScheduleState,
};
pub use notes::sessions::{SessionInfo, SessionKind, StoredEvent};
pub use notes::summary::SummaryState;
pub use notes::transfer::{ImportReport, ImportSimilar, ImportSkip};
pub use notes::usage::{CallPlace, ModelUsage, UsageScope};
pub use retrieval::MemoryRetrieval;
pub use rooms::{Audit, Captures, Files, Keys, Schedules, Sessions, Upkeep, UsageLog};
pub use search::conversations::{ConversationContext, NearbyTurn};
pub use search::query::{Fusion, HitSource, HybridQuery, QueryFilters, SearchHit, Weights};
pub use search::when::{
    EventAnchor, EventDate, QueryTime, TimeRange, event_anchor, event_date, time_range,
};
pub use store::placement::LegacyDir;
