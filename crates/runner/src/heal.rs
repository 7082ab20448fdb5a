//! Restarts that heal: before each launch of a guest (the first start and every supervised
//! restart) the runner puts back what it owns in the user's workspace, so nothing the shell can
//! do to the files it reaches keeps the agent down past its next start.
//!
//! - the workspace root and each of its directories get back the permissions their owner needs
//!   (`.oxydra/` and `vault/` exactly 0700, the others their provisioned 0755 once the owner
//!   lost any of `rwx`, the root `u+rwx`); a missing directory is
//!   created, and anything else in a directory's place is moved aside;
//! - the files directly in `.oxydra/` and `vault/` get back `u+rw` (a link, a hard link or a
//!   special file is left alone);
//! - in `ipc/`, whatever is at a name a guest needs and is not of its type (`shell.sock` a
//!   socket, `gateway.json` a regular file) is moved aside;
//! - before a launch, ownership is re-applied (see [`reown`], the one call site); while the guests
//!   run it is not (no guest can change an owner, and the walk costs what the shell put there).
//!
//! "Moved aside" is a rename, never a deletion and never through a link: into
//! `<workspace_root>/.runner/<user>/moved-aside/` (out of every guest's reach), or beside it under
//! a `.moved-aside-` name when that is another filesystem. Every step goes through
//! [`crate::beneath::SafeDir`]: nothing planted is followed. Each repair is one line saying what
//! was wrong and what was done; the supervisor logs them and shows them in `runner status`.

use std::path::{Path, PathBuf};

use rustix::fs::FileType;
use types::{WorkspaceDir, WorkspacePaths};

use crate::RunnerError;
use crate::beneath::SafeDir;
use crate::privilege::Separation;

/// The names in `ipc/` a guest needs, and the kind each must be.
const IPC_NAMES: [(&str, FileType); 2] = [
    (types::SHELL_SOCKET_NAME, FileType::Socket),
    (types::ENDPOINT_FILE, FileType::RegularFile),
];

/// When [`heal`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occasion {
    /// Before a guest is launched: everything, ownership (for this separation) included.
    Launch(Separation),
    /// While the guests run (a periodic check): modes and misplaced entries only.
    WhileRunning,
}

/// Puts back what the runner owns in `ws` (see the module). Returns one line per repair, empty
/// when nothing was wrong. A workspace that does not exist yet has nothing to heal.
pub fn heal(ws: &WorkspacePaths, occasion: Occasion) -> Result<Vec<String>, RunnerError> {
    let (parent, user) = split_root(ws)?;
    let mut healer = Healer {
        ws,
        parent: parent.clone(),
        user: user.clone(),
        repairs: Vec::new(),
        aside: None,
    };
    let top = SafeDir::open(&parent, Path::new(""))?;
    let Some(found) = top.entry(&user) else {
        return Ok(Vec::new());
    };
    if found.kind != FileType::Directory {
        return Err(RunnerError::Config {
            path: ws.root.clone(),
            problem: "is not a directory; move it away and start again".into(),
        });
    }
    let root = top.sub(&user)?;
    healer.restore_mode(&root, "the workspace root", found.mode | 0o700)?;
    for dir in WorkspaceDir::ALL {
        healer.restore_dir(&root, dir)?;
    }
    for dir in [WorkspaceDir::Internal, WorkspaceDir::Vault] {
        let sub = root.sub(dir_name(ws, dir).as_str())?;
        healer.restore_files(&sub, dir_name(ws, dir).as_str())?;
    }
    let ipc = root.sub(dir_name(ws, WorkspaceDir::Ipc).as_str())?;
    for (name, kind) in IPC_NAMES {
        if let Some(e) = ipc.entry(name)
            && e.kind != kind
        {
            healer.move_aside(&ipc, "ipc", name, e.kind)?;
        }
    }
    if let Occasion::Launch(separation) = occasion {
        reown(ws, separation)?;
    }
    Ok(healer.repairs)
}

/// Gives the workspace back to its guests' identity: the one place [`heal`] re-applies
/// ownership (today [`crate::own_workspace`]).
fn reown(ws: &WorkspacePaths, separation: Separation) -> Result<(), RunnerError> {
    match separation.identity() {
        Some(id) => crate::own_workspace(ws, id),
        None => Ok(()),
    }
}

/// The mode a workspace directory must have: exactly 0700 for the private ones; the others keep
/// what they have while it leaves the owner `rwx`, else get their provisioned mode back — the
/// separated layout's (see `ownership`) when the runner is root, else 0755.
fn wanted_mode(dir: WorkspaceDir, current: u32) -> u32 {
    match dir {
        WorkspaceDir::Internal | WorkspaceDir::Vault => 0o700,
        _ if current & 0o700 == 0o700 => current,
        _ if crate::runs_as_root() => crate::ownership::dir_mode(dir),
        _ => 0o755,
    }
}

/// The mode a directory gets when it is created.
fn created_mode(dir: WorkspaceDir) -> u32 {
    wanted_mode(dir, 0)
}

fn dir_name(ws: &WorkspacePaths, dir: WorkspaceDir) -> String {
    ws.dir(dir)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `<parent>`, `<user>` of the workspace root.
fn split_root(ws: &WorkspacePaths) -> Result<(PathBuf, String), RunnerError> {
    let user = ws.root.file_name().and_then(|n| n.to_str());
    match (ws.root.parent(), user) {
        (Some(parent), Some(user)) => Ok((parent.to_owned(), user.to_owned())),
        _ => Err(RunnerError::Config {
            path: ws.root.clone(),
            problem: "is not a user's workspace".into(),
        }),
    }
}

struct Healer<'a> {
    ws: &'a WorkspacePaths,
    parent: PathBuf,
    user: String,
    repairs: Vec<String>,
    /// `.runner/<user>/moved-aside/`, opened when first needed.
    aside: Option<SafeDir>,
}

impl Healer<'_> {
    fn restore_mode(&mut self, dir: &SafeDir, shown: &str, want: u32) -> Result<(), RunnerError> {
        let mode = dir.mode()?;
        if mode != want {
            dir.set_mode(want)?;
            self.repairs
                .push(format!("{shown} had mode {mode:03o}; restored {want:03o}"));
        }
        Ok(())
    }

    fn restore_dir(&mut self, root: &SafeDir, dir: WorkspaceDir) -> Result<(), RunnerError> {
        let name = dir_name(self.ws, dir);
        let shown = format!("{name}/");
        match root.entry(&name) {
            Some(e) if e.kind == FileType::Directory => {
                let sub = root.sub(&name)?;
                self.restore_mode(&sub, &shown, wanted_mode(dir, e.mode))
            }
            Some(e) => {
                self.move_aside(root, "", &name, e.kind)?;
                root.mkdir(&name, created_mode(dir))?;
                self.repairs.push(format!("created {shown} again"));
                Ok(())
            }
            None => {
                root.mkdir(&name, created_mode(dir))?;
                self.repairs
                    .push(format!("{shown} was missing; created it"));
                Ok(())
            }
        }
    }

    /// Gives the owner back `rw` on the regular files (one link each) directly in `dir` and
    /// `rwx` on its subdirectories.
    fn restore_files(&mut self, dir: &SafeDir, shown: &str) -> Result<(), RunnerError> {
        for name in dir.names()? {
            let Some(e) = dir.entry(&name) else { continue };
            let (needed, is_dir) = match e.kind {
                FileType::RegularFile if e.links == 1 => (0o600, false),
                FileType::Directory => (0o700, true),
                _ => continue,
            };
            if e.mode & needed == needed {
                continue;
            }
            let want = e.mode | needed;
            if is_dir {
                dir.sub(&name)?.set_mode(want)?;
            } else {
                dir.set_file_mode(&name, want)?;
            }
            self.repairs.push(format!(
                "{shown}/{name} had mode {:03o}; restored {want:03o}",
                e.mode
            ));
        }
        Ok(())
    }

    /// Renames `name` (in `dir`, shown as `shown`) out of the way; see the module.
    fn move_aside(
        &mut self,
        dir: &SafeDir,
        shown: &str,
        name: &str,
        kind: FileType,
    ) -> Result<(), RunnerError> {
        let what = if shown.is_empty() {
            name.to_owned()
        } else {
            format!("{shown}/{name}")
        };
        let stamp = chrono_stamp();
        let new_name = format!("{stamp}-{}", what.replace('/', "-"));
        if self.aside.is_none() {
            let rel = Path::new(crate::RUNNER_DIR)
                .join(&self.user)
                .join("moved-aside");
            self.aside = SafeDir::create(&self.parent, &rel, 0o700).ok();
        }
        let moved = match &self.aside {
            Some(aside) => dir
                .move_to(name, aside, &new_name)
                .map(|()| aside.path().join(&new_name)),
            None => Err(RunnerError::Config {
                path: self.parent.join(crate::RUNNER_DIR),
                problem: "cannot be opened".into(),
            }),
        };
        let to = match moved {
            Ok(to) => to,
            // Another filesystem (or no `.runner/`): beside it, under a name no guest uses.
            Err(_) => {
                let beside = format!(".moved-aside-{new_name}");
                dir.move_to(name, dir, &beside)?;
                dir.path().join(beside)
            }
        };
        self.repairs.push(format!(
            "{what} was {} where {} belongs; moved aside to {}",
            kind_name(kind),
            expected(&what),
            to.display()
        ));
        Ok(())
    }
}

/// What belongs at `what`.
fn expected(what: &str) -> &'static str {
    IPC_NAMES
        .iter()
        .find(|(n, _)| what == format!("ipc/{n}"))
        .map_or("a directory", |(_, k)| kind_name(*k))
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "a directory",
        FileType::RegularFile => "a regular file",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Unknown => "something",
    }
}

/// `20261128T035600.123456789Z`-like: unique enough for names moved aside in one second.
fn chrono_stamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}.{:09}", now.as_secs(), now.subsec_nanos())
}

#[cfg(test)]
#[path = "heal_tests.rs"]
mod tests;
