//! `memory_update`: replace a saved note's text, keeping its id.

use std::time::Duration;

use async_trait::async_trait;
use types::{SafetyTier, ToolExecutionContext};

use super::MEMORY_UPDATE_TOOL_NAME;
use super::common::{
    MemoryHandle, OpSpan, content_arg, json_message, map_error, note_id_arg, store,
};
use crate::{Tool, ToolError};

#[derive(Debug, Clone)]
pub struct MemoryUpdate {
    memory: MemoryHandle,
}

impl MemoryUpdate {
    pub(crate) fn new(memory: MemoryHandle) -> Self {
        Self { memory }
    }
}

#[async_trait]
impl Tool for MemoryUpdate {
    fn name(&self) -> &str {
        MEMORY_UPDATE_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Update a previously saved note with new content. Use this when the user corrects or \
         changes previously stored information (e.g., a new preferred name, an updated \
         preference). First use memory_search to find the note and its note_id, then call this \
         with the note_id and the new content. The new content replaces the old text entirely; \
         the note_id stays the same."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "note_id": {
                    "type": "string",
                    "description": "ID of the note to update (from memory_search or memory_save results), like note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f."
                },
                "content": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": super::MAX_CONTENT_BYTES,
                    "description": "New content that replaces the existing note. At most 8192 bytes."
                }
            },
            "required": ["note_id", "content"],
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
        let op = OpSpan::start(MEMORY_UPDATE_TOOL_NAME, ctx);
        op.run(async {
            let memory = store(&self.memory)?;
            let note_id = note_id_arg(args)?;
            op.note(&note_id);
            let content = content_arg(args)?;
            let note = memory
                .update_note(&ctx.user_id, &note_id, content)
                .await
                .map_err(|e| map_error(e, Some(&note_id)))?;
            Ok(json_message(
                &note.note_id,
                "Updated. The note keeps the same note_id.",
            ))
        })
        .await
    }
}
