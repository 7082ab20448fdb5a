//! The list of built-in tools. Every tool the platform ships is created here, so tests can iterate
//! over all of them.

use std::sync::Arc;

use crate::Tool;
use crate::files::{FileDelete, FileEdit, FileList, FileRead, FileSearch, FileWrite};

/// Every built-in tool: the six file tools (memory and shell tools are appended here as they land).
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(FileRead),
        Arc::new(FileWrite),
        Arc::new(FileEdit),
        Arc::new(FileDelete),
        Arc::new(FileList),
        Arc::new(FileSearch),
    ]
}
