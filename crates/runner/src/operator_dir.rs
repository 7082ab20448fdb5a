//! A directory or file the operator names on the command line (`runner memory export-tree DIR`,
//! `import-tree DIR`, `import FILE`, the logs `runner logs` reads), opened as root without letting
//! anybody else's link steer it.
//!
//! [`open_operator_dir`] resolves the path itself, one component at a time from `/`, each opened
//! `O_PATH | O_NOFOLLOW` relative to the directory before it. A link is followed only when root or
//! the operator owns it and it lies in a directory nobody else can write (`/bin -> usr/bin`, an
//! operator's own links); a link anywhere another account could have planted it is refused. `..`
//! steps back to the directory actually opened, never re-resolved.
//!
//! The directory reached is *shell-writable* when any directory on that chain can be written by an
//! account other than root or the operator (another owner, group or world write without the
//! sticky bit), or is one of a user's `shared/`, `tmp/`, `logs/` or `ipc/` under the workspace
//! root — whoever owns it, so that a runner that is not root, whose guests share its uid, still
//! never follows a link the shell planted there or anywhere below. Such a target is refused unless the operator insists ([`TargetPolicy`]); either way
//! everything below it goes through [`SafeDir`], so a link flipped in mid-command is never
//! followed.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{self as rfs, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use types::WorkspacePaths;

use crate::{Entry, RunnerError, SafeDir};

/// Links followed while resolving one path, at most (as the kernel's own limit).
const MAX_LINKS: usize = 40;

/// What the operator allows a target to be.
#[derive(Debug, Clone, Default)]
pub struct TargetPolicy {
    /// Go ahead even if another account (the user's shell) can write the target
    /// (`--allow-shell-writable`).
    pub allow_shell_writable: bool,
    /// The workspace root whose users' `shared/`, `tmp/`, `logs/` and `ipc/` count as the
    /// shell's whatever their owner.
    pub workspace_root: Option<PathBuf>,
}

/// Whether the directory must exist, or may be created and must then be empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Existing,
    NewOrEmpty,
}

/// Opens the operator's directory `path` as described in the module doc.
pub fn open_operator_dir(
    path: &Path,
    want: Want,
    policy: &TargetPolicy,
) -> Result<SafeDir, RunnerError> {
    let areas = shell_areas(policy.workspace_root.as_deref());
    let (mut chain, missing) = resolve(path, &areas)?;
    if want == Want::Existing && !missing.is_empty() {
        return Err(RunnerError::io("open", path)(Errno::NOENT.into()));
    }
    // Judged before anything is created, so a refusal changes nothing.
    let target = chain.last().ok_or_else(|| refused(path, "is /"))?;
    if !policy.allow_shell_writable && (target.shells || others_can_write(&target.stat)) {
        return Err(refused(
            path,
            "can be written by the user's shell or another account, which could redirect this \
             command through a planted link; use a directory only root or you can write, or \
             pass --allow-shell-writable",
        ));
    }
    for name in missing {
        let io = |e: Errno| RunnerError::io("create", path)(e.into());
        let parent = chain.last().ok_or_else(|| io(Errno::INVAL))?;
        match rfs::mkdirat(&parent.fd, name.as_os_str(), Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(io(e)),
        }
        let (fd, stat) = open_path(Some(&parent.fd), Path::new(&name)).map_err(io)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            return Err(refused(path, "changed while it was being created"));
        }
        let shells = parent.shells || shells_own(&stat, &areas);
        chain.push(Step { fd, stat, shells });
    }
    let target = chain.pop().ok_or_else(|| refused(path, "is /"))?;
    let dir = SafeDir::from_fd(target.fd, path.to_owned());
    if want == Want::NewOrEmpty && !dir.names()?.is_empty() {
        return Err(refused(
            path,
            "is not empty: export the tree into a new or empty directory",
        ));
    }
    Ok(dir)
}

/// Opens the operator's regular file `path` (one name, no link) in a directory opened by
/// [`open_operator_dir`].
pub fn open_operator_file(path: &Path, policy: &TargetPolicy) -> Result<File, RunnerError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| refused(path, "is not a file name"))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match open_operator_dir(parent, Want::Existing, policy)?.open_entry(name)? {
        Entry::File(file) => Ok(file),
        Entry::Dir(_) => Err(refused(path, "is a directory")),
        Entry::Skipped(why) => Err(refused(path, why)),
    }
}

fn refused(path: &Path, why: &str) -> RunnerError {
    RunnerError::Refused {
        path: path.to_owned(),
        problem: why.to_owned(),
    }
}

/// One directory on the way from `/` to the operator's path.
struct Step {
    fd: OwnedFd,
    stat: Stat,
    /// This directory or one above it is the shell's (or another account's): see [`shells_own`].
    shells: bool,
}

/// The directories from `/` to `path`, each opened and `fstat`ed, and the names left over when
/// one is missing (none of them `..`). A link is followed only where no other account could
/// have planted it.
fn resolve(path: &Path, areas: &[(u64, u64)]) -> Result<(Vec<Step>, Vec<OsString>), RunnerError> {
    let io = |e: Errno| RunnerError::io("open", path)(e.into());
    let absolute = std::path::absolute(path).map_err(RunnerError::io("open", path))?;
    let mut rest: VecDeque<OsString> = names(&absolute);
    let (fd, stat) = open_path(None, Path::new("/")).map_err(io)?;
    let shells = shells_own(&stat, areas);
    let mut chain = vec![Step { fd, stat, shells }];
    let mut links = 0;
    while let Some(name) = rest.pop_front() {
        if name == ".." {
            if chain.len() > 1 {
                chain.pop();
            }
            continue;
        }
        let parent = chain.last().ok_or_else(|| io(Errno::INVAL))?;
        let (fd, stat) = match open_path(Some(&parent.fd), Path::new(&name)) {
            Err(Errno::NOENT) if !rest.iter().any(|n| n == "..") => {
                let mut missing = vec![name];
                missing.extend(rest);
                return Ok((chain, missing));
            }
            other => other.map_err(io)?,
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => {
                let shells = parent.shells || shells_own(&stat, areas);
                chain.push(Step { fd, stat, shells });
            }
            FileType::Symlink => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io(Errno::LOOP));
                }
                let planted = parent.shells || others_can_write(&parent.stat);
                if planted || !trusted_uid(stat.st_uid) {
                    return Err(refused(
                        path,
                        "passes through a link another account could have planted; give the \
                         real path",
                    ));
                }
                let target = rfs::readlinkat(&fd, "", Vec::new()).map_err(io)?;
                let target = Path::new(std::ffi::OsStr::from_bytes(target.as_bytes()));
                if target.is_absolute() {
                    chain.truncate(1);
                }
                for part in names(target).into_iter().rev() {
                    rest.push_front(part);
                }
            }
            _ => return Err(refused(path, "is not a directory")),
        }
    }
    Ok((chain, Vec::new()))
}

/// The plain components of `path` (`..` kept, `/` and `.` dropped).
fn names(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// `name` in `dir` (or the absolute `name`) as an `O_PATH` descriptor, never following a link
/// at the final name, with its `fstat`.
fn open_path(dir: Option<&OwnedFd>, name: &Path) -> Result<(OwnedFd, Stat), Errno> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match dir {
        Some(dir) => rfs::openat(dir, name, flags, Mode::empty())?,
        None => rfs::open(name, flags, Mode::empty())?,
    };
    let stat = rfs::fstat(&fd)?;
    Ok((fd, stat))
}

/// Whether the directory `stat` is the shell's or another account's: one of a user's shell
/// areas, owned by an uid other than root's or the operator's (its owner can always write it), or
/// writable by others without the sticky bit (with it, as `/tmp`, others change only their own
/// entries, and the next directory's owner is judged in its turn).
fn shells_own(stat: &Stat, areas: &[(u64, u64)]) -> bool {
    areas.contains(&(stat.st_dev, stat.st_ino))
        || !trusted_uid(stat.st_uid)
        || others_can_write(stat) && stat.st_mode & 0o1000 == 0
}

/// `(device, inode)` of every user's `shared/`, `tmp/`, `logs/` and `ipc/` under `root`.
fn shell_areas(root: Option<&Path>) -> Vec<(u64, u64)> {
    let Some(Ok(users)) = root.map(std::fs::read_dir) else {
        return Vec::new();
    };
    let mut areas = Vec::new();
    for user in users.flatten() {
        let ws = WorkspacePaths::new(user.path());
        for dir in [ws.shared(), ws.tmp(), ws.logs(), ws.ipc()] {
            if let Ok(meta) = std::fs::symlink_metadata(&dir)
                && meta.is_dir()
            {
                areas.push((meta.dev(), meta.ino()));
            }
        }
    }
    areas
}

/// Root, or the operator running this command.
fn trusted_uid(uid: u32) -> bool {
    uid == 0 || uid == rustix::process::geteuid().as_raw()
}

/// Group write for a group other than root's or the operator's, or world write.
fn others_can_write(stat: &Stat) -> bool {
    let group = stat.st_mode & 0o020 != 0
        && stat.st_gid != 0
        && stat.st_gid != rustix::process::getegid().as_raw();
    group || stat.st_mode & 0o002 != 0
}

#[cfg(test)]
#[path = "operator_dir_tests.rs"]
mod tests;
