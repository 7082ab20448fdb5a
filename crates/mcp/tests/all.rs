//! Every integration test of `mcp`, in one binary: a module per file.

mod client;
mod client_checks;
mod client_hostile;
mod client_progress;
mod http_body;
