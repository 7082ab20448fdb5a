//! Every integration test of `runtime`, in one binary: a module per file (each binary links the
//! whole dependency tree again, so one per crate keeps builds and CI short). A new test file is
//! added as a `mod` line here and reaches the shared fixtures as `crate::common`.

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test fixtures fail loudly"
)]
mod common;

mod approval_grants;
mod capture;
mod capture_attacks;
mod capture_similar;
mod capture_suggest;
mod capture_trust;
mod dispatch;
mod edit_after_untrusted;
mod forget_after_untrusted;
mod lifecycle;
mod memory;
mod note_dates;
mod past_replies;
mod progress;
mod schedule_trust;
mod search_time;
mod summary;
mod trust;
mod trust_across_turns;
mod usage;
