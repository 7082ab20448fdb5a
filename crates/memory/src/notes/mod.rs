//! What is written: notes (save, update, delete in one transaction each) and their lifecycle —
//! versions, tombstones, restore, provenance, write receipts, duplicate checks — the `/memories`
//! paths and keyed notes, listing, export and import, erasing, the audit log, token usage,
//! rolling summaries, sessions and their events, and the chunk rows every write indexes.

pub(crate) mod audit;
pub(crate) mod bounds;
pub(crate) mod capture;
pub(crate) mod duplicates;
pub(crate) mod erase;
pub(crate) mod facet_rows;
pub(crate) mod indexing;
pub(crate) mod keyed;
pub(crate) mod lifecycle;
pub(crate) mod listing;
pub(crate) mod maintenance;
pub(crate) mod metadata;
pub(crate) mod note;
pub(crate) mod note_rows;
pub(crate) mod one_trip;
pub(crate) mod one_trip_edit;
pub(crate) mod paths;
pub(crate) mod provenance;
pub(crate) mod recallable;
pub(crate) mod receipts;
pub(crate) mod restore;
pub(crate) mod schedule_runs;
pub(crate) mod schedules;
pub(crate) mod sessions;
pub(crate) mod summary;
pub(crate) mod transfer;
pub(crate) mod usage;
