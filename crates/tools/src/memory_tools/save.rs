//! `memory_save`: remember a new natural-language note.

use memory::{Origin, SaveOutcome, Similar};
use serde_json::{Value, json};

use super::MEMORY_SAVE_TOOL_NAME;
use super::common::{
    MemoryState, audited_call_key, checked_save, content_arg, map_error, provenance,
    receipt_message,
};
use super::meta_args::{add_organising_properties, save_metadata, ttl_arg};
use crate::MemoryAccess;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};

pub(crate) static SPEC: ToolSpec<MemoryState> =
    ToolSpec::new(MEMORY_SAVE_TOOL_NAME, DESCRIPTION, parameters, access, save).writes(
        "call memory_search for the note's text to see whether it was saved before saving it again",
    );

const DESCRIPTION: &str = "Save an important piece of information to your persistent memory as a natural language \
     note. Use this proactively whenever the user shares preferences, makes decisions, states \
     facts, or tells you something worth remembering across conversations. Saved notes persist \
     across all sessions and channels. Returns a note_id for future reference. Write one \
     self-contained fact per note (at most 8 KiB). Optionally give a category, a few tags \
     (to find or list related notes later) and, for something true only for a while, \
     expires_in or expires_at.";

fn parameters() -> Value {
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

fn access(args: &Value) -> MemoryAccess {
    MemoryAccess::notes_write(&["content", "tags"]).with_ttl(ttl_arg(args))
}

fn save(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        let memory = state.store()?;
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
                super::common::record_change(ctx, &receipt, |note_id| types::NoteChange::Saved {
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
            SaveOutcome::Duplicate {
                note_id,
                edit_token,
            } => {
                op.note(&note_id);
                json!({
                    "note_id": note_id,
                    "version": edit_token,
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
}
