//! `memory_delete`: forget a saved note.

use std::time::Duration;

use async_trait::async_trait;
use types::{NoteChange, SafetyTier, ToolExecutionContext};

use super::MEMORY_DELETE_TOOL_NAME;
use super::common::{
    MemoryHandle, OpSpan, audited_call_key, map_error, note_id_arg, receipt_message, record_change,
    settle, store,
};
use crate::{Interruption, OutputFormat, Tool, ToolError};

#[derive(Debug, Clone)]
pub struct MemoryDelete {
    memory: MemoryHandle,
}

impl MemoryDelete {
    pub(crate) fn new(memory: MemoryHandle) -> Self {
        Self { memory }
    }
}

#[async_trait]
impl Tool for MemoryDelete {
    fn name(&self) -> &str {
        MEMORY_DELETE_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Delete a previously saved note from memory. Use this when the user asks you to forget \
         specific information. First use memory_search to find the note and its note_id, then \
         call this with the note_id to remove it. Only saved notes can be deleted; conversation \
         results have no note_id."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "note_id": {
                    "type": "string",
                    "description": "ID of the note to delete (from memory_search results), like note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f."
                }
            },
            "required": ["note_id"],
            "additionalProperties": false
        })
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }

    fn output_format(&self) -> OutputFormat {
        OutputFormat::Json
    }

    fn interruption(&self) -> Interruption {
        settle("call memory_search to see whether the note is still there before deleting again")
    }

    fn memory_access(&self, args: &serde_json::Value) -> Option<crate::MemoryAccess> {
        Some(
            crate::MemoryAccess::notes_delete()
                .with_key(args.get("note_id").and_then(serde_json::Value::as_str)),
        )
    }

    async fn execute(
        &self,
        args: &serde_json::Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        let op = OpSpan::start(MEMORY_DELETE_TOOL_NAME, ctx);
        op.run(async {
            let memory = store(&self.memory)?;
            let note_id = note_id_arg(args)?;
            op.note(&note_id);
            let key = audited_call_key(ctx, MEMORY_DELETE_TOOL_NAME, args);
            let receipt = memory
                .delete_note_once(&ctx.user_id, key.as_ref(), &note_id)
                .await
                .map_err(|e| map_error(e, Some(&note_id)))?;
            record_change(ctx, &receipt, |note_id| NoteChange::Deleted {
                note_id,
                path: None,
            });
            Ok(receipt_message(
                &receipt,
                "Deleted. The note is gone from memory.",
            ))
        })
        .await
    }
}
