//! Every integration test of `tools`, in one binary: a module per file (each binary links the
//! whole dependency tree again, so one per crate keeps builds and CI short). A new test file is
//! added as a `mod` line here and reaches the shared fixtures as `crate::common`.

mod common;

mod categorized_search;
mod file_tools;
mod governance;
mod governance_classes;
mod governance_keyed;
mod hostile_paths;
mod memory_anchors;
mod memory_contract;
mod memory_conversation;
mod memory_dialects;
mod memory_files;
mod memory_files_unconfirmed;
mod memory_tools;
mod memory_trust;
mod memory_trust_surfaces;
mod peer_mcp;
mod registry;
mod schedule_tools;
mod screening;
mod shell_exec;
mod web_fetch;
mod web_pages;
mod web_search;
mod web_server;
