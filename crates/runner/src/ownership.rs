//! Who owns what in a user's workspace when the runner is root (see `privilege`): the agent's
//! uid or root own everything the shell must not change; the shell's uid owns only the files it
//! creates. [`own_workspace`] (re)applies the layout, idempotently, at every start:
//!
//! | path | owner:group | mode |
//! |---|---|---|
//! | `<root>/<user>` | root : user's group | 0750 |
//! | `.oxydra/` and all in it, `vault/` and all in it | agent : user's group | 0700 (dirs) |
//! | `shared/`, `tmp/`, `logs/`, `ipc/` | agent : user's group | 2770 (setgid: new files get the group) |
//!
//! Both guests have the user's group as their only group; the shell reaches `shared/`, `tmp/`,
//! `logs/` and `ipc/` through it and can reach nothing else (`.oxydra/` and `vault/` give the
//! group nothing); no other account reaches anything (the root gives others nothing). A
//! workspace of the single-uid layout of earlier versions is migrated once: what is in
//! `shared/`, `tmp/`, `logs/` and `ipc/` goes to the shell's uid, group bits as the owner's.
//!
//! Nothing is followed: every directory is opened beneath its parent's descriptor with
//! `O_NOFOLLOW`, files are changed through descriptors opened `O_NOFOLLOW` (or `fchownat` with
//! `AT_SYMLINK_NOFOLLOW`), and a file with several hard links keeps its owner and mode.

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use rustix::process::{Gid, Uid};
use types::{WorkspaceDir, WorkspacePaths};

use crate::RunnerError;
use crate::privilege::{GuestIdentity, UserIdentities};

/// Deepest directory nesting a tree walk descends into.
const MAX_DEPTH: usize = 64;

/// Every workspace directory, `shared/` last (see [`own_workspace`]).
const MIGRATION_ORDER: [WorkspaceDir; 6] = [
    WorkspaceDir::Internal,
    WorkspaceDir::Vault,
    WorkspaceDir::Tmp,
    WorkspaceDir::Logs,
    WorkspaceDir::Ipc,
    WorkspaceDir::Shared,
];

/// The owner's and the group's mode of each workspace directory (see the module's table).
pub(crate) fn dir_mode(dir: WorkspaceDir) -> u32 {
    match dir {
        WorkspaceDir::Internal | WorkspaceDir::Vault => 0o700,
        WorkspaceDir::Shared | WorkspaceDir::Tmp | WorkspaceDir::Logs | WorkspaceDir::Ipc => 0o2770,
    }
}

/// (Re)applies the owners and modes of `ws` for `ids` (see the module's table), following no
/// link. Idempotent and cheap once applied (only `.oxydra/` and `vault/`, where the runner
/// writes as root, are walked every time); call it at every start, and after the runner wrote
/// into the workspace as root. Migrates a workspace of the single-uid layout on the way.
pub fn own_workspace(ws: &WorkspacePaths, ids: UserIdentities) -> Result<(), RunnerError> {
    let err = |what, dir: &std::path::Path| {
        let dir = dir.to_owned();
        move |e: Errno| RunnerError::io(what, &dir)(e.into())
    };
    let root = open_dir(rustix::fs::CWD, &ws.root).map_err(err("open", &ws.root))?;
    let agent = ids.agent;
    let group = agent.gid;
    let shared_done = open_dir(&root, WorkspaceDir::Shared.name())
        .and_then(|d| rustix::fs::fstat(&d))
        .is_ok_and(|s| is_applied(&s, agent, dir_mode(WorkspaceDir::Shared)));
    // `shared/` last, each directory set after its walk: `shared/` marks the migration done,
    // so an interrupted one is redone in full next time.
    for dir in MIGRATION_ORDER {
        let path = ws.dir(dir);
        let Ok(sub) = open_dir(&root, dir.name()) else {
            continue;
        };
        match dir {
            WorkspaceDir::Internal | WorkspaceDir::Vault => {
                walk(&sub, agent, Bits::Keep, 0).map_err(err("chown", &path))?;
            }
            _ if !shared_done => {
                walk(&sub, ids.shell, Bits::GroupAsOwner, 0).map_err(err("chown", &path))?;
            }
            _ => {}
        }
        set(&sub, agent, dir_mode(dir)).map_err(err("chown", &path))?;
    }
    let root_owner = GuestIdentity { uid: 0, gid: group };
    set(&root, root_owner, 0o750).map_err(err("chown", &ws.root))
}

/// Gives everything in `ws` to root (owner and group), following no link: what `runner forget`
/// does before the user's uids are released, so whoever gets them next owns none of it.
pub fn disown_workspace(ws: &WorkspacePaths) -> Result<(), RunnerError> {
    let err = |e: Errno| RunnerError::io("chown", &ws.root)(e.into());
    let root = match open_dir(rustix::fs::CWD, &ws.root) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(err(e)),
    };
    let nobody = GuestIdentity { uid: 0, gid: 0 };
    walk(&root, nobody, Bits::Keep, 0).map_err(err)?;
    chown(&root, nobody).map_err(err)
}

fn is_applied(stat: &Stat, owner: GuestIdentity, mode: u32) -> bool {
    stat.st_uid == owner.uid && stat.st_gid == owner.gid && stat.st_mode & 0o7777 == mode
}

/// What happens to a file's permission bits when it changes owner.
#[derive(Clone, Copy)]
enum Bits {
    Keep,
    /// The group gets the owner's bits (the other guest reaches the file through the group).
    GroupAsOwner,
}

/// Gives the file or directory open at `fd` (described by `stat`) to `owner`.
fn reown(fd: &OwnedFd, stat: &Stat, owner: GuestIdentity, bits: Bits) -> rustix::io::Result<()> {
    let mode = stat.st_mode & 0o7777;
    let wanted = match bits {
        Bits::Keep => mode,
        Bits::GroupAsOwner => (mode & !0o070) | ((mode & 0o700) >> 3),
    };
    if stat.st_uid != owner.uid || stat.st_gid != owner.gid {
        chown(fd, owner)?;
    }
    if wanted != mode {
        rustix::fs::fchmod(fd, Mode::from_raw_mode(wanted))?;
    }
    Ok(())
}

/// Gives every directory and regular file below `dir` to `owner` with [`reown`] (each opened
/// without following a link, checked after opening; a regular file with several links is left
/// alone). Links, sockets, FIFOs and devices get the owner only (`fchownat` with
/// `AT_SYMLINK_NOFOLLOW`, which changes a link itself, never what it points at).
fn walk(dir: &OwnedFd, owner: GuestIdentity, bits: Bits, depth: usize) -> rustix::io::Result<()> {
    if depth >= MAX_DEPTH {
        return Ok(());
    }
    let listing = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&listing)? {
        let entry = entry?;
        let name = entry.file_name();
        if name != c"." && name != c".." {
            names.push(name.to_owned());
        }
    }
    for name in names {
        let Ok(stat) = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => {
                let Ok(sub) = open_dir(dir, &name) else {
                    continue;
                };
                let stat = rustix::fs::fstat(&sub)?;
                reown(&sub, &stat, owner, bits)?;
                walk(&sub, owner, bits, depth + 1)?;
            }
            FileType::RegularFile => {
                let Ok(file) = open_file(dir, &name) else {
                    continue;
                };
                let stat = rustix::fs::fstat(&file)?;
                if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
                    && stat.st_nlink == 1
                {
                    reown(&file, &stat, owner, bits)?;
                }
            }
            _ => match rustix::fs::chownat(
                dir,
                &name,
                Some(Uid::from_raw(owner.uid)),
                Some(Gid::from_raw(owner.gid)),
                AtFlags::SYMLINK_NOFOLLOW,
            ) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(e) => return Err(e),
            },
        }
    }
    Ok(())
}

fn set(fd: &OwnedFd, owner: GuestIdentity, mode: u32) -> rustix::io::Result<()> {
    chown(fd, owner)?;
    rustix::fs::fchmod(fd, Mode::from_raw_mode(mode))
}

fn chown(fd: &OwnedFd, owner: GuestIdentity) -> rustix::io::Result<()> {
    rustix::fs::fchown(
        fd,
        Some(Uid::from_raw(owner.uid)),
        Some(Gid::from_raw(owner.gid)),
    )
}

pub(crate) fn open_dir<Fd: AsFd>(
    parent: Fd,
    name: impl rustix::path::Arg,
) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// A regular file opened to change its owner and mode: never through a link, never blocking
/// (a FIFO swapped in), never becoming a controlling terminal.
fn open_file<Fd: AsFd>(parent: Fd, name: impl rustix::path::Arg) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

#[cfg(test)]
#[path = "ownership_tests.rs"]
mod tests;
