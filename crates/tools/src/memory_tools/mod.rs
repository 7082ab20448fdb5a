//! The four memory tools: `memory_search`, `memory_save`, `memory_update`, `memory_delete`.
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

pub use categorized::{
    LIST_MEMORIES_TOOL_NAME, ListMemories, SEARCH_MEMORIES_TOOL_NAME, STORE_MEMORY_TOOL_NAME,
    SearchMemories, StoreMemory,
};
pub use common::{MAX_CONTENT_BYTES, MAX_SEARCH_TOP_K, audited_call_key, fetch_k, readable};
pub(crate) use common::{MemoryHandle, is_blank, map_error, provenance, settle};
pub use delete::MemoryDelete;
pub use peer_mcp::{
    GET_CONTEXT_TOOL_NAME, GetContext, LIST_MEMORY_TOOL_NAME, ListMemory, PUT_MEMORY_TOOL_NAME,
    PutMemory, peer_mcp_tools,
};
pub use save::MemorySave;
pub use search::MemorySearch;
pub use update::MemoryUpdate;

use std::sync::Arc;

use memory::MemoryRetrieval;
use types::{MemoryDialect, MemoryDialects, RetrievalConfig};

use crate::memory_files::MemoryFiles;
use crate::{Tool, ToolError, ToolRegistry};

pub const MEMORY_SEARCH_TOOL_NAME: &str = types::memory_ops::SEARCH;
pub const MEMORY_SAVE_TOOL_NAME: &str = types::memory_ops::SAVE;
pub const MEMORY_UPDATE_TOOL_NAME: &str = types::memory_ops::UPDATE;
pub const MEMORY_DELETE_TOOL_NAME: &str = types::memory_ops::DELETE;

/// The four memory tools over `memory` (or, with `None`, tools that explain memory is not
/// configured when called).
pub fn memory_tools(
    memory: Option<Arc<dyn MemoryRetrieval>>,
    retrieval: &RetrievalConfig,
) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(MemorySearch::new(memory.clone(), retrieval.clone())),
        Arc::new(MemorySave::new(memory.clone())),
        Arc::new(MemoryUpdate::new(memory.clone())),
        Arc::new(MemoryDelete::new(memory)),
    ]
}

/// The memory tools of `dialect`: the four notes tools, the categorized dialect's three
/// (`store_memory`, `search_memories`, `list_memories`), or the files dialect's `memory` tool,
/// all over the same notes.
pub fn memory_tools_for(
    dialect: MemoryDialect,
    memory: Option<Arc<dyn MemoryRetrieval>>,
    retrieval: &RetrievalConfig,
) -> Vec<Arc<dyn Tool>> {
    match dialect {
        MemoryDialect::Notes => memory_tools(memory, retrieval),
        MemoryDialect::Categorized => vec![
            Arc::new(StoreMemory::new(memory.clone())),
            Arc::new(SearchMemories::new(memory.clone(), retrieval.clone())),
            Arc::new(ListMemories::new(memory)),
        ],
        MemoryDialect::Files => vec![Arc::new(MemoryFiles::new(memory))],
    }
}

/// The memory tools of every dialect of `dialects` (their names never overlap).
pub fn memory_tools_of(
    dialects: MemoryDialects,
    memory: Option<Arc<dyn MemoryRetrieval>>,
    retrieval: &RetrievalConfig,
) -> Vec<Arc<dyn Tool>> {
    dialects
        .iter()
        .flat_map(|d| memory_tools_for(d, memory.clone(), retrieval))
        .collect()
}

/// Registers the four memory tools when a store is available, and none otherwise. Returns how
/// many were registered.
pub fn register_memory_tools(
    registry: &mut ToolRegistry,
    memory: Option<Arc<dyn MemoryRetrieval>>,
    retrieval: &RetrievalConfig,
) -> Result<usize, ToolError> {
    if memory.is_none() {
        return Ok(0);
    }
    let tools = memory_tools(memory, retrieval);
    let n = tools.len();
    for tool in tools {
        registry.register(tool)?;
    }
    Ok(n)
}
