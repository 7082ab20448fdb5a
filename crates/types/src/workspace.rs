//! The per-user workspace layout `<workspace_root>/<user_id>/{.oxydra,shared,tmp,vault,logs,ipc}`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The gateway endpoint file's name (`{"url": "ws://127.0.0.1:PORT/", ...}`), written by
/// `oxydra-vm` in `.oxydra/` and, as a public copy, in `ipc/`.
pub const ENDPOINT_FILE: &str = "gateway.json";

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

    /// Where the user's gateway listens, as clients holding the token must read it:
    /// `.oxydra/gateway.json`. The shell cannot see or forge this copy; the one in `ipc/`
    /// ([`WorkspacePaths::public_endpoint`]) it can rewrite, so a client never sends its token to
    /// the address found there.
    pub fn endpoint(&self) -> PathBuf {
        self.internal().join(ENDPOINT_FILE)
    }

    /// `ipc/gateway.json`: the same endpoint, for whoever can read `ipc/` (informational only).
    pub fn public_endpoint(&self) -> PathBuf {
        self.ipc().join(ENDPOINT_FILE)
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
        assert_eq!(
            ws.endpoint(),
            PathBuf::from("/srv/oxydra/alice/.oxydra/gateway.json")
        );
        assert_eq!(
            ws.public_endpoint(),
            PathBuf::from("/srv/oxydra/alice/ipc/gateway.json")
        );
        for d in WorkspaceDir::ALL {
            assert_eq!(WorkspaceDir::from_name(d.name()), Some(d));
        }
    }
}
