//! `file_edit`: replaces one exact, unique piece of text in a file.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use types::{SafetyTier, ToolExecutionContext};

use super::{MAX_FILE_BYTES, blocking, line_count, open_file_in, parse, read_text, write_atomic};
use crate::policy::{Access, Parents, Workspace, check_path};
use crate::{Tool, ToolError};

/// Replaces `old_text` with `new_text` when `old_text` occurs exactly once; otherwise says how many
/// times it occurs and changes nothing. The file is read through a descriptor and replaced
/// atomically in its own directory.
#[derive(Debug, Default)]
pub struct FileEdit;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    old_text: String,
    new_text: String,
}

#[async_trait::async_trait]
impl Tool for FileEdit {
    fn name(&self) -> &str {
        "file_edit"
    }

    fn description(&self) -> &str {
        "Edit a text file under shared/ or tmp/ by replacing old_text, which must occur exactly \
         once in the file (copy it from file_read, including whitespace), with new_text. Use an \
         empty new_text to delete the text."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["path", "old_text", "new_text"],
            "properties": {
                "path": {"type": "string", "minLength": 1, "maxLength": 1024,
                         "description": "Workspace-relative file path, like shared/notes.md"},
                "old_text": {"type": "string", "minLength": 1,
                             "description": "Exact text to replace; must occur once"},
                "new_text": {"type": "string", "description": "Replacement text"}
            }
        })
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(15)
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let args: Args = parse(args)?;
        let path = check_path(&args.path, Access::Write)?;
        path.require_file()?;
        let root = ctx.workspace.root.clone();
        blocking(move || {
            let ws = Workspace::open(&root)?;
            let (dir, name) = ws.open_parent(&path, Parents::MustExist)?;
            let file = open_file_in(&dir, name, &path)?;
            let text = read_text(file, &path)?;
            let count = text.matches(args.old_text.as_str()).count();
            match count {
                0 => {
                    return Err(ToolError::NotFound {
                        what: format!("`old_text` in `{}`", path.display()),
                        hint: "; read the file and copy the exact text, including whitespace"
                            .into(),
                    });
                }
                1 => {}
                n => {
                    return Err(ToolError::invalid(
                        "old_text",
                        format!(
                            "text that occurs once in `{}`, but it occurs {n} times; include more \
                             surrounding text",
                            path.display()
                        ),
                    ));
                }
            }
            let edited = text.replacen(args.old_text.as_str(), &args.new_text, 1);
            if edited.len() as u64 > MAX_FILE_BYTES {
                return Err(ToolError::invalid(
                    "new_text",
                    format!(
                        "short enough to keep the file under {} KiB",
                        MAX_FILE_BYTES / 1024
                    ),
                ));
            }
            write_atomic(&dir, name, edited.as_bytes(), &path)?;
            Ok(format!(
                "Edited {}: replaced {} line(s) with {} line(s)",
                path.display(),
                line_count(&args.old_text).max(1),
                line_count(&args.new_text)
            ))
        })
        .await
    }
}
