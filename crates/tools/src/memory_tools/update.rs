//! `memory_update`: replace a saved note's text, keeping its id.

use super::MEMORY_UPDATE_TOOL_NAME;
use super::common::{
    audited_call_key, content_arg, is_blank, map_error, note_id_arg, provenance, receipt_message,
    string_arg,
};
use super::meta_args::{add_organising_properties, ttl_arg, update_patch};
use super::render::SEARCH_BUDGET;
use crate::MemoryAccess;
use crate::ToolError;
use crate::memory_tools::MemoryState;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};
use memory::MemoryError;
use serde_json::Value;

pub(crate) static SPEC: ToolSpec<MemoryState> = ToolSpec::new(
    MEMORY_UPDATE_TOOL_NAME,
    DESCRIPTION,
    update_parameters,
    update_access,
    update,
)
.writes("call memory_search to see the note's current text before updating it again");

const DESCRIPTION: &str = "Update a previously saved note with new content. Use this when the user corrects or \
     changes previously stored information (e.g., a new preferred name, an updated \
     preference). First use memory_search to find the note: it returns the note's whole text \
     and its version. Then call this with the note_id, that version, and the complete new \
     text. The new content replaces the old text entirely, so keep every part of the old text \
     that is still true; the note_id stays the same. A search result marked \"partial\" has \
     no version: search again more narrowly to see that note whole first. The update is \
     refused when the version is not the note's current one. Optionally change the note's \
     category, tags (replacing them) or expiry at the same time.";

fn update_parameters() -> Value {
    let mut schema = serde_json::json!({
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
                "description": "New content that replaces the existing note entirely. At most 8192 bytes."
            },
            "version": {
                "type": "string",
                "minLength": 1,
                "description": "The note's version, from the memory_search result that showed its whole text (or from memory_save / memory_update)."
            }
        },
        "required": ["note_id", "content", "version"],
        "additionalProperties": false
    });
    add_organising_properties(&mut schema);
    schema
}

fn update_access(args: &Value) -> MemoryAccess {
    let content = args.get("content").and_then(serde_json::Value::as_str);
    // An update that leaves the note without text removes what it said: a delete.
    let access = if content.is_some_and(is_blank) {
        crate::MemoryAccess {
            text_fields: &["content", "tags"],
            ..crate::MemoryAccess::notes_delete()
        }
    } else {
        crate::MemoryAccess::notes_write(&["content", "tags"])
    };
    let access = match ttl_arg(args) {
        Some(ttl) => access.with_ttl(Some(ttl)),
        None => access.keeping_lifetime(),
    };
    access.with_key(args.get("note_id").and_then(serde_json::Value::as_str))
}

fn update(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        let memory = state.store()?;
        let note_id = note_id_arg(args)?;
        op.note(&note_id);
        let content = content_arg(args)?;
        let version = string_arg(args, "version")?;
        let mut patch = update_patch(args)?;
        // New text written after untrusted input makes the note unconfirmed again.
        if ctx.untrusted_input.is_some() {
            patch.provenance = Some(provenance(ctx, memory::Origin::Model));
        }
        let key = audited_call_key(ctx, MEMORY_UPDATE_TOOL_NAME, args);
        let receipt = memory
            .update_note_patched(
                &ctx.user_id,
                key.as_ref(),
                &note_id,
                content,
                version,
                patch,
            )
            .await;
        let receipt = match receipt {
            Ok(receipt) => receipt,
            Err(MemoryError::VersionMismatch(id)) if too_long_to_show(memory, ctx, &id).await => {
                return Err(ToolError::execution(format!(
                    "note {id} was not replaced: it is too long to be shown whole in a search \
                     result, so it cannot be replaced with memory_update (you would lose the \
                     parts you were not shown). Save the correction as a new note with \
                     memory_save instead; nothing was changed"
                )));
            }
            Err(e) => return Err(map_error(e, Some(&note_id))),
        };
        super::common::record_change(ctx, &receipt, |note_id| types::NoteChange::Updated {
            note_id,
            text: content.trim().to_owned(),
            path: None,
        });
        Ok(receipt_message(
            &receipt,
            "Updated. The note keeps the same note_id; use the new version for a next update.",
        ))
    })
}

/// True when the note is longer than one search result can show whole.
async fn too_long_to_show(
    memory: &dyn memory::MemoryRetrieval,
    ctx: &types::ToolExecutionContext,
    id: &types::NoteId,
) -> bool {
    match memory.get_note(&ctx.user_id, id).await {
        Ok(note) => serde_json::Value::from(note.content).to_string().len() + 400 > SEARCH_BUDGET,
        Err(_) => false,
    }
}
