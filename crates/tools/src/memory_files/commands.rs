//! The `memory` tool's commands that read a file whole: `view`, and the edits (`str_replace`,
//! `insert`) that rewrite it at the version read.

use memory::{MEMORIES_ROOT, MemoryStore, PathExpect, PathPut};
use serde_json::Value;
use types::ToolExecutionContext;

use super::record::{written, wrote};
use super::{CONFIRMED_BEFORE, UNCONFIRMED_FILE, arg, fail, int_arg, text};
use crate::ToolError;
use crate::memory_tools::map_error;

/// `view`: a file's lines (in `view_range`), or a directory's tree.
pub(super) async fn view(
    store: &MemoryStore,
    ctx: &ToolExecutionContext,
    args: &Value,
    shown: &str,
    path: &str,
) -> Result<String, ToolError> {
    let (user, path) = (&ctx.user_id, path.to_owned());
    let db = |e| map_error(e, None);
    let files = store.files().file_tree(user, &path).await.map_err(db)?;
    match files.as_slice() {
        [file] if file.path == path => {
            let Some(file) = store.files().read_file(user, &path).await.map_err(db)? else {
                return Err(fail(text::not_found(shown)));
            };
            let lines = file.content.lines().count();
            let (start, end) = match args.get("view_range") {
                None | Some(Value::Null) => (1, lines),
                Some(range) => {
                    let range: Vec<i64> = range
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_i64).collect())
                        .unwrap_or_default();
                    text::view_range(&range, lines).map_err(fail)?
                }
            };
            let view = text::file_view(shown, &file.content, start, end);
            // A file the user has not confirmed is said to be one: the model is
            // told, and the runtime marks what it writes while this is in context.
            let unconfirmed = match store.get(user, &file.note_id).await {
                Ok(note) => note.metadata.provenance.is_some_and(|p| !p.confirmed),
                Err(_) => true,
            };
            if !unconfirmed {
                return Ok(view);
            }
            // Changed after untrusted input: the text the user last confirmed follows.
            let confirmed = store
                .confirmed_texts(user, std::slice::from_ref(&file.note_id))
                .await
                .ok()
                .and_then(|found| found.into_iter().next())
                .map(|(_, text)| text);
            Ok(match confirmed {
                Some(before) => format!("{UNCONFIRMED_FILE}\n{view}\n{CONFIRMED_BEFORE}\n{before}"),
                None => format!("{UNCONFIRMED_FILE}\n{view}"),
            })
        }
        [] if path != MEMORIES_ROOT => Err(fail(text::not_found(shown))),
        _ => Ok(text::directory_view(shown, &path, &files)),
    }
}

/// `str_replace` and `insert`: an edit of a file's text, screened whole, at the version read.
pub(super) async fn edit(
    store: &MemoryStore,
    ctx: &ToolExecutionContext,
    args: &Value,
    command: &str,
    shown: &str,
    path: &str,
) -> Result<String, ToolError> {
    let (user, path) = (&ctx.user_id, path.to_owned());
    let db = |e| map_error(e, None);
    let Some(file) = store.files().read_file(user, &path).await.map_err(db)? else {
        return Err(fail(text::not_found(shown)));
    };
    let (edited, reply) = if command == "str_replace" {
        let old = arg(args, "old_str", command)?;
        if old.is_empty() {
            return Err(ToolError::invalid("old_str", "a non-empty text to replace"));
        }
        let new = args
            .get("new_str")
            .and_then(Value::as_str)
            .unwrap_or_default();
        text::str_replace(shown, &file.content, old, new).map_err(fail)?
    } else {
        let line = int_arg(args, "insert_line", command)?;
        let insert = arg(args, "insert_text", command)?;
        let edited = text::insert(&file.content, line, insert).map_err(fail)?;
        (edited, format!("The file {shown} has been edited."))
    };
    // Emptying a file removes what it said: that is the `delete` command's (a delete,
    // governed as one), never an edit's.
    if crate::memory_tools::is_blank(&edited) {
        return Err(fail(format!(
            "No change was made: the edit would leave {shown} with no text; to \
                 remove the file, use the delete command"
        )));
    }
    // What is stored is what is screened: the edited file, not the fragments.
    let mut edited = edited;
    let mut tag = ctx.audit.clone();
    let redacted = crate::governance::screen_edit("file_text", &mut edited, tag.as_mut())?;
    let reply = crate::governance::tell_redacted(reply, &redacted);
    let expect = PathExpect::EditToken(file.edit_token);
    match store
        .files()
        .put_file(user, &path, &edited, expect, tag.as_ref(), written(ctx))
        .await
        .map_err(db)?
    {
        PathPut::Written(written) => {
            if written.content != file.content {
                wrote(ctx, &written, false);
            }
            Ok(reply)
        }
        PathPut::Changed => Err(fail(format!(
            "No change was made: {shown} was changed by another edit while this one \
                 ran. View it again and retry on its current text."
        ))),
        _ => Err(fail(text::not_found(shown))),
    }
}
