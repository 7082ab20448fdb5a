//! Tools the agent can call, and the machinery every call goes through.
//!
//! A [`Tool`] gets its arguments and a per-call [`types::ToolExecutionContext`] (user, session,
//! turn, workspace, cancellation); tools keep no per-user state. The [`ToolRegistry`] offers the
//! tools' schemas to the model and runs each call through one pipeline: look up, parse, validate
//! against the JSON Schema, run under the tool's timeout and the turn's cancellation, scrub
//! secrets and host paths, truncate. The [`policy`] module decides which workspace paths file tools
//! may touch and opens them beneath the workspace root without following symbolic links. The four
//! memory tools (`memory_search`, `memory_save`, `memory_update`, `memory_delete`) work on the
//! user's notes in the `memory:{user_id}` namespace of that user's store; the other dialects
//! (categorized, and `files`: the `memory` tool over a `/memories` tree) reach the same notes, and
//! the MCP peer's `listMemory`, `getContext` and `putMemory` keep keyed values there too. Each of
//! these is a row of a table (`spec.rs`) run by one shim, and [`ToolSet`] is the one way to
//! assemble the tools of an agent or a surface. `shell_exec`
//! ([`ShellExec`]) is a client of the user's sandboxed shell daemon at `ipc/shell.sock`; it never
//! runs a command on the host itself; [`spawn_mcp_server`] asks that daemon to start one of the
//! user's stdio MCP servers in the shell's confinement and pipes its stdio back. The schedule tools (`schedule_create`, `schedule_list`,
//! `schedule_cancel`, `schedule_pause`) keep the user's schedules in their store ([`Schedules`]).
//!
//! Every memory call is also governed ([`governance`]): permissions, rate limits, PII and secret
//! handling, an audit row in the same transaction as the change, and metrics, per surface.
//!
//! `web_fetch` and `web_search` ([`web`], off unless `[tools.web] enabled = true`) read the web
//! from the agent, never a private or local address unless the operator allows the host.
//!
//! This crate does not run the agent loop, talk to models, or reach outside a user's workspace.

mod assembly;
mod error;
mod files;
pub mod governance;
mod memory_files;
mod memory_tools;
pub mod policy;
mod registry;
mod schedule_tools;
mod scrub;
mod shell;
mod spec;
mod tool;
mod truncate;
mod validate;
pub mod web;

pub use assembly::ToolSet;
pub use chrono_tz::Tz;
pub use error::ToolError;
pub use files::{FileDelete, FileEdit, FileList, FileRead, FileSearch, FileWrite, MAX_FILE_BYTES};
pub use governance::{Governance, MemoryAccess, MemoryMetrics};
pub use memory_files::{
    MAX_DEPTH as MAX_MEMORY_PATH_DEPTH, MAX_NAME_BYTES as MAX_MEMORY_NAME_BYTES,
    MAX_PATH_BYTES as MAX_MEMORY_PATH_BYTES, MEMORY_FILES_TOOL_NAME, MemoryFiles,
    canonical as canonical_memory_path, canonical_new as canonical_new_memory_path, human_size,
};
pub use memory_tools::{
    GET_CONTEXT_TOOL_NAME, LIST_MEMORIES_TOOL_NAME, LIST_MEMORY_TOOL_NAME, MAX_CONTENT_BYTES,
    MAX_SEARCH_TOP_K, MEMORY_DELETE_TOOL_NAME, MEMORY_SAVE_TOOL_NAME, MEMORY_SEARCH_TOOL_NAME,
    MEMORY_UPDATE_TOOL_NAME, PUT_MEMORY_TOOL_NAME, SEARCH_MEMORIES_TOOL_NAME,
    STORE_MEMORY_TOOL_NAME, audited_call_key,
};
/// A search's hits as its caller may read them (what the CLI's search shares with the tools).
pub use memory_tools::{
    SearchScope, fetch_k as search_fetch_k, query_time, readable as readable_hits, scope_sessions,
};
pub use registry::{DynamicTools, Settling, ToolOutcome, ToolRegistry};
pub use schedule_tools::{
    ManualWallClock, SCHEDULE_CANCEL_TOOL_NAME, SCHEDULE_CREATE_TOOL_NAME, SCHEDULE_LIST_TOOL_NAME,
    SCHEDULE_PAUSE_TOOL_NAME, SCHEDULES_NAMESPACE, Schedules, SystemWallClock, WallClock, When,
    next_run, parse_when, resolve_timezone, schedule_json, schedule_untrusted, schedule_view,
};
pub use scrub::{Scrubber, scrub_secrets};
pub use shell::{
    DEFAULT_COMMAND_TIMEOUT_SECS, MAX_COMMAND_BYTES, MAX_COMMAND_TIMEOUT_SECS, McpPipe,
    McpServerGuard, McpSpawnError, NOT_THE_DAEMON, SHELL_EXEC_TOOL_NAME, SHELL_NOT_RUNNING,
    ShellExec, ShellRun, connect_unfollowed, proof_key_of, read_secret, render as render_shell_run,
    run_command, spawn_mcp_server,
};
pub use tool::{Interruption, OutputFormat, Tool};
pub use truncate::{DEFAULT_OUTPUT_LIMIT, fit_json, truncate_output};
pub use validate::validate_args;
pub use web::{WEB_FETCH_TOOL_NAME, WEB_SEARCH_TOOL_NAME, WebFetch, WebSearch};
