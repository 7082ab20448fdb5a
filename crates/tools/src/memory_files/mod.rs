//! The files dialect: one `memory` tool over a `/memories` tree (Anthropic's `memory_20250818`).
//!
//! Commands `view`, `create`, `str_replace`, `insert`, `delete`, `rename` (Anthropic's) and
//! `update` (replace a file's text). A file is a note of the user's namespace with a path, so
//! `memory_search` finds it and it shares the store's isolation, atomicity and deployment modes;
//! it is never a real file the shell could reach. Each command is one store transaction; an edit
//! (`str_replace`, `insert`) writes only if the file still has the text it read, so of two
//! concurrent edits the second sees the first's result or fails cleanly. Each command runs in a
//! `tracing` span `tool.memory.{command}` recording command, path, outcome and duration.

mod commands;
mod path;
mod record;
mod text;

use std::time::{Duration, Instant};

use async_trait::async_trait;
use memory::{MEMORIES_ROOT, MemoryStore, PathExpect, PathMove, PathPut};
use serde_json::Value;
use tracing::Instrument;
use types::{SafetyTier, ToolExecutionContext};

pub use path::{MAX_DEPTH, MAX_NAME_BYTES, MAX_PATH_BYTES, canonical, canonical_new};
pub use text::human_size;

use crate::memory_tools::{MemoryHandle, map_error};
use crate::{Interruption, Tool, ToolError};
use record::{written, wrote};

/// The name of the tool, as Anthropic's models know it.
pub const MEMORY_FILES_TOOL_NAME: &str = types::memory_ops::FILES;

const COMMANDS: [&str; 7] = [
    "view",
    "create",
    "str_replace",
    "insert",
    "delete",
    "rename",
    "update",
];

/// The first line of the view of a file the user has not confirmed.
const UNCONFIRMED_FILE: &str =
    "(unconfirmed: written after untrusted input; not confirmed by the user)";

/// The line before the text the user last confirmed, after the view of a file changed since
/// after untrusted input.
const CONFIRMED_BEFORE: &str = "(as the user last confirmed it:)";

/// The `memory` tool.
#[derive(Debug, Clone)]
pub struct MemoryFiles {
    memory: MemoryHandle,
}

impl MemoryFiles {
    pub(crate) fn new(memory: MemoryHandle) -> Self {
        Self { memory }
    }

    fn store(&self) -> Result<&MemoryStore, ToolError> {
        self.memory
            .as_deref()
            .and_then(|m| m.files())
            .ok_or_else(|| {
                ToolError::execution(
                    "memory is not configured for this agent ([memory] is disabled or failed to \
                     open), so /memories cannot be read or written",
                )
            })
    }
}

fn arg<'a>(args: &'a Value, field: &str, command: &str) -> Result<&'a str, ToolError> {
    args.get(field).and_then(Value::as_str).ok_or_else(|| {
        ToolError::invalid(
            field,
            format!("given (a string) for the `{command}` command"),
        )
    })
}

fn int_arg(args: &Value, field: &str, command: &str) -> Result<i64, ToolError> {
    args.get(field).and_then(Value::as_i64).ok_or_else(|| {
        ToolError::invalid(
            field,
            format!("given (an integer) for the `{command}` command"),
        )
    })
}

fn fail(message: String) -> ToolError {
    ToolError::execution(message)
}

#[async_trait]
impl Tool for MemoryFiles {
    fn name(&self) -> &str {
        MEMORY_FILES_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Your persistent memory directory /memories: files that last across conversations. \
         ALWAYS view /memories first, before starting a task, to recall what you learned \
         earlier; record progress, decisions and facts about the user as you go, keeping files \
         short and organised. Commands: view (a directory, 2 levels deep with sizes, or a file \
         with line numbers; view_range [start, end], -1 = to the end), create (path, file_text; \
         not over an existing file), str_replace (path, old_str that occurs exactly once, \
         new_str), insert (path, insert_line: 0 = top, insert_text), delete (a file or a \
         directory), rename (old_path, new_path), update (path, file_text: replace the whole \
         file). Every path starts with /memories. Never store secrets."
    }

    fn parameters(&self) -> Value {
        let text = |d: &str| serde_json::json!({"type": "string", "description": d});
        serde_json::json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "enum": COMMANDS},
                "path": text("A path under /memories, e.g. /memories/notes.md"),
                "view_range": {
                    "type": "array", "items": {"type": "integer"},
                    "description": "view: [start, end] lines, 1-based; end -1 = to the end"
                },
                "file_text": text("create, update: the whole text of the file"),
                "old_str": text("str_replace: the text to replace; must occur exactly once"),
                "new_str": text("str_replace: the replacement (empty to delete old_str)"),
                "insert_line": {"type": "integer", "description": "insert: the line after which to insert (0 = top)"},
                "insert_text": text("insert: the text to insert"),
                "old_path": text("rename: the file or directory to move"),
                "new_path": text("rename: where to move it")
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }

    fn interruption(&self) -> Interruption {
        crate::spec::settle("view the path to see whether the change was made")
    }

    /// Governed like every memory tool: `view` reads, every other command writes (its free text
    /// screened for secrets and PII), keyed in the audit log by the path it names.
    fn untrusted_in(&self, output: &str) -> Option<types::UntrustedInput> {
        output
            .starts_with(UNCONFIRMED_FILE)
            .then_some(types::UntrustedInput::Note)
    }

    fn memory_access(&self, args: &Value) -> Option<crate::MemoryAccess> {
        let path = args
            .get("path")
            .or_else(|| args.get("old_path"))
            .and_then(Value::as_str);
        const TEXT: &[&str] = &["file_text", "new_str", "insert_text"];
        let blank = |field: &str| {
            args.get(field)
                .and_then(Value::as_str)
                .is_some_and(crate::memory_tools::is_blank)
        };
        // Classes as the notes tools have them: `create` is `memory_save`, `delete` is
        // `memory_delete`, an edit is `memory_update` (keeping the note's lifetime), and
        // replacing a file's text with nothing is a delete.
        let access = match args.get("command").and_then(Value::as_str) {
            Some("view") => crate::MemoryAccess::notes_read(),
            Some("delete") => crate::MemoryAccess::notes_delete(),
            Some("update") if blank("file_text") => crate::MemoryAccess {
                text_fields: TEXT,
                ..crate::MemoryAccess::notes_delete()
            },
            Some("create") => crate::MemoryAccess::notes_write(TEXT),
            _ => crate::MemoryAccess::notes_write(TEXT).keeping_lifetime(),
        };
        Some(access.with_key(path))
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // The `/memories` path is note data: it is never logged.
        let span = command_span(command, ctx);
        let started = Instant::now();
        let result = self.run(command, args, ctx).instrument(span.clone()).await;
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        span.record("duration_us", micros);
        span.record(
            "outcome",
            result.as_ref().map_or_else(ToolError::kind, |_| "ok"),
        );
        let _entered = span.enter();
        match &result {
            Ok(_) => tracing::info!(duration_us = micros, "memory file command done"),
            // Its message may quote the `/memories` path: only the kind at info.
            Err(e) => {
                tracing::info!(
                    duration_us = micros,
                    kind = e.kind(),
                    "memory file command refused"
                );
                tracing::debug!(error = %e, "memory file command refusal");
            }
        }
        result
    }
}

/// The span of one command: `tool.memory.{command}`.
fn command_span(command: &str, ctx: &ToolExecutionContext) -> tracing::Span {
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!(
                $name,
                user = %ctx.user_id,
                session = %ctx.session_id,
                outcome = tracing::field::Empty,
                duration_us = tracing::field::Empty,
            )
        };
    }
    match command {
        "view" => span!("tool.memory.view"),
        "create" => span!("tool.memory.create"),
        "str_replace" => span!("tool.memory.str_replace"),
        "insert" => span!("tool.memory.insert"),
        "delete" => span!("tool.memory.delete"),
        "rename" => span!("tool.memory.rename"),
        "update" => span!("tool.memory.update"),
        _ => span!("tool.memory.unknown"),
    }
}

impl MemoryFiles {
    async fn run(
        &self,
        command: &str,
        args: &Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        may_read(ctx)?;
        let user = &ctx.user_id;
        if command == "rename" {
            let (old, new) = (
                arg(args, "old_path", command)?,
                arg(args, "new_path", command)?,
            );
            let (from, to) = (canonical(old)?, canonical_new(new)?);
            return self.rename(ctx, (old, &from), (new, &to)).await;
        }
        let shown = arg(args, "path", command)?;
        let path = if command == "create" {
            canonical_new(shown)?
        } else {
            canonical(shown)?
        };
        let store = self.store()?;
        let db = |e| map_error(e, None);
        match command {
            "view" => commands::view(store, ctx, args, shown, &path).await,
            "create" | "update" => {
                let create = command == "create";
                let expect = match create {
                    true => PathExpect::Absent,
                    false => PathExpect::Present,
                };
                let body = arg(args, "file_text", command)?;
                // Emptying a file removes what it said: the `delete` command's, as for the edits.
                if !create && crate::memory_tools::is_blank(body) {
                    return Err(fail(format!(
                        "No change was made: the new text of {shown} is empty; to remove the \
                         file, use the delete command"
                    )));
                }
                let put = store
                    .files()
                    .put_file(user, &path, body, expect, ctx.audit.as_ref(), written(ctx))
                    .await
                    .map_err(db)?;
                match (put, create) {
                    (PathPut::Written(file), true) => {
                        wrote(ctx, &file, true);
                        Ok(format!("File created successfully at: {shown}"))
                    }
                    (PathPut::Written(file), false) => {
                        wrote(ctx, &file, false);
                        Ok(format!("The file {shown} has been updated."))
                    }
                    (PathPut::UnderFile(file), true) => Err(under_file(shown, &file)),
                    (_, true) => Err(fail(format!("File {shown} already exists"))),
                    (_, false) => Err(fail(text::not_found(shown))),
                }
            }
            "str_replace" | "insert" => {
                commands::edit(store, ctx, args, command, shown, &path).await
            }
            "delete" => {
                if path == MEMORIES_ROOT {
                    return Err(fail("Cannot delete the /memories directory itself".into()));
                }
                // The files about to go, for the call's undo lines (each restorable by its id).
                let doomed = store.files().file_tree(user, &path).await.map_err(db)?;
                match store
                    .files()
                    .delete_path(user, &path, ctx.audit.as_ref())
                    .await
                    .map_err(db)?
                {
                    0 => Err(fail(text::not_found(shown))),
                    _ => {
                        for entry in doomed {
                            ctx.changes.record(types::NoteChange::Deleted {
                                note_id: entry.note_id.to_string(),
                                path: Some(entry.path),
                            });
                        }
                        Ok(format!("Successfully deleted {shown}"))
                    }
                }
            }
            other => Err(ToolError::invalid(
                "command",
                format!("one of {}, got {other:?}", COMMANDS.join(", ")),
            )),
        }
    }

    async fn rename(
        &self,
        ctx: &ToolExecutionContext,
        (old, from): (&str, &str),
        (new, to): (&str, &str),
    ) -> Result<String, ToolError> {
        if from == MEMORIES_ROOT {
            return Err(fail("Cannot rename the /memories directory itself".into()));
        }
        if to == MEMORIES_ROOT {
            return Err(fail(format!("The destination {new} already exists")));
        }
        if to == from || to.starts_with(&format!("{from}/")) {
            return Err(fail(format!("Cannot move {old} into itself ({new})")));
        }
        let store = self.store()?;
        match store
            .files()
            .move_path(&ctx.user_id, from, to, ctx.audit.as_ref())
            .await
            .map_err(|e| map_error(e, None))?
        {
            PathMove::Moved(_) => Ok(format!("Successfully renamed {old} to {new}")),
            PathMove::Missing => Err(fail(text::not_found(old))),
            PathMove::Exists => Err(fail(format!("The destination {new} already exists"))),
            PathMove::UnderFile(file) => Err(under_file(new, &file)),
        }
    }
}

/// Every command on a path tells whether the path exists (an edit, what the file says): a
/// caller that may write but not read gets one answer, whatever is stored.
fn may_read(ctx: &ToolExecutionContext) -> Result<(), ToolError> {
    if ctx.reads.permits(crate::governance::NOTES_NAMESPACE) {
        return Ok(());
    }
    Err(ToolError::governed(
        crate::governance::PERMISSION_DENIED,
        "This client may write memory but not read it, and every `memory` command on a path \
         shows whether the path exists; use memory_save to add a note"
            .to_owned(),
        serde_json::json!({"namespace": crate::governance::NOTES_NAMESPACE, "operation": "read"}),
    ))
}

/// Search results (`{"results": [{"note_id": ...}]}`) with the `path` of each note that is a
/// file of the `/memories` tree. Left as they are when paths cannot be read.
pub(crate) async fn with_paths(
    memory: &dyn memory::MemoryRetrieval,
    user: &types::UserId,
    results: String,
) -> String {
    let Some(store) = memory.files() else {
        return results;
    };
    let Ok(mut doc) = serde_json::from_str::<Value>(&results) else {
        return results;
    };
    let Some(items) = doc.get_mut("results").and_then(Value::as_array_mut) else {
        return results;
    };
    let ids: Vec<types::NoteId> = items
        .iter()
        .filter_map(|h| h.get("note_id")?.as_str())
        .filter_map(|id| types::NoteId::parse(id).ok())
        .collect();
    let paths = match store.files().paths_of(user, &ids).await {
        Ok(paths) if !paths.is_empty() => paths,
        Ok(_) => return results,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the paths of memory files");
            return results;
        }
    };
    for item in items.iter_mut() {
        let id = item
            .get("note_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some((_, path)) = paths.iter().find(|(n, _)| n.as_str() == id) {
            item["path"] = Value::String(path.clone());
        }
    }
    doc.to_string()
}

fn under_file(path: &str, file: &str) -> ToolError {
    fail(format!(
        "Cannot create {path}: {file} is a file, not a directory. Choose another path."
    ))
}
