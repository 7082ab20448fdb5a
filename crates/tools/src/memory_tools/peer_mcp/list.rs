//! `listMemory`: the keys of a namespace of the user's memory, page by page.

use memory::KeyQuery;
use serde_json::{Value, json};
use types::Operation;

use super::{LIST_MEMORY_TOOL_NAME, closed, keyed_access};
use crate::MemoryAccess;
use crate::memory_tools::MemoryState;
use crate::memory_tools::common::map_error;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};

pub(crate) static SPEC: ToolSpec<MemoryState> = ToolSpec::new(
    LIST_MEMORY_TOOL_NAME,
    DESCRIPTION,
    list_parameters,
    list_access,
    list,
)
.validated_by(closed)
.answers(list_output);

const DESCRIPTION: &str = "Lists memory objects in a namespace with filtering and pagination: the keys stored with \
     putMemory, in key order, optionally only those starting with prefix. Pass the returned \
     cursor to get the next page.";

fn list_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "namespace": {"type": "string", "description": "Memory namespace to list"},
            "prefix": {"type": "string", "description": "Key prefix filter (optional)"},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "default": 50,
                "description": "Maximum number of keys to return"
            },
            "cursor": {"type": "string", "description": "Pagination cursor (optional)"}
        },
        "required": ["namespace"]
    })
}

fn list_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "keys": {
                "type": "array",
                "items": {"type": "string"},
                "description": "List of memory keys"
            },
            "cursor": {
                "type": "string",
                "description": "Next page cursor (null if no more results)"
            },
            "total": {"type": "integer", "description": "Total number of keys in namespace"}
        }
    })
}

fn list_access(args: &Value) -> MemoryAccess {
    keyed_access(Operation::Read, args, "prefix")
}

fn list(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        let memory = state.store()?;
        let text = |field: &str| args.get(field).and_then(Value::as_str).map(str::to_owned);
        let query = KeyQuery {
            namespace: text("namespace").unwrap_or_default(),
            prefix: text("prefix"),
            limit: args
                .get("limit")
                .and_then(Value::as_u64)
                .map_or(50, |n| usize::try_from(n).unwrap_or(100)),
            cursor: text("cursor"),
        };
        let page = memory
            .list_keys(&ctx.user_id, &query)
            .await
            .map_err(|e| map_error(e, None))?;
        op.results(page.keys.len());
        // On the last page the cursor is left out: the ADR types it as a string, so a null
        // would fail clients that validate results against the output schema.
        let mut out = json!({"keys": page.keys, "total": page.total});
        if let Some(cursor) = page.next_cursor {
            out["cursor"] = json!(cursor);
        }
        Ok(out.to_string())
    })
}
