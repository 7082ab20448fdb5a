//! `file_delete`: removes a file, or an empty directory, under `shared/` or `tmp/`.

use std::os::fd::AsFd;
use std::time::Duration;

use rustix::fs::{self as rfs, AtFlags, FileType};
use rustix::io::Errno;
use serde::Deserialize;
use serde_json::{Value, json};
use types::{SafetyTier, ToolExecutionContext};

use super::{blocking, parse};
use crate::policy::{Access, Parents, RULE_SYMLINK, Workspace, check_path, map_errno, type_at};
use crate::{Tool, ToolError};

/// Deletes one file, or one directory if it is empty (never recursively). Symbolic links are
/// refused like everywhere else, and the area directories themselves cannot be deleted.
#[derive(Debug, Default)]
pub struct FileDelete;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
}

#[async_trait::async_trait]
impl Tool for FileDelete {
    fn name(&self) -> &str {
        "file_delete"
    }

    fn description(&self) -> &str {
        "Delete a file, or an empty directory, under shared/ or tmp/. Paths are relative to the \
         workspace, like tmp/draft.txt. Directories must be emptied first."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "minLength": 1, "maxLength": 1024,
                         "description": "Workspace-relative path, like tmp/draft.txt"}
            }
        })
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let args: Args = parse(args)?;
        let path = check_path(&args.path, Access::Write)?;
        let root = ctx.workspace.root.clone();
        blocking(move || {
            let ws = Workspace::open(&root)?;
            if path.is_top_level() {
                return Err(ToolError::denied(format!(
                    "`{}/` itself cannot be deleted; name something inside it",
                    path.display()
                )));
            }
            let (dir, name) = ws.open_parent(&path, Parents::MustExist)?;
            let found = type_at(dir.as_fd(), name).map_err(|e| map_errno(e, &path))?;
            let flags = match found {
                None => return Err(map_errno(Errno::NOENT, &path)),
                Some((FileType::Symlink, _)) => return Err(ToolError::denied(RULE_SYMLINK)),
                Some((FileType::Directory, _)) => AtFlags::REMOVEDIR,
                Some(_) => AtFlags::empty(),
            };
            // If the name was swapped since the stat, unlinkat acts on the new entry itself (never
            // through a link), and a directory swapped for a file (or back) fails cleanly.
            match rfs::unlinkat(&dir, name, flags) {
                Ok(()) => Ok(format!("Deleted {}", path.display())),
                Err(Errno::NOTEMPTY | Errno::EXIST) => Err(ToolError::invalid(
                    "path",
                    format!(
                        "a file or an empty directory; `{}` is not empty",
                        path.display()
                    ),
                )),
                Err(e) => Err(map_errno(e, &path)),
            }
        })
        .await
    }
}
