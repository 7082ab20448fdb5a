//! The memory tools as table rows ([`ToolSpec`]): the notes dialect's four (`memory_search`,
//! `memory_save`, `memory_update`, `memory_delete`), the categorized dialect's three and the MCP
//! peer's three. [`crate::ToolSet`] builds them over one store.
//!
//! Notes live in the user's namespace `memory:{user_id}` of that user's own database. The user and
//! the current conversation session come from the per-call [`types::ToolExecutionContext`], never
//! from shared state or arguments.

mod categorized;
mod common;
mod delete;
mod meta_args;
mod peer_mcp;
mod render;
mod save;
mod scope;
mod search;
mod update;

pub use categorized::{LIST_MEMORIES_TOOL_NAME, SEARCH_MEMORIES_TOOL_NAME, STORE_MEMORY_TOOL_NAME};
pub use common::{MAX_CONTENT_BYTES, MAX_SEARCH_TOP_K, audited_call_key, fetch_k, readable};
pub(crate) use common::{MemoryHandle, MemoryState, is_blank, map_error, provenance};
pub use peer_mcp::{GET_CONTEXT_TOOL_NAME, LIST_MEMORY_TOOL_NAME, PUT_MEMORY_TOOL_NAME};
pub(crate) use render::shows_unconfirmed;
pub use scope::{Scope as SearchScope, scope_sessions};
pub use search::query_time;

use types::MemoryDialect;

use crate::spec::ToolSpec;

pub const MEMORY_SEARCH_TOOL_NAME: &str = types::memory_ops::SEARCH;
pub const MEMORY_SAVE_TOOL_NAME: &str = types::memory_ops::SAVE;
pub const MEMORY_UPDATE_TOOL_NAME: &str = types::memory_ops::UPDATE;
pub const MEMORY_DELETE_TOOL_NAME: &str = types::memory_ops::DELETE;

/// The notes dialect: `memory_search`, `memory_save`, `memory_update`, `memory_delete`.
static NOTES: [&ToolSpec<MemoryState>; 4] =
    [&search::SPEC, &save::SPEC, &update::SPEC, &delete::SPEC];

/// The categorized dialect: `store_memory`, `search_memories`, `list_memories`.
static CATEGORIZED: [&ToolSpec<MemoryState>; 3] = [
    &categorized::STORE,
    &categorized::SEARCH,
    &categorized::LIST,
];

/// The MCP peer's `listMemory`, `getContext`, `putMemory`.
pub(crate) static PEER_MCP: [&ToolSpec<MemoryState>; 3] =
    [&peer_mcp::LIST, &peer_mcp::CONTEXT, &peer_mcp::PUT];

/// The table of a dialect's tools (the files dialect's one `memory` tool is not a table row).
pub(crate) fn dialect_specs(dialect: MemoryDialect) -> &'static [&'static ToolSpec<MemoryState>] {
    match dialect {
        MemoryDialect::Notes => &NOTES,
        MemoryDialect::Categorized => &CATEGORIZED,
        MemoryDialect::Files => &[],
    }
}
