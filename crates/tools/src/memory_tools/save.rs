//! `memory_save`: remember a new natural-language note.

use std::time::Duration;

use async_trait::async_trait;
use types::{SafetyTier, ToolExecutionContext};

use super::MEMORY_SAVE_TOOL_NAME;
use super::common::{
    MemoryHandle, OpSpan, audited_call_key, content_arg, map_error, receipt_message, settle, store,
};
use super::meta_args::{add_organising_properties, save_metadata};
use crate::{Interruption, OutputFormat, Tool, ToolError};

#[derive(Debug, Clone)]
pub struct MemorySave {
    memory: MemoryHandle,
}

impl MemorySave {
    pub(crate) fn new(memory: MemoryHandle) -> Self {
        Self { memory }
    }
}

#[async_trait]
impl Tool for MemorySave {
    fn name(&self) -> &str {
        MEMORY_SAVE_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Save an important piece of information to your persistent memory as a natural language \
         note. Use this proactively whenever the user shares preferences, makes decisions, states \
         facts, or tells you something worth remembering across conversations. Saved notes persist \
         across all sessions and channels. Returns a note_id for future reference. Write one \
         self-contained fact per note (at most 8 KiB). Optionally give a category, a few tags \
         (to find or list related notes later) and, for something true only for a while, \
         expires_in or expires_at."
    }

    fn parameters(&self) -> serde_json::Value {
        let mut schema = serde_json::json!({
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": super::MAX_CONTENT_BYTES,
                    "description": "Natural language text to save (a fact, preference, decision, ...). At most 8192 bytes."
                }
            },
            "required": ["content"],
            "additionalProperties": false
        });
        add_organising_properties(&mut schema);
        schema
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
        settle(
            "call memory_search for the note's text to see whether it was saved before saving it \
             again",
        )
    }

    fn memory_access(&self, _args: &serde_json::Value) -> Option<crate::MemoryAccess> {
        Some(crate::MemoryAccess::notes_write(&["content", "tags"]))
    }

    async fn execute(
        &self,
        args: &serde_json::Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        let op = OpSpan::start(MEMORY_SAVE_TOOL_NAME, ctx);
        op.run(async {
            let memory = store(&self.memory)?;
            let content = content_arg(args)?;
            let key = audited_call_key(ctx, MEMORY_SAVE_TOOL_NAME, args);
            let receipt = memory
                .store_note_once(&ctx.user_id, key.as_ref(), content, save_metadata(args)?)
                .await
                .map_err(|e| map_error(e, None))?;
            op.note(&receipt.note_id);
            Ok(receipt_message(
                &receipt,
                "Saved. Use this note_id with memory_update (with this version) or memory_delete \
                 to change or remove it.",
            ))
        })
        .await
    }
}
