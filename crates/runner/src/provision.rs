//! Provisioning a user's workspace: `<root>/<user>/{.oxydra,shared,tmp,vault,logs,ipc}`.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use types::{UserId, WorkspaceDir, WorkspacePaths};

use crate::RunnerError;

/// Creates the user's workspace under `workspace_root` (idempotent). `.oxydra/` and `vault/` are
/// 0700 (tightened if they exist looser); the rest 0755 when created.
pub fn provision(workspace_root: &Path, user: &UserId) -> Result<WorkspacePaths, RunnerError> {
    let ws = WorkspacePaths::for_user(workspace_root, user);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(&ws.root)
        .map_err(RunnerError::io("create the workspace", &ws.root))?;
    for dir in WorkspaceDir::ALL {
        let path = ws.dir(dir);
        let private = matches!(dir, WorkspaceDir::Internal | WorkspaceDir::Vault);
        let mode = if private { 0o700 } else { 0o755 };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(mode)
            .create(&path)
            .map_err(RunnerError::io("create", &path))?;
        if private {
            let meta = std::fs::metadata(&path).map_err(RunnerError::io("inspect", &path))?;
            if meta.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
                    .map_err(RunnerError::io("restrict to 0700", &path))?;
            }
        }
    }
    Ok(ws)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_every_dir_with_private_modes_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let user = UserId::parse("alice").unwrap();
        let ws = provision(dir.path(), &user).unwrap();
        std::fs::set_permissions(ws.vault(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(ws.shared().join("keep.txt"), "x").unwrap();
        let again = provision(dir.path(), &user).unwrap();
        assert_eq!(again, ws);
        let mode =
            |d: WorkspaceDir| std::fs::metadata(ws.dir(d)).unwrap().permissions().mode() & 0o777;
        let modes: Vec<(WorkspaceDir, u32)> =
            WorkspaceDir::ALL.iter().map(|d| (*d, mode(*d))).collect();
        assert_eq!(
            modes,
            vec![
                (WorkspaceDir::Internal, 0o700),
                (WorkspaceDir::Shared, 0o755),
                (WorkspaceDir::Tmp, 0o755),
                (WorkspaceDir::Vault, 0o700),
                (WorkspaceDir::Logs, 0o755),
                (WorkspaceDir::Ipc, 0o755),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(ws.shared().join("keep.txt")).unwrap(),
            "x"
        );
    }
}
