//! The list of built-in tools. Every tool the platform ships is created here, so tests and the
//! operator catalogue (`runner tools --json`) can iterate over all of them.

use std::sync::Arc;

use memory::MemoryRetrieval;
use types::{MemoryDialect, MemoryDialects, RetrievalConfig};

use crate::Tool;
use crate::files::{FileDelete, FileEdit, FileList, FileRead, FileSearch, FileWrite};
use crate::memory_tools::memory_tools_of;
use crate::shell::ShellExec;

/// The six file tools.
pub fn file_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(FileRead),
        Arc::new(FileWrite),
        Arc::new(FileEdit),
        Arc::new(FileDelete),
        Arc::new(FileList),
        Arc::new(FileSearch),
    ]
}

/// Every built-in tool: the file tools, the four memory tools (which, given no store, answer
/// that memory is not configured) and `shell_exec` (which, with no shell daemon running for the
/// user, says so and runs nothing). The agent's registry is built with
/// [`crate::ToolRegistry::with_file_tools`] plus [`crate::register_memory_tools`], which adds the
/// memory tools only when a store is available.
pub fn builtin_tools(
    memory: Option<Arc<dyn MemoryRetrieval>>,
    retrieval: &RetrievalConfig,
) -> Vec<Arc<dyn Tool>> {
    builtin_tools_for(MemoryDialect::Notes, memory, retrieval)
}

/// [`builtin_tools`] with the memory tools of `dialects` (`[tools] memory` in `agent.toml`: one
/// dialect or several).
pub fn builtin_tools_for(
    dialects: impl Into<MemoryDialects>,
    memory: Option<Arc<dyn MemoryRetrieval>>,
    retrieval: &RetrievalConfig,
) -> Vec<Arc<dyn Tool>> {
    let mut tools = file_tools();
    tools.extend(memory_tools_of(dialects.into(), memory, retrieval));
    tools.push(Arc::new(ShellExec));
    tools
}
