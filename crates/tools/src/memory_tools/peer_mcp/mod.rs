//! The MCP peer's memory tools (`spec/peer-mcp-memory-adr.md`): `listMemory`, `getContext`,
//! `putMemory`, with exactly the ADR's input and output schemas.
//!
//! Namespaces are labels inside the calling user's own store (`memory:{user_id}`), never a path
//! to another store; a keyed value is a note carrying its namespace and key, so `memory_search`
//! finds it, and `ttl_seconds` is the note's expiry. `getContext` reads the caller's session (and
//! the token usage the runtime records) from the same store. Identity comes only from the per-call [`types::ToolExecutionContext`].

mod context;
mod list;
mod put;

pub(crate) use context::SPEC as CONTEXT;
pub(crate) use list::SPEC as LIST;
pub(crate) use put::SPEC as PUT;

pub const LIST_MEMORY_TOOL_NAME: &str = types::memory_ops::LIST_MEMORY;
pub const GET_CONTEXT_TOOL_NAME: &str = types::memory_ops::GET_CONTEXT;
pub const PUT_MEMORY_TOOL_NAME: &str = types::memory_ops::PUT_MEMORY;

/// What a keyed call touches, for governance: the `namespace` argument and the key (or prefix)
/// in `key_field`.
pub(crate) fn keyed_access(
    operation: types::Operation,
    args: &serde_json::Value,
    key_field: &str,
) -> crate::MemoryAccess {
    let text = |f: &str| args.get(f).and_then(serde_json::Value::as_str);
    crate::MemoryAccess {
        operation,
        namespace: text("namespace").unwrap_or_default().to_owned(),
        ..crate::MemoryAccess::notes_read()
    }
    .with_key(text(key_field))
}

/// `schema` (as the ADR writes it, open to other properties) closed to unknown arguments, for
/// validation: a misspelt argument is an error, not silently ignored.
pub(crate) fn closed(mut schema: serde_json::Value) -> serde_json::Value {
    schema["additionalProperties"] = serde_json::Value::Bool(false);
    schema
}
