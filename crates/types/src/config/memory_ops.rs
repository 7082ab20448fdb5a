//! The one table of governed memory operation names (DESIGN §7): the same name for the same
//! operation on every surface — the agent's tools, the `/memories` files tool, MCP, the
//! gateway's note frames and the CLI — in audit rows, metrics, rate limits
//! (`[governance.rate_limits.tools.<name>]`) and `[governance.tool_permissions.<name>]`, with
//! the operation classes each performs. Rules name classes; a name binds its classes.
//!
//! Names earlier versions used for an operation that has one name now (`restore_note` for
//! `memory_restore`, …) are [`OP_ALIASES`]: still accepted in existing config files, read as
//! the operation's one name.

use super::governance::Operation;

/// Search the user's notes (the `notes` dialect's tool, the gateway's and CLI's search).
pub const SEARCH: &str = "memory_search";
/// Save a note.
pub const SAVE: &str = "memory_save";
/// Replace a note's text.
pub const UPDATE: &str = "memory_update";
/// Delete a note.
pub const DELETE: &str = "memory_delete";
/// A page of the user's notes.
pub const LIST: &str = "memory_list";
/// One note, whole.
pub const GET: &str = "memory_get";
/// Every version of a note.
pub const HISTORY: &str = "memory_history";
/// The deleted notes that can still be restored.
pub const DELETED: &str = "memory_deleted";
/// Restore a deleted note, or an earlier version of a live one.
pub const RESTORE: &str = "memory_restore";
/// Confirm a note saved after untrusted input.
pub const CONFIRM: &str = "memory_confirm";
/// Automatic recall of notes into a turn's context.
pub const RECALL: &str = "memory_recall";
/// Capture's proposals waiting for the user (their texts, and the note each would change).
pub const PENDING: &str = "memory_pending";
/// Reject one of capture's proposals (it is dropped; no note changes).
pub const REJECT: &str = "memory_reject";
/// Import exported notes (CLI).
pub const IMPORT: &str = "memory_import";
/// Import a `/memories` tree (CLI).
pub const IMPORT_TREE: &str = "memory_import_tree";
/// Export notes (CLI).
pub const EXPORT: &str = "memory_export";
/// Export notes as a `/memories` tree (CLI).
pub const EXPORT_TREE: &str = "memory_export_tree";
/// The `files` dialect's one tool (views, writes and deletes under `/memories`).
pub const FILES: &str = "memory";
/// The `categorized` dialect's tools.
pub const STORE_MEMORY: &str = "store_memory";
pub const SEARCH_MEMORIES: &str = "search_memories";
pub const LIST_MEMORIES: &str = "list_memories";
/// The MCP peer's tools.
pub const LIST_MEMORY: &str = "listMemory";
pub const GET_CONTEXT: &str = "getContext";
pub const PUT_MEMORY: &str = "putMemory";

const READ: &[Operation] = &[Operation::Read];
const WRITE: &[Operation] = &[Operation::Write];

/// Every governed operation and the classes it performs.
pub const MEMORY_OPS: &[(&str, &[Operation])] = &[
    (SEARCH, READ),
    (SAVE, WRITE),
    (UPDATE, WRITE),
    (DELETE, &[Operation::Delete]),
    (LIST, READ),
    (GET, READ),
    (HISTORY, READ),
    (DELETED, READ),
    (RESTORE, WRITE),
    (CONFIRM, WRITE),
    (RECALL, READ),
    (PENDING, READ),
    (REJECT, WRITE),
    (IMPORT, WRITE),
    (IMPORT_TREE, WRITE),
    (EXPORT, READ),
    (EXPORT_TREE, READ),
    (
        FILES,
        &[Operation::Read, Operation::Write, Operation::Delete],
    ),
    (STORE_MEMORY, WRITE),
    (SEARCH_MEMORIES, READ),
    (LIST_MEMORIES, READ),
    (LIST_MEMORY, READ),
    (GET_CONTEXT, READ),
    (PUT_MEMORY, WRITE),
];

/// Old names → the operation's one name. Accepted in `[governance.tool_permissions]` and
/// `[governance.rate_limits.tools]` of existing configs; never used in audit rows or metrics.
pub const OP_ALIASES: &[(&str, &str)] = &[
    ("list_notes", LIST),
    ("search_notes", SEARCH),
    ("get_note", GET),
    ("note_history", HISTORY),
    ("list_deleted_notes", DELETED),
    ("restore_note", RESTORE),
    ("undo_note", RESTORE),
    ("confirm_note", CONFIRM),
    ("update_note", UPDATE),
    ("delete_note", DELETE),
];

/// The one name of the operation `name` names (itself, or what an old name stands for); `None`
/// for a name that is no governed operation.
pub fn op_name(name: &str) -> Option<&'static str> {
    MEMORY_OPS
        .iter()
        .map(|(n, _)| *n)
        .find(|n| *n == name)
        .or_else(|| {
            OP_ALIASES
                .iter()
                .find(|(old, _)| *old == name)
                .map(|(_, n)| *n)
        })
}

/// The operation classes a governed operation name (or an old name of one) performs: the table
/// that maps a `[governance.tool_permissions.<name>]` entry to the classes it rules. `None` for
/// a name that is no governed operation.
pub fn tool_classes(name: &str) -> Option<&'static [Operation]> {
    let name = op_name(name)?;
    MEMORY_OPS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, classes)| *classes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_name_is_read_as_the_operations_one_name() {
        assert_eq!(op_name("restore_note"), Some(RESTORE));
        assert_eq!(op_name(RESTORE), Some(RESTORE));
        assert_eq!(op_name("memory_sav"), None);
        assert_eq!(tool_classes("restore_note"), Some(WRITE));
        assert_eq!(tool_classes("list_deleted_notes"), Some(READ));
        for (old, name) in OP_ALIASES {
            assert!(
                MEMORY_OPS.iter().any(|(n, _)| n == name),
                "{old} stands for {name}, which is in the table"
            );
            assert!(MEMORY_OPS.iter().all(|(n, _)| n != old), "{old} is no name");
        }
    }
}
