//! `memory_delete`: forget a saved note.

use super::MEMORY_DELETE_TOOL_NAME;
use super::common::{audited_call_key, map_error, note_id_arg, receipt_message};

use crate::MemoryAccess;
use crate::memory_tools::MemoryState;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};
use serde_json::Value;

pub(crate) static SPEC: ToolSpec<MemoryState> = ToolSpec::new(
    MEMORY_DELETE_TOOL_NAME,
    DESCRIPTION,
    delete_parameters,
    delete_access,
    delete,
)
.writes("call memory_search to see whether the note is still there before deleting again");

const DESCRIPTION: &str = "Delete a previously saved note from memory. Use this when the user asks you to forget \
     specific information. First use memory_search to find the note and its note_id, then \
     call this with the note_id to remove it. Only saved notes can be deleted; conversation \
     results have no note_id.";

fn delete_parameters() -> Value {
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

fn delete_access(args: &Value) -> MemoryAccess {
    crate::MemoryAccess::notes_delete()
        .with_key(args.get("note_id").and_then(serde_json::Value::as_str))
}

fn delete(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        let memory = state.store()?;
        let note_id = note_id_arg(args)?;
        op.note(&note_id);
        let key = audited_call_key(ctx, MEMORY_DELETE_TOOL_NAME, args);
        let receipt = memory
            .delete_note_once(&ctx.user_id, key.as_ref(), &note_id)
            .await
            .map_err(|e| map_error(e, Some(&note_id)))?;
        super::common::record_change(ctx, &receipt, |note_id| types::NoteChange::Deleted {
            note_id,
            path: None,
        });
        Ok(receipt_message(
            &receipt,
            "Deleted. The note is gone from memory.",
        ))
    })
}
