//! Every integration test of `gateway`, in one binary: a module per file (each binary links the
//! whole dependency tree again, so one per crate keeps builds and CI short). A new test file is
//! added as a `mod` line here and reaches the shared fixtures as `crate::common`.

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test fixtures fail loudly"
)]
mod common;

mod approvals;
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test fixtures fail loudly"
)]
mod browser;
mod capture;
mod handshake;
mod isolation;
mod limits;
mod mcp_bounds;
mod mcp_calls;
mod mcp_status;
mod memory_files;
mod metrics;
mod models;
mod no_memory;
mod note_lifecycle;
mod notes;
mod notes_reads;
mod notices;
mod schedules;
mod schema;
mod search_frames;
mod search_time;
mod session_titles;
mod tls;
mod turns;
mod web;
mod web_browser;
mod web_capture;
mod web_forget;
mod web_hosts;
mod web_js;
mod web_progress;
mod web_timing;
