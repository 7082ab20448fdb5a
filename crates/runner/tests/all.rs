//! Every integration test of `runner`, in one binary: a module per file (each binary links the
//! whole dependency tree again, so one per crate keeps builds and CI short). A new test file is
//! added as a `mod` line here and reaches the shared fixtures as `crate::common`.

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test fixtures fail loudly"
)]
mod common;

mod agent_copy;
mod container_memory;
mod container_recovery;
mod container_tier;
mod host_script;
mod images;
mod init_provider;
mod lifecycle;
mod mcp_clients;
mod mcp_confinement;
mod mcp_servers;
mod memory_cli;
mod memory_cli_governed;
mod memory_cli_governed_reads;
mod memory_cli_organise;
mod memory_cli_trust;
mod memory_dialects;
mod memory_disabled;
mod memory_keys;
mod memory_links;
mod memory_longevity;
mod open_tls;
mod operator_paths;
mod owners;
mod process_tier;
mod remote_memory;
mod restart_heals;
mod run_script;
mod runner_cli;
mod schedules_cli;
mod schedules_e2e;
mod separation;
mod shell_attacks;
mod shell_namespaces;
mod terminal_output;
mod tools_cli;
mod tui_via_runner;
mod usage_sessions_cli;
mod user_tiers;
mod web_open;
