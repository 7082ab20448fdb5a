//! Who is confined and what each role may touch, as pure data.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use types::{WorkspaceDir, WorkspacePaths};

/// The two per-user processes of the process tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The agent: gateway, runtime, tools, memory. Its whole workspace, `vault/` read-only.
    OxydraVm,
    /// The shell daemon: `shared/`, `tmp/`, `ipc/`, `logs/` only — never `.oxydra/` or `vault/`.
    ShellVm,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::OxydraVm => "oxydra-vm",
            Role::ShellVm => "shell-vm",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "oxydra-vm" => Ok(Role::OxydraVm),
            "shell-vm" => Ok(Role::ShellVm),
            other => Err(format!(
                "unknown role `{other}`; expected oxydra-vm or shell-vm"
            )),
        }
    }
}

/// What a grant allows beneath its path. Everything not granted is denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read files and list directories.
    Read,
    /// Read, list, and execute files.
    ReadExec,
    /// Read, list, create, write, truncate, rename, remove (no execute).
    ReadWrite,
    /// All of the above, and execute.
    ReadWriteExec,
}

/// One rule: `access` beneath `path` (or on the file `path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    pub access: Access,
    /// False for system paths that may not exist on every host (e.g. `/lib32`): they are skipped
    /// when absent. Workspace directories are required.
    pub required: bool,
}

/// System paths both roles may read and execute from. Absent ones are skipped. `/proc` is not
/// among them: a Landlock-confined process can still read `/proc/<pid>/environ` of other processes
/// of the same uid (measured on this project's kernel), so only `oxydra-vm` gets it.
pub const SYSTEM_READ_ONLY: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/lib32",
    "/libx32",
    "/etc",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
];

/// Device files both roles may write (spawning a child opens `/dev/null`).
pub const SYSTEM_READ_WRITE: &[&str] = &["/dev/null", "/dev/full"];

/// The grants of `role` for the workspace `ws`, plus `extra_read_only` paths (read and execute,
/// e.g. a model directory or a toolchain). The result is the whole allow-list: what it does not
/// name is denied.
pub fn plan(role: Role, ws: &WorkspacePaths, extra_read_only: &[PathBuf]) -> Vec<Grant> {
    let system = |path: &str, access| Grant {
        path: PathBuf::from(path),
        access,
        required: false,
    };
    let mut grants: Vec<Grant> = SYSTEM_READ_ONLY
        .iter()
        .map(|p| system(p, Access::ReadExec))
        .chain(
            SYSTEM_READ_WRITE
                .iter()
                .map(|p| system(p, Access::ReadWrite)),
        )
        .collect();
    grants.extend(extra_read_only.iter().map(|p| Grant {
        path: p.clone(),
        access: Access::ReadExec,
        required: true,
    }));
    let dir = |path: PathBuf, access| Grant {
        path,
        access,
        required: true,
    };
    match role {
        Role::ShellVm => {
            grants.push(dir(ws.shared(), Access::ReadWriteExec));
            grants.push(dir(ws.tmp(), Access::ReadWriteExec));
            grants.push(dir(ws.ipc(), Access::ReadWrite));
            grants.push(dir(ws.logs(), Access::ReadWrite));
        }
        Role::OxydraVm => {
            grants.push(system("/proc", Access::Read));
            // The root itself is readable (the file tools open it as their anchor); grants are a
            // union down the tree, so nothing writable may be granted above `vault/`.
            grants.push(dir(ws.root.clone(), Access::Read));
            for d in WorkspaceDir::ALL {
                let access = match d {
                    WorkspaceDir::Vault => Access::Read,
                    _ => Access::ReadWrite,
                };
                grants.push(dir(ws.dir(d), access));
            }
        }
    }
    grants
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// True if `path` is covered by some grant of `grants` allowing `access`-or-more. For tests and
    /// reports; the kernel is the authority.
    fn covers(grants: &[Grant], path: &Path, write: bool) -> bool {
        grants.iter().any(|g| {
            path.starts_with(&g.path)
                && (!write || matches!(g.access, Access::ReadWrite | Access::ReadWriteExec))
        })
    }

    fn check(role: Role, dir: &str, expected: (bool, bool)) {
        let ws = WorkspacePaths::new("/srv/ws/alice");
        let grants = plan(role, &ws, &[]);
        let path = ws.root.join(dir).join("file");
        assert_eq!(
            (covers(&grants, &path, false), covers(&grants, &path, true)),
            expected,
            "{role} {dir}"
        );
    }

    #[test]
    fn shell_vm_sees_only_its_four_dirs() {
        for (dir, rw) in [
            (".oxydra", (false, false)),
            ("vault", (false, false)),
            ("shared", (true, true)),
            ("tmp", (true, true)),
            ("ipc", (true, true)),
            ("logs", (true, true)),
            ("../bob/shared", (false, false)),
        ] {
            check(Role::ShellVm, dir, rw);
        }
    }

    #[test]
    fn oxydra_vm_reads_vault_and_writes_the_rest() {
        for (dir, rw) in [
            (".oxydra", (true, true)),
            ("vault", (true, false)),
            ("shared", (true, true)),
            ("logs", (true, true)),
            ("ipc", (true, true)),
        ] {
            check(Role::OxydraVm, dir, rw);
        }
    }

    #[test]
    fn roles_round_trip() {
        for role in [Role::OxydraVm, Role::ShellVm] {
            assert_eq!(role.name().parse::<Role>(), Ok(role));
        }
        assert!("root".parse::<Role>().is_err());
    }
}
