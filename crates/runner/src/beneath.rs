//! The one way the runner and `oxydra-vm` write into a directory somebody less privileged can
//! write (`ipc/` and `logs/` are the shell's too; `.oxydra/` is `oxydra-vm`'s, below the runner).
//!
//! A [`SafeDir`] is a directory opened beneath a trusted root with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` (or, without `openat2`, one `openat(O_NOFOLLOW)` per component), held as
//! an `O_PATH` descriptor; everything afterwards is an `*at` call on one plain name in it:
//!
//! - [`SafeDir::write_atomic`]: a fresh temporary name created `O_CREAT | O_EXCL | O_NOFOLLOW`
//!   (whatever was planted at a predictable name — a link, a FIFO, a directory — is never opened),
//!   then `renameat` over the final name (which replaces a planted link or hard link rather than
//!   writing through it);
//! - [`SafeDir::open_append`]: `O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK`, and only a regular
//!   file with one link is accepted (a FIFO cannot block, a hard link to another file is refused);
//! - [`SafeDir::remove`]: `unlinkat`, which never follows the name;
//! - [`SafeDir::subdir`], [`SafeDir::create_new`], [`SafeDir::names`] and [`SafeDir::open_entry`]:
//!   walking a tree somebody else can write (the operator's `export-tree`/`import-tree` target)
//!   one name at a time, each opened `O_NOFOLLOW` and judged by the type of the descriptor that
//!   was opened (`fstat`), never by an earlier look at the name.
//!
//! Nothing here re-resolves a path string after the directory was opened, so swapping a
//! directory for a link between two calls changes nothing.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::RunnerError;

mod inspect;
pub use inspect::Found;

/// A directory opened without following any link, for `*at` calls on single names.
#[derive(Debug)]
pub struct SafeDir {
    fd: OwnedFd,
    /// For error messages (the operator's, never the model's).
    shown: PathBuf,
}

/// One name of a directory as [`SafeDir::open_entry`] found it.
#[derive(Debug)]
pub enum Entry {
    /// A regular file with one name, open for reading.
    File(File),
    /// A directory, opened.
    Dir(SafeDir),
    /// Anything else, never read: why it was left alone.
    Skipped(&'static str),
}

/// Whether missing directories are created (with this mode) on the way down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    Fail,
    Create(u32),
}

impl SafeDir {
    /// `rel` (plain names only) beneath the trusted directory `root`; no component may be a link.
    pub fn open(root: &Path, rel: &Path) -> Result<Self, RunnerError> {
        Self::open_with(root, rel, Missing::Fail)
    }

    /// Like [`SafeDir::open`], creating missing directories with `mode` (one name at a time, each
    /// refused if it turns out to be a link).
    pub fn create(root: &Path, rel: &Path, mode: u32) -> Result<Self, RunnerError> {
        Self::open_with(root, rel, Missing::Create(mode))
    }

    fn open_with(root: &Path, rel: &Path, missing: Missing) -> Result<Self, RunnerError> {
        let shown = root.join(rel);
        let err = |e: Errno| RunnerError::io("open the directory", &shown)(e.into());
        let names = plain_names(rel).ok_or_else(|| err(Errno::INVAL))?;
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let root_fd = rfs::open(root, flags, Mode::empty()).map_err(err)?;
        let fd = match beneath(&root_fd, &names) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if missing != Missing::Fail => {
                walk(root_fd.as_fd(), &names, missing).map_err(err)?
            }
            Err(Errno::NOSYS | Errno::PERM | Errno::AGAIN) => {
                walk(root_fd.as_fd(), &names, missing).map_err(err)?
            }
            Err(e) => return Err(err(e)),
        };
        Ok(Self { fd, shown })
    }

    /// A directory already opened (and checked) by the caller.
    pub(crate) fn from_fd(fd: OwnedFd, shown: PathBuf) -> Self {
        Self { fd, shown }
    }

    /// The directory `name` in this one, never through a link; created with `mode` when missing
    /// and `create` is given.
    pub fn subdir(&self, name: &str, create: Option<u32>) -> Result<SafeDir, RunnerError> {
        let shown = self.shown.join(name);
        let err = |e: Errno| RunnerError::io("open the directory", &shown)(e.into());
        check_name(name).map_err(err)?;
        let names = [name.to_owned()];
        let missing = create.map_or(Missing::Fail, Missing::Create);
        let fd = match beneath(&self.fd, &names) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if missing != Missing::Fail => {
                walk(self.fd.as_fd(), &names, missing).map_err(err)?
            }
            Err(Errno::NOSYS | Errno::PERM | Errno::AGAIN) => {
                walk(self.fd.as_fd(), &names, missing).map_err(err)?
            }
            Err(e) => return Err(err(e)),
        };
        Ok(Self { fd, shown })
    }

    /// A new regular file `name` (mode `mode`), created exclusively: whatever is already at the
    /// name — a file, a link, a FIFO — is refused, never opened.
    pub fn create_new(&self, name: &str, mode: u32) -> Result<File, RunnerError> {
        let err = |e: Errno| RunnerError::io("create", self.shown.join(name))(e.into());
        check_name(name).map_err(err)?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode)).map_err(err)?;
        Ok(File::from(fd))
    }

    /// The names in this directory (without `.` and `..`), sorted. A name that is not UTF-8 is
    /// an error.
    pub fn names(&self) -> Result<Vec<String>, RunnerError> {
        let err = |e: Errno| RunnerError::io("list", &self.shown)(e.into());
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let listing = rfs::openat(&self.fd, ".", flags, Mode::empty()).map_err(err)?;
        let mut names = Vec::new();
        for entry in rfs::Dir::read_from(&listing).map_err(err)? {
            let entry = entry.map_err(err)?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let name = std::str::from_utf8(bytes).map_err(|_| err(Errno::ILSEQ))?;
            names.push(name.to_owned());
        }
        names.sort();
        Ok(names)
    }

    /// `name` opened without following a link (`O_NOFOLLOW | O_NONBLOCK`, so a FIFO cannot block)
    /// and judged by `fstat` of that descriptor: a regular file with one name is returned open,
    /// a directory opened; a link, a device, a FIFO or a hard-linked file is skipped unread.
    pub fn open_entry(&self, name: &str) -> Result<Entry, RunnerError> {
        let shown = self.shown.join(name);
        let err = |e: Errno| RunnerError::io("open", &shown)(e.into());
        check_name(name).map_err(err)?;
        // A look first only spares opening a device; the descriptor's type below decides.
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::CharacterDevice | FileType::BlockDevice => {
                    return Ok(Entry::Skipped("a device"));
                }
                _ => {}
            },
            Err(e) => return Err(err(e)),
        }
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = match rfs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::LOOP | Errno::MLINK) => return Ok(Entry::Skipped("a link")),
            Err(e) => return Err(err(e)),
        };
        let stat = rfs::fstat(&fd).map_err(err)?;
        Ok(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile if stat.st_nlink == 1 => Entry::File(File::from(fd)),
            FileType::RegularFile => Entry::Skipped("a file with more than one name"),
            FileType::Directory => Entry::Dir(Self { fd, shown }),
            _ => Entry::Skipped("not a regular file"),
        })
    }

    /// Where this directory is (for messages).
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// Replaces `name` with `bytes` (mode 0644) through a fresh temporary file and a rename:
    /// readers never see half a file, and nothing already at either name is opened.
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<(), RunnerError> {
        self.write_atomic_mode(name, bytes, 0o644)
    }

    /// Like [`SafeDir::write_atomic`], readable by the owner only (mode 0600 from creation).
    pub fn write_private(&self, name: &str, bytes: &[u8]) -> Result<(), RunnerError> {
        self.write_atomic_mode(name, bytes, 0o600)
    }

    fn write_atomic_mode(&self, name: &str, bytes: &[u8], mode: u32) -> Result<(), RunnerError> {
        let target = self.shown.join(name);
        let err = |e: std::io::Error| RunnerError::io("write", &target)(e);
        check_name(name).map_err(|e| err(e.into()))?;
        let (tmp, file) = self.create_temp(name, mode).map_err(|e| err(e.into()))?;
        let mut file = File::from(file);
        let written = file.write_all(bytes).and_then(|()| file.sync_data());
        let renamed = written.and_then(|()| {
            rfs::renameat(&self.fd, tmp.as_str(), &self.fd, name).map_err(Into::into)
        });
        if renamed.is_err() {
            let _ = rfs::unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
        }
        renamed.map_err(err)
    }

    /// A new, uniquely named file in this directory, created exclusively (never a planted one).
    fn create_temp(&self, name: &str, mode: u32) -> Result<(String, OwnedFd), Errno> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut last = Errno::EXIST;
        for _ in 0..16 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let tmp = format!(".{name}.{}.{n}.{nanos:x}.tmp", std::process::id());
            match rfs::openat(&self.fd, tmp.as_str(), flags, Mode::from_raw_mode(mode)) {
                Ok(fd) => return Ok((tmp, fd)),
                Err(e @ Errno::EXIST) => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// `name` opened for appending, created (mode 0600) if missing. Refuses a link, anything but
    /// a regular file (a FIFO is opened non-blocking, so it cannot hang the caller), and a file
    /// with more than one name (a hard link to something else).
    pub fn open_append(&self, name: &str) -> Result<File, RunnerError> {
        let target = self.shown.join(name);
        let err = |e: Errno| RunnerError::io("open the log", &target)(e.into());
        check_name(name).map_err(err)?;
        let flags = OFlags::WRONLY
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o600)).map_err(err)?;
        let stat = rfs::fstat(&fd).map_err(err)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || stat.st_nlink != 1 {
            return Err(err(Errno::PERM));
        }
        // Writes to a regular file never block; clear the flag the children would inherit.
        rfs::fcntl_setfl(&fd, OFlags::APPEND).map_err(err)?;
        Ok(File::from(fd))
    }

    /// The size of the regular file `name` (not following a link); `None` if there is none.
    pub fn size_of(&self, name: &str) -> Option<u64> {
        let stat = rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile)
            .then(|| u64::try_from(stat.st_size).unwrap_or(0))
    }

    /// Renames `from` to `to` within this directory (neither name is followed).
    pub fn rename(&self, from: &str, to: &str) -> Result<(), RunnerError> {
        let err = |e: Errno| RunnerError::io("rename", self.shown.join(from))(e.into());
        check_name(from)
            .and_then(|()| check_name(to))
            .map_err(err)?;
        rfs::renameat(&self.fd, from, &self.fd, to).map_err(err)
    }

    /// Removes the temporary files of [`SafeDir::write_atomic`] for `name` (`.{name}.*.tmp`) that
    /// a writer killed mid-write left behind. Call it only while no writer runs.
    pub fn remove_temps(&self, name: &str) -> Result<(), RunnerError> {
        let err = |e: Errno| RunnerError::io("clean", &self.shown)(e.into());
        check_name(name).map_err(err)?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let listing = rfs::openat(&self.fd, ".", flags, Mode::empty()).map_err(err)?;
        let prefix = format!(".{name}.");
        let mut stale = Vec::new();
        for entry in rfs::Dir::read_from(&listing).map_err(err)? {
            let entry = entry.map_err(err)?;
            if let Ok(file) = entry.file_name().to_str()
                && file.starts_with(&prefix)
                && file.ends_with(".tmp")
            {
                stale.push(file.to_owned());
            }
        }
        for file in stale {
            // Best effort: whatever cannot go (a planted directory) is only in the way of nobody.
            if let Err(e) = self.remove(&file) {
                tracing::warn!(error = %e, "could not remove a leftover temporary file");
            }
        }
        Ok(())
    }

    /// Removes the file (or link, FIFO, socket) `name` if present; never follows it and never
    /// removes a directory.
    pub fn remove(&self, name: &str) -> Result<(), RunnerError> {
        let err = |e: Errno| RunnerError::io("remove", self.shown.join(name))(e.into());
        check_name(name).map_err(err)?;
        match rfs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(err(e)),
        }
    }
}

/// Writes `bytes` to `path` atomically with [`SafeDir::write_atomic`], its directory opened
/// beneath `root` (a trusted directory `path` lies in) without following links.
pub fn write_beneath(root: &Path, path: &Path, bytes: &[u8]) -> Result<(), RunnerError> {
    let (dir, name) = split(root, path)?;
    SafeDir::open(root, &dir)?.write_atomic(&name, bytes)
}

/// Removes `path` (below the trusted `root`) with [`SafeDir::remove`]; absent is fine.
pub fn remove_beneath(root: &Path, path: &Path) -> Result<(), RunnerError> {
    let (dir, name) = split(root, path)?;
    match SafeDir::open(root, &dir) {
        Ok(dir) => dir.remove(&name),
        Err(RunnerError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The contents of the regular file `path` (at most `limit` bytes are read), opened
/// `O_NOFOLLOW | O_NONBLOCK`: a link at the final name is refused and a FIFO cannot block the
/// reader (a marker in `.oxydra/` could be planted by `oxydra-vm`, which the runner does not trust
/// more than that). Absent files give `NotFound`.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    read_checked(path, limit, false).map(|(bytes, _)| bytes)
}

/// [`read_regular`] for a secret: a file group or others may access is first set to mode 0600
/// (through the open descriptor). Returns the bytes and whether the mode was tightened.
pub fn read_private(path: &Path, limit: u64) -> std::io::Result<(Vec<u8>, bool)> {
    read_checked(path, limit, true)
}

fn read_checked(path: &Path, limit: u64, private: bool) -> std::io::Result<(Vec<u8>, bool)> {
    use std::io::Read;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rfs::open(path, flags, Mode::empty())?;
    let stat = rfs::fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    let tightened = private && stat.st_mode & 0o077 != 0;
    if tightened {
        rfs::fchmod(&fd, Mode::from_raw_mode(0o600))?;
    }
    let mut bytes = Vec::new();
    File::from(fd).take(limit).read_to_end(&mut bytes)?;
    Ok((bytes, tightened))
}

/// Removes what an interrupted [`SafeDir::write_atomic`] of `path` (below the trusted `root`)
/// left behind, best effort: a directory that is missing or cannot be opened holds none.
pub fn remove_temps_beneath(root: &Path, path: &Path) -> Result<(), RunnerError> {
    let (dir, name) = split(root, path)?;
    match SafeDir::open(root, &dir) {
        Ok(dir) => dir.remove_temps(&name),
        Err(_) => Ok(()),
    }
}

/// `path` below `root` as (directory relative to `root`, final name).
fn split(root: &Path, path: &Path) -> Result<(PathBuf, String), RunnerError> {
    let invalid = || RunnerError::io("write", path)(Errno::INVAL.into());
    let rel = path.strip_prefix(root).map_err(|_| invalid())?;
    let name = rel
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(invalid)?;
    let dir = rel.parent().unwrap_or(Path::new("")).to_owned();
    Ok((dir, name.to_owned()))
}

/// One plain file name: not empty, no `/`, not `.` or `..`.
fn check_name(name: &str) -> Result<(), Errno> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(Errno::INVAL);
    }
    Ok(())
}

/// The components of `rel` if all are plain names (no root, `.` or `..`).
fn plain_names(rel: &Path) -> Option<Vec<String>> {
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => n.to_str().map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// `openat2` of `names` beneath `root`, refusing every link.
fn beneath(root: &OwnedFd, names: &[String]) -> Result<OwnedFd, Errno> {
    let joined = if names.is_empty() {
        ".".to_owned()
    } else {
        names.join("/")
    };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    rfs::openat2(root, joined.as_str(), flags, Mode::empty(), how)
}

/// One `openat(O_NOFOLLOW)` per component (creating missing ones when asked).
fn walk(root: BorrowedFd<'_>, names: &[String], missing: Missing) -> Result<OwnedFd, Errno> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut current = rfs::openat(root, ".", flags, Mode::empty())?;
    for name in names {
        let next = match rfs::openat(&current, name.as_str(), flags, Mode::empty()) {
            Err(Errno::NOENT) => match missing {
                Missing::Fail => Err(Errno::NOENT),
                Missing::Create(mode) => {
                    match rfs::mkdirat(&current, name.as_str(), Mode::from_raw_mode(mode)) {
                        Ok(()) | Err(Errno::EXIST) => {
                            rfs::openat(&current, name.as_str(), flags, Mode::empty())
                        }
                        Err(e) => Err(e),
                    }
                }
            },
            other => other,
        };
        current = next?;
    }
    Ok(current)
}

#[cfg(test)]
#[path = "beneath_tests.rs"]
mod tests;
