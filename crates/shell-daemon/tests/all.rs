//! Every integration test of `shell-daemon`, in one binary: a module per file (each binary links the
//! whole dependency tree again, so one per crate keeps builds and CI short). A new test file is
//! added as a `mod` line here and reaches the shared fixtures as `crate::common`.

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test fixtures fail loudly"
)]
mod common;

mod daemon;
mod mcp_pipe;
mod namespaces;
mod proof;
mod shell_exec_tool;
