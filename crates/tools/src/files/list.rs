//! `file_list`: the entries of a workspace directory, optionally recursive.

use std::ops::ControlFlow;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use types::{SafetyTier, ToolExecutionContext};

use super::walk::{Depth, End, Entry, Kind, walk};
use super::{blocking, parse};
use crate::policy::{Access, Area, Workspace, check_path};
use crate::{Tool, ToolError};

/// Most entries one call returns.
pub const MAX_LIST_ENTRIES: usize = 500;

/// Lists a directory, one workspace-relative entry per line in name order: directories end with
/// `/`, files show their size, symbolic links are marked and never followed. The workspace root
/// (`.` or empty path) shows only the accessible areas. `recursive` descends depth first, up to
/// [`MAX_LIST_ENTRIES`] entries.
#[derive(Debug, Default)]
pub struct FileList;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    path: String,
    #[serde(default)]
    recursive: bool,
}

#[async_trait::async_trait]
impl Tool for FileList {
    fn name(&self) -> &str {
        "file_list"
    }

    fn description(&self) -> &str {
        "List a directory of the workspace, like shared/ or shared/projects. An empty path or \".\" \
         lists the accessible top-level directories (shared/, tmp/, vault/). Set recursive to \
         include subdirectories (at most 500 entries)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "path": {"type": "string", "maxLength": 1024,
                         "description": "Workspace-relative directory; empty for the top level"},
                "recursive": {"type": "boolean", "description": "Include subdirectories"}
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
        Duration::from_secs(15)
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let args: Args = parse(args)?;
        let path = check_path(&args.path, Access::Read)?;
        let depth = if args.recursive {
            Depth::Recursive
        } else {
            Depth::One
        };
        let root = ctx.workspace.root.clone();
        let cancel = ctx.cancellation.clone();
        blocking(move || {
            let ws = Workspace::open(&root)?;
            let mut lines = Vec::new();
            let end = walk(
                &ws,
                &path,
                depth,
                MAX_LIST_ENTRIES,
                &cancel,
                &mut |entry, _| {
                    lines.push(render(entry));
                    ControlFlow::Continue(())
                },
            )?;
            if lines.is_empty() {
                return Ok(format!("`{}` is empty", path.display()));
            }
            if end == End::Capped {
                lines.push(format!(
                    "[stopped after {MAX_LIST_ENTRIES} entries; list a subdirectory to see more]"
                ));
            }
            Ok(lines.join("\n"))
        })
        .await
    }
}

fn render(entry: &Entry) -> String {
    let shown = entry.path.display();
    match entry.kind {
        Kind::Dir if entry.path.is_top_level() && entry.path.area() == Some(Area::Vault) => {
            format!("{shown}/  (read-only)")
        }
        Kind::Dir => format!("{shown}/"),
        Kind::File => format!("{shown}  ({} bytes)", entry.size),
        Kind::Symlink => format!("{shown}  (symbolic link, not followed)"),
        Kind::Other => format!("{shown}  (special file)"),
    }
}
