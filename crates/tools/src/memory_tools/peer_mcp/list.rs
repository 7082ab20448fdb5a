//! `listMemory`: the keys of a namespace of the user's memory, page by page.

use std::time::Duration;

use async_trait::async_trait;
use memory::KeyQuery;
use serde_json::{Value, json};
use types::{Operation, SafetyTier, ToolExecutionContext};

use super::{LIST_MEMORY_TOOL_NAME, closed, keyed_access};
use crate::memory_tools::common::{MemoryHandle, OpSpan, map_error, store};
use crate::{MemoryAccess, OutputFormat, Tool, ToolError};

#[derive(Debug, Clone)]
pub struct ListMemory {
    memory: MemoryHandle,
}

impl ListMemory {
    pub(crate) fn new(memory: MemoryHandle) -> Self {
        Self { memory }
    }
}

#[async_trait]
impl Tool for ListMemory {
    fn name(&self) -> &str {
        LIST_MEMORY_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Lists memory objects in a namespace with filtering and pagination: the keys stored with \
         putMemory, in key order, optionally only those starting with prefix. Pass the returned \
         cursor to get the next page."
    }

    fn parameters(&self) -> Value {
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

    fn argument_schema(&self) -> Value {
        closed(self.parameters())
    }

    fn output_schema(&self) -> Option<Value> {
        Some(json!({
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
        }))
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }

    fn output_format(&self) -> OutputFormat {
        OutputFormat::Json
    }

    fn memory_access(&self, args: &Value) -> Option<MemoryAccess> {
        Some(keyed_access(Operation::Read, args, "prefix"))
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let op = OpSpan::start(LIST_MEMORY_TOOL_NAME, ctx);
        op.run(async {
            let memory = store(&self.memory)?;
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
        .await
    }
}
