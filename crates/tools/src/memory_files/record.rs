//! What a `memory` command records besides the file: the provenance of the text it writes, and
//! the change it made, for the client's undo line.

use types::{NoteChange, ToolExecutionContext};

/// The provenance of text this call writes to a file: as a `memory_save` of the model's would
/// have (unconfirmed after untrusted input, the surface's origin otherwise).
pub(crate) fn written(ctx: &ToolExecutionContext) -> Option<memory::Provenance> {
    Some(crate::memory_tools::provenance(ctx, memory::Origin::Model))
}

/// Records a file this call wrote, for the client's undo line (see [`types::NoteChanges`]).
pub(crate) fn wrote(ctx: &ToolExecutionContext, file: &memory::PathFile, created: bool) {
    let (note_id, text, path) = (
        file.note_id.to_string(),
        file.content.clone(),
        Some(file.path.clone()),
    );
    ctx.changes.record(match created {
        true => NoteChange::Saved {
            note_id,
            text,
            path,
        },
        false => NoteChange::Updated {
            note_id,
            text,
            path,
        },
    });
}
