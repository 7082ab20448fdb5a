//! `memory_save`: remember a new natural-language note.

use std::time::Duration;

use async_trait::async_trait;
use memory::{Origin, SaveOutcome, Similar};
use serde_json::{Value, json};
use types::{NoteChange, SafetyTier, ToolExecutionContext};

use super::MEMORY_SAVE_TOOL_NAME;
use super::common::{
    MemoryHandle, OpSpan, audited_call_key, checked_save, content_arg, map_error, provenance,
    receipt_message, record_change, settle, store,
};
use super::meta_args::{add_organising_properties, save_metadata, ttl_arg};
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
                },
                "source": {
                    "type": "string",
                    "enum": ["user", "inference"],
                    "description": "Optional: \"user\" when the user said this in the conversation, \"inference\" (default) when you concluded it yourself."
                },
                "allow_similar": {
                    "type": "boolean",
                    "description": "Optional: save even though similar notes exist (only when they really say something different). Without it, a save close to an existing note is refused and lists the similar notes, so that you update one instead."
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

    fn memory_access(&self, args: &serde_json::Value) -> Option<crate::MemoryAccess> {
        Some(crate::MemoryAccess::notes_write(&["content", "tags"]).with_ttl(ttl_arg(args)))
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
            let origin = match args.get("source").and_then(Value::as_str) {
                Some("user") => Origin::User,
                _ => Origin::Model,
            };
            let metadata = memory::NoteMetadata {
                provenance: Some(provenance(ctx, origin)),
                ..save_metadata(args)?
            };
            let similar = match args.get("allow_similar").and_then(Value::as_bool) {
                Some(true) => Similar::Allow,
                _ => Similar::Refuse,
            };
            let outcome = checked_save(memory, ctx, key.as_ref(), content, metadata, similar)
                .await
                .map_err(|e| map_error(e, None))?;
            Ok(match outcome {
                SaveOutcome::Saved(receipt) => {
                    op.note(&receipt.note_id);
                    record_change(ctx, &receipt, |note_id| NoteChange::Saved {
                        note_id,
                        text: content.trim().to_owned(),
                        path: None,
                    });
                    receipt_message(
                        &receipt,
                        "Saved. Use this note_id with memory_update (with this version) or \
                         memory_delete to change or remove it.",
                    )
                }
                SaveOutcome::Duplicate { note_id, version } => {
                    op.note(&note_id);
                    json!({
                        "note_id": note_id,
                        "version": version,
                        "saved": false,
                        "message": "Not saved again: this note already says it. Use this note_id \
                                    with memory_update to change it."
                    })
                    .to_string()
                }
                SaveOutcome::Similar(notes) => json!({
                    "saved": false,
                    "similar": notes.iter().map(|n| json!({
                        "note_id": n.note_id,
                        "text": n.preview,
                        "similarity": (f64::from(n.similarity) * 100.0).round() / 100.0,
                    })).collect::<Vec<_>>(),
                    "message": "Not saved: similar notes exist. If one of them says the same \
                                thing, update it with memory_update (memory_search gives its \
                                version); if this is a different fact, call memory_save again \
                                with allow_similar: true."
                })
                .to_string(),
            })
        })
        .await
    }
}
