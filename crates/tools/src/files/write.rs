//! `file_write`: creates or replaces a text file in `shared/` or `tmp/`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use types::{SafetyTier, ToolExecutionContext};

use super::{MAX_FILE_BYTES, Written, blocking, parse, write_atomic};
use crate::policy::{Access, Parents, Workspace, check_path};
use crate::{Tool, ToolError};

/// Writes `content` to a file, creating missing parent directories (inside the area, one name at
/// a time, never through a link) and replacing an existing file atomically.
#[derive(Debug, Default)]
pub struct FileWrite;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

#[async_trait::async_trait]
impl Tool for FileWrite {
    fn name(&self) -> &str {
        "file_write"
    }

    fn description(&self) -> &str {
        "Create or overwrite a text file under shared/ (persistent) or tmp/ (scratch). Paths are \
         relative to the workspace, like shared/notes.md; missing directories are created. \
         Replaces the whole file: use file_edit to change part of one."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["path", "content"],
            "properties": {
                "path": {"type": "string", "minLength": 1, "maxLength": 1024,
                         "description": "Workspace-relative file path, like shared/notes.md"},
                "content": {"type": "string", "maxLength": MAX_FILE_BYTES,
                            "description": "The complete new content of the file"}
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
        if args.content.len() as u64 > MAX_FILE_BYTES {
            return Err(ToolError::invalid(
                "content",
                format!(
                    "at most {} KiB, got {} bytes",
                    MAX_FILE_BYTES / 1024,
                    args.content.len()
                ),
            ));
        }
        let root = ctx.workspace.root.clone();
        blocking(move || {
            let ws = Workspace::open(&root)?;
            let (dir, name) = ws.open_parent(&path, Parents::Create)?;
            let written = write_atomic(&dir, name, args.content.as_bytes(), &path)?;
            let verb = match written {
                Written::Created => "Created",
                Written::Replaced => "Replaced",
            };
            Ok(format!(
                "{verb} {} ({} bytes)",
                path.display(),
                args.content.len()
            ))
        })
        .await
    }
}
