//! Every integration test of `tui`, in one binary: a module per file (each binary links the
//! whole dependency tree again, so one per crate keeps builds and CI short). A new test file is
//! added as a `mod` line here and reaches the shared fixtures as `crate::common`.

mod common;

mod approval_tmux;
mod e2e_tmux;
mod export_tmux;
mod mcp_tmux;
mod memory_dialects_tmux;
mod memory_tmux;
mod moved_gateway;
mod paste_tmux;
mod reconnect;
mod retry_status;
mod screens;
mod screens_hostile;
mod screens_memory;
mod screens_search;
