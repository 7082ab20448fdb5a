//! Every integration test of `memory`, in one binary: a module per file (each binary links the
//! whole dependency tree again, so one per crate keeps builds and CI short). A new test file is
//! added as a `mod` line here and reaches the shared fixtures as `crate::common`.

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test fixtures fail loudly"
)]
mod common;

mod approximate;
mod audit;
mod captures;
mod encryption;
mod erase;
mod event_anchors;
mod freshness;
mod large_scan;
mod lifecycle;
mod names;
mod note_checks;
mod open;
mod organised;
mod remote;
mod remote_batches;
mod remote_commits;
mod remote_reads;
mod remote_requests;
mod replica;
mod replies;
mod restore_places;
mod round_trips;
mod schedules;
mod search;
mod session_history;
mod sessions;
mod snapshot;
mod store;
mod time_search;
