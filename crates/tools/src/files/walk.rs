//! Directory traversal for `file_list` and `file_search`: descriptor-relative, never following a
//! symbolic link, never leaving the accessible areas, bounded in depth and entries.

use std::ops::ControlFlow;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{Dir, FileType};
use types::CancellationToken;

use crate::ToolError;
use crate::policy::{MAX_DEPTH, SafePath, Workspace, map_errno, open_dir_at, type_at};

/// What a directory entry is (links are reported, never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub path: SafePath,
    pub name: String,
    pub kind: Kind,
    pub size: u64,
}

/// How deep to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Depth {
    One,
    Recursive,
}

/// Why a walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Complete,
    /// The visitor asked to stop.
    Stopped,
    /// `max_visits` entries were seen.
    Capped,
}

/// Walks `start` (a directory) in name order, depth first, calling `visit` with each entry and
/// the descriptor of the directory holding it. At the workspace root only the accessible areas
/// (`shared/`, `tmp/`, `vault/`) are seen.
pub(crate) fn walk(
    ws: &Workspace,
    start: &SafePath,
    depth: Depth,
    max_visits: usize,
    cancel: &CancellationToken,
    visit: &mut dyn FnMut(&Entry, BorrowedFd<'_>) -> ControlFlow<()>,
) -> Result<End, ToolError> {
    let dir = ws.open_dir(start)?;
    let mut walker = Walker {
        depth,
        max_visits,
        visits: 0,
        cancel,
        visit,
    };
    match walker.dir(&dir, start, 0)? {
        ControlFlow::Continue(()) => Ok(End::Complete),
        ControlFlow::Break(end) => Ok(end),
    }
}

struct Walker<'a, 'v> {
    depth: Depth,
    max_visits: usize,
    visits: usize,
    cancel: &'a CancellationToken,
    visit: &'v mut dyn FnMut(&Entry, BorrowedFd<'_>) -> ControlFlow<()>,
}

impl Walker<'_, '_> {
    fn dir(
        &mut self,
        dir: &OwnedFd,
        path: &SafePath,
        level: usize,
    ) -> Result<ControlFlow<End>, ToolError> {
        let mut names = Vec::new();
        let mut reader = Dir::read_from(dir).map_err(|e| map_errno(e, path))?;
        while let Some(entry) = reader.read() {
            let entry = entry.map_err(|e| map_errno(e, path))?;
            // Names that are not UTF-8 cannot be named back by the model; skip them.
            if let Ok(name) = entry.file_name().to_str()
                && name != "."
                && name != ".."
            {
                names.push(name.to_owned());
            }
        }
        names.sort_unstable();
        for name in names {
            if self.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            // At the root, `join` admits only the accessible areas.
            let Some(child) = path.join(&name) else {
                continue;
            };
            let Some((file_type, stat)) =
                type_at(dir.as_fd(), &name).map_err(|e| map_errno(e, &child))?
            else {
                continue; // removed while we looked
            };
            if self.visits >= self.max_visits {
                return Ok(ControlFlow::Break(End::Capped));
            }
            self.visits += 1;
            let kind = match file_type {
                FileType::RegularFile => Kind::File,
                FileType::Directory => Kind::Dir,
                FileType::Symlink => Kind::Symlink,
                _ => Kind::Other,
            };
            let size = if kind == Kind::File {
                u64::try_from(stat.st_size).unwrap_or(0)
            } else {
                0
            };
            let entry = Entry {
                path: child,
                name,
                kind,
                size,
            };
            if (self.visit)(&entry, dir.as_fd()).is_break() {
                return Ok(ControlFlow::Break(End::Stopped));
            }
            if kind == Kind::Dir && self.depth == Depth::Recursive && level < MAX_DEPTH {
                // O_NOFOLLOW: a directory swapped for a link since the stat is skipped.
                let Ok(sub) = open_dir_at(dir.as_fd(), &entry.name) else {
                    continue;
                };
                if let ControlFlow::Break(end) = self.dir(&sub, &entry.path, level + 1)? {
                    return Ok(ControlFlow::Break(end));
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}
