//! `file_read`: a text file from the workspace, whole or a range of lines.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use types::{SafetyTier, ToolExecutionContext};

use super::{blocking, parse, read_text};
use crate::policy::{Access, Workspace, check_path};
use crate::{Tool, ToolError};

/// Reads a UTF-8 text file (up to 1 MiB). The whole file comes back as plain text, exactly as
/// stored, so it can be quoted to `file_edit`; with `start_line`/`end_line` (1-based, inclusive) a
/// header `[lines a-b of n]` precedes the selected lines.
#[derive(Debug, Default)]
pub struct FileRead;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    start_line: Option<usize>,
    end_line: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for FileRead {
    fn name(&self) -> &str {
        "file_read"
    }

    fn description(&self) -> &str {
        "Read a UTF-8 text file from the workspace (shared/, tmp/ or vault/). Paths are relative \
         to the workspace, like shared/notes.md. Returns the file as plain text; give start_line \
         and end_line (1-based, inclusive) to read part of a long file."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "minLength": 1, "maxLength": 1024,
                         "description": "Workspace-relative file path, like shared/notes.md"},
                "start_line": {"type": "integer", "minimum": 1,
                               "description": "First line to return (1-based)"},
                "end_line": {"type": "integer", "minimum": 1,
                             "description": "Last line to return (inclusive)"}
            }
        })
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }

    fn reads_untrusted(&self) -> Option<types::UntrustedInput> {
        Some(types::UntrustedInput::File)
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let args: Args = parse(args)?;
        let path = check_path(&args.path, Access::Read)?;
        if let (Some(start), Some(end)) = (args.start_line, args.end_line)
            && end < start
        {
            return Err(ToolError::invalid(
                "end_line",
                format!("at least start_line ({start}), got {end}"),
            ));
        }
        let root = ctx.workspace.root.clone();
        blocking(move || {
            let ws = Workspace::open(&root)?;
            let (file, _) = ws.open_file(&path)?;
            let text = read_text(file, &path)?;
            if args.start_line.is_none() && args.end_line.is_none() {
                return Ok(if text.is_empty() {
                    format!("(`{}` is empty)", path.display())
                } else {
                    text
                });
            }
            let total = super::line_count(&text);
            let start = args.start_line.unwrap_or(1);
            let end = args.end_line.unwrap_or(total).min(total);
            if start > total {
                return Err(ToolError::invalid(
                    "start_line",
                    format!(
                        "at most {total} (`{}` has {total} lines), got {start}",
                        path.display()
                    ),
                ));
            }
            let selected: Vec<&str> = text.lines().skip(start - 1).take(end + 1 - start).collect();
            Ok(format!(
                "[lines {start}-{end} of {total}]\n{}",
                selected.join("\n")
            ))
        })
        .await
    }
}
