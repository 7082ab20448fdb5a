//! Looking at and repairing what is in a [`SafeDir`] without following a name: what a name is
//! ([`SafeDir::entry`]), subdirectories, modes, and moving an entry aside — what healing
//! (`crate::heal`) does in a workspace the shell can write.

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::os::fd::OwnedFd;

use super::{SafeDir, check_name};
use crate::RunnerError;

/// What [`SafeDir::entry`] found at a name (never following it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub kind: FileType,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    pub links: u64,
}

impl SafeDir {
    /// The subdirectory `name`, opened without following a link (refused if it is one).
    pub fn sub(&self, name: &str) -> Result<Self, RunnerError> {
        let shown = self.shown.join(name);
        let err = |e: Errno| RunnerError::io("open the directory", &shown)(e.into());
        check_name(name).map_err(err)?;
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::empty()).map_err(err)?;
        Ok(Self { fd, shown })
    }

    /// What is at `name` (a link is reported as a link); `None` when nothing is.
    pub fn entry(&self, name: &str) -> Option<Found> {
        check_name(name).ok()?;
        let stat = rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(Found {
            kind: FileType::from_raw_mode(stat.st_mode),
            mode: stat.st_mode & 0o7777,
            links: stat.st_nlink,
        })
    }

    /// Creates the directory `name` with `mode` (exactly: the umask does not apply).
    pub fn mkdir(&self, name: &str, mode: u32) -> Result<(), RunnerError> {
        let err = |e: Errno| RunnerError::io("create", self.shown.join(name))(e.into());
        check_name(name).map_err(err)?;
        rfs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode)).map_err(err)?;
        self.sub(name)?.set_mode(mode)
    }

    /// This directory's permission bits.
    pub fn mode(&self) -> Result<u32, RunnerError> {
        let stat =
            rfs::fstat(&self.fd).map_err(|e| RunnerError::io("inspect", &self.shown)(e.into()))?;
        Ok(stat.st_mode & 0o7777)
    }

    /// Sets this directory's permission bits (through its descriptor: no name is resolved again).
    pub fn set_mode(&self, mode: u32) -> Result<(), RunnerError> {
        chmod_fd(&self.fd, mode).map_err(|e| RunnerError::io("chmod", &self.shown)(e.into()))
    }

    /// Sets the permission bits of the regular file `name`, which must have one link (a link, a
    /// hard link to another file or anything else is refused, never followed).
    pub fn set_file_mode(&self, name: &str, mode: u32) -> Result<(), RunnerError> {
        let err = |e: Errno| RunnerError::io("chmod", self.shown.join(name))(e.into());
        check_name(name).map_err(err)?;
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::empty()).map_err(err)?;
        let stat = rfs::fstat(&fd).map_err(err)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || stat.st_nlink != 1 {
            return Err(err(Errno::PERM));
        }
        chmod_fd(&fd, mode).map_err(err)
    }

    /// Renames `name` here to `new_name` in `to` without following either and without replacing
    /// anything there.
    pub fn move_to(&self, name: &str, to: &SafeDir, new_name: &str) -> Result<(), RunnerError> {
        let err = |e: Errno| RunnerError::io("move aside", self.shown.join(name))(e.into());
        check_name(name)
            .and_then(|()| check_name(new_name))
            .map_err(err)?;
        rfs::renameat_with(
            &self.fd,
            name,
            &to.fd,
            new_name,
            rfs::RenameFlags::NOREPLACE,
        )
        .map_err(err)
    }
}

/// `chmod` of what `fd` (an `O_PATH` descriptor) names, through `/proc/self/fd`: the inode
/// already opened, whatever the path to it has become since.
fn chmod_fd(fd: &OwnedFd, mode: u32) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    rfs::chmod(path.as_str(), Mode::from_raw_mode(mode))
}
