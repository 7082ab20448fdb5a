//! The file-system half of the policy: opens a [`SafePath`] beneath the workspace root without
//! ever following a symbolic link, and hands back file descriptors.
//!
//! Resolution uses `openat2(root, path, O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)`: the kernel refuses any symlink in any component and any escape from
//! the root, atomically with the open. Where the kernel lacks `openat2` (`ENOSYS`, or `EPERM` from
//! a seccomp filter), each component is opened in turn with `openat(dir, name, O_NOFOLLOW)`
//! relative to the previous descriptor, which is equally immune to a component being swapped for a
//! link between steps. Callers then act only through the returned descriptors (`*at` calls with a
//! single plain name), never by re-resolving a path string.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

use super::path::{RULE_SYMLINK, SafePath};
use crate::ToolError;

/// How components are resolved. `Auto` tries `openat2` and falls back on `ENOSYS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    Auto,
    /// Only the per-component `openat(O_NOFOLLOW)` walk (the fallback, selectable for tests).
    PerComponent,
}

/// Whether missing parent directories are created for a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parents {
    MustExist,
    Create,
}

/// An open handle on one user's workspace root.
#[derive(Debug)]
pub struct Workspace {
    root: OwnedFd,
    resolver: Resolver,
}

impl Workspace {
    /// Opens the root directory (a trusted host path from the context).
    pub fn open(root: &Path) -> Result<Self, ToolError> {
        Self::open_with(root, Resolver::Auto)
    }

    pub fn open_with(root: &Path, resolver: Resolver) -> Result<Self, ToolError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let root = rfs::open(root, flags, Mode::empty())
            .map_err(|e| ToolError::execution_with("the workspace is not available", e))?;
        Ok(Self { root, resolver })
    }

    /// A directory, for listing or as the base of `*at` calls.
    pub fn open_dir(&self, path: &SafePath) -> Result<OwnedFd, ToolError> {
        self.resolve(path, OFlags::RDONLY | OFlags::DIRECTORY)
            .map_err(|e| map_errno(e, path))
    }

    /// A regular file opened for reading, with its metadata. FIFOs, devices and sockets are
    /// refused (opened non-blocking so a FIFO cannot hang the call).
    pub fn open_file(&self, path: &SafePath) -> Result<(File, Stat), ToolError> {
        path.require_file()?;
        let fd = self
            .resolve(path, OFlags::RDONLY | OFlags::NONBLOCK)
            .map_err(|e| map_errno(e, path))?;
        let stat = rfs::fstat(&fd).map_err(|e| map_errno(e, path))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Ok((File::from(fd), stat)),
            FileType::Directory => Err(ToolError::invalid(
                "path",
                format!(
                    "a file, but `{}` is a directory; use file_list for directories",
                    path.display()
                ),
            )),
            _ => Err(ToolError::denied(format!(
                "`{}` is not a regular file",
                path.display()
            ))),
        }
    }

    /// The directory holding `path` and the final name, for `*at` calls on that single name.
    pub fn open_parent<'p>(
        &self,
        path: &'p SafePath,
        parents: Parents,
    ) -> Result<(OwnedFd, &'p str), ToolError> {
        let Some((parent, name)) = path.split_last() else {
            return Err(ToolError::invalid(
                "path",
                "a file below a directory, like shared/notes.md",
            ));
        };
        let dir = match parents {
            Parents::MustExist => self.open_dir(&parent)?,
            Parents::Create => self.create_dirs(&parent)?,
        };
        Ok((dir, name))
    }

    /// Opens `path` as a directory, creating missing directories one name at a time.
    fn create_dirs(&self, path: &SafePath) -> Result<OwnedFd, ToolError> {
        let Some(area) = path.area() else {
            return self.open_dir(path);
        };
        let area_path = SafePath::root()
            .join(area.name())
            .unwrap_or_else(SafePath::root);
        let mut dir = self.open_dir(&area_path)?;
        for name in path.names() {
            let next = match open_dir_at(dir.as_fd(), name) {
                Err(Errno::NOENT) => {
                    match rfs::mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => open_dir_at(dir.as_fd(), name),
                        Err(e) => Err(e),
                    }
                }
                other => other,
            };
            dir = next.map_err(|e| map_errno(e, path))?;
        }
        Ok(dir)
    }

    fn resolve(&self, path: &SafePath, flags: OFlags) -> Result<OwnedFd, Errno> {
        let mut names: Vec<&str> = Vec::with_capacity(path.names().len() + 1);
        if let Some(area) = path.area() {
            names.push(area.name());
        }
        names.extend(path.names().iter().map(String::as_str));
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if self.resolver == Resolver::Auto {
            let joined = if names.is_empty() {
                ".".to_owned()
            } else {
                names.join("/")
            };
            let how =
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            let mut attempts = 0;
            loop {
                match rfs::openat2(&self.root, joined.as_str(), flags, Mode::empty(), how) {
                    // A concurrent rename can make the kernel ask for a retry.
                    Err(Errno::AGAIN) if attempts < 3 => attempts += 1,
                    // No openat2 in this kernel, or a seccomp filter that refuses it: the walk
                    // applies the same rules with plain openat.
                    Err(Errno::NOSYS | Errno::PERM) => break,
                    // `O_DIRECTORY | O_NOFOLLOW` on a link reports ENOTDIR; the walk tells the
                    // two apart (same checks, so no weaker).
                    Err(Errno::NOTDIR) => break,
                    result => return result,
                }
            }
            tracing::debug!("openat2 unavailable; resolving one component at a time");
        }
        walk(self.root.as_fd(), &names, flags)
    }
}

/// The fallback: each component opened relative to the last with `O_NOFOLLOW`.
fn walk(root: BorrowedFd<'_>, names: &[&str], flags: OFlags) -> Result<OwnedFd, Errno> {
    let Some((last, dirs)) = names.split_last() else {
        return rfs::openat(root, ".", flags, Mode::empty());
    };
    let mut current: Option<OwnedFd> = None;
    for name in dirs {
        let base = current.as_ref().map_or(root, AsFd::as_fd);
        current = Some(open_dir_at(base, name)?);
    }
    let base = current.as_ref().map_or(root, AsFd::as_fd);
    rfs::openat(base, *last, flags, Mode::empty()).map_err(|e| link_or(e, base, last))
}

/// Opens one plain name in `dir` as a directory, refusing a symlink.
pub(crate) fn open_dir_at(dir: BorrowedFd<'_>, name: &str) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rfs::openat(dir, name, flags, Mode::empty()).map_err(|e| link_or(e, dir, name))
}

/// `ENOTDIR` from an `O_NOFOLLOW` open may mean "that is a link": report links as `ELOOP`.
fn link_or(e: Errno, dir: BorrowedFd<'_>, name: &str) -> Errno {
    match (e, type_at(dir, name)) {
        (Errno::NOTDIR, Ok(Some((FileType::Symlink, _)))) => Errno::LOOP,
        _ => e,
    }
}

/// The type of `name` in `dir`, without following a link (`None` if absent).
pub(crate) fn type_at(dir: BorrowedFd<'_>, name: &str) -> Result<Option<(FileType, Stat)>, Errno> {
    match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some((FileType::from_raw_mode(stat.st_mode), stat))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Turns an errno into a message about the workspace-relative path.
pub(crate) fn map_errno(e: Errno, path: &SafePath) -> ToolError {
    let shown = path.display();
    match e {
        Errno::LOOP | Errno::MLINK => ToolError::denied(RULE_SYMLINK),
        Errno::XDEV => ToolError::denied("paths must stay inside the workspace"),
        Errno::NOENT => ToolError::NotFound {
            what: format!("`{shown}`"),
            hint: "; use file_list to see what exists".into(),
        },
        Errno::NOTDIR => ToolError::invalid(
            "path",
            format!("a path whose parents are directories; a part of `{shown}` is a file"),
        ),
        Errno::ISDIR => ToolError::invalid("path", format!("a file, but `{shown}` is a directory")),
        Errno::ACCESS | Errno::PERM | Errno::ROFS => {
            ToolError::denied(format!("the file system does not permit this on `{shown}`"))
        }
        Errno::NAMETOOLONG => ToolError::denied("the path or a name in it is too long"),
        Errno::NOSPC | Errno::DQUOT => ToolError::execution("no space left in the workspace"),
        other => ToolError::execution_with(format!("could not access `{shown}`"), other),
    }
}
