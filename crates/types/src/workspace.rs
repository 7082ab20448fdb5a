//! The per-user workspace layout `<workspace_root>/<user_id>/{.oxydra,shared,tmp,vault,logs,ipc}`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The directories of a user's workspace, named once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceDir {
    /// `.oxydra/`: memory database, gateway token. oxydra-vm only.
    Internal,
    /// `shared/`: persistent user files.
    Shared,
    /// `tmp/`: scratch space.
    Tmp,
    /// `vault/`: credentials; read-only for oxydra-vm, absent for the shell.
    Vault,
    /// `logs/`: per-role logs.
    Logs,
    /// `ipc/`: endpoint marker and shell socket.
    Ipc,
}

impl WorkspaceDir {
    pub const ALL: [WorkspaceDir; 6] = [
        WorkspaceDir::Internal,
        WorkspaceDir::Shared,
        WorkspaceDir::Tmp,
        WorkspaceDir::Vault,
        WorkspaceDir::Logs,
        WorkspaceDir::Ipc,
    ];

    /// The directory's name inside the workspace.
    pub fn name(self) -> &'static str {
        match self {
            WorkspaceDir::Internal => ".oxydra",
            WorkspaceDir::Shared => "shared",
            WorkspaceDir::Tmp => "tmp",
            WorkspaceDir::Vault => "vault",
            WorkspaceDir::Logs => "logs",
            WorkspaceDir::Ipc => "ipc",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// One user's workspace: `root` is `<workspace_root>/<user_id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspacePaths {
    pub root: PathBuf,
}

impl WorkspacePaths {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `<workspace_root>/<user_id>`.
    pub fn for_user(workspace_root: &Path, user: &crate::UserId) -> Self {
        Self::new(workspace_root.join(user.as_str()))
    }

    pub fn dir(&self, dir: WorkspaceDir) -> PathBuf {
        self.root.join(dir.name())
    }

    pub fn internal(&self) -> PathBuf {
        self.dir(WorkspaceDir::Internal)
    }

    pub fn shared(&self) -> PathBuf {
        self.dir(WorkspaceDir::Shared)
    }

    pub fn tmp(&self) -> PathBuf {
        self.dir(WorkspaceDir::Tmp)
    }

    pub fn vault(&self) -> PathBuf {
        self.dir(WorkspaceDir::Vault)
    }

    pub fn logs(&self) -> PathBuf {
        self.dir(WorkspaceDir::Logs)
    }

    pub fn ipc(&self) -> PathBuf {
        self.dir(WorkspaceDir::Ipc)
    }

    /// The default location of the user's memory database: `.oxydra/memory.db`.
    pub fn default_memory_db(&self) -> PathBuf {
        self.internal().join("memory.db")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let user = crate::UserId::parse("alice").unwrap();
        let ws = WorkspacePaths::for_user(Path::new("/srv/oxydra"), &user);
        assert_eq!(
            ws.default_memory_db(),
            PathBuf::from("/srv/oxydra/alice/.oxydra/memory.db")
        );
        assert_eq!(ws.vault(), PathBuf::from("/srv/oxydra/alice/vault"));
        for d in WorkspaceDir::ALL {
            assert_eq!(WorkspaceDir::from_name(d.name()), Some(d));
        }
    }
}
