//! `memory_delete`: forget a saved note.

use std::time::Duration;

use async_trait::async_trait;
use types::{SafetyTier, ToolExecutionContext};

use super::MEMORY_DELETE_TOOL_NAME;
use super::common::{MemoryHandle, OpSpan, json_message, map_error, note_id_arg, store};
use crate::{Tool, ToolError};

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
            memory
                .delete_note(&ctx.user_id, &note_id)
                .await
                .map_err(|e| map_error(e, Some(&note_id)))?;
            Ok(json_message(
                &note_id,
                "Deleted. The note is gone from memory.",
            ))
        })
        .await
    }
}
