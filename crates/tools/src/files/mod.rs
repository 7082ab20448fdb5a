//! The file tools and what they share: argument parsing, blocking I/O off the async executor,
//! bounded text reads and atomic replacement through directory descriptors.

mod delete;
mod edit;
mod list;
mod read;
mod search;
mod walk;
mod write;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ToolError;
use crate::policy::{RULE_SYMLINK, SafePath, map_errno, type_at};

pub use delete::FileDelete;
pub use edit::FileEdit;
pub use list::FileList;
pub use read::FileRead;
pub use search::FileSearch;
pub use write::FileWrite;

/// Largest file `file_read` and `file_edit` will load, and `file_write` will write.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Deserialises already-validated arguments into the tool's struct.
pub(crate) fn parse<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    serde_json::from_value(args.clone())
        .map_err(|e| ToolError::invalid("arguments", format!("valid for this tool ({e})")))
}

/// Runs file-system work on the blocking pool so a slow disk cannot stall other turns.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::execution_with("the file operation stopped unexpectedly", e))?
}

/// Reads a whole regular file as UTF-8 text, refusing files over `MAX_FILE_BYTES` and binaries.
pub(crate) fn read_text(mut file: File, path: &SafePath) -> Result<String, ToolError> {
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            ToolError::execution_with(format!("could not read `{}`", path.display()), e)
        })?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ToolError::execution(format!(
            "`{}` is larger than {} KiB; file tools handle text files up to that size",
            path.display(),
            MAX_FILE_BYTES / 1024
        )));
    }
    let binary = || {
        ToolError::execution(format!(
            "`{}` looks like a binary file; file tools handle UTF-8 text only",
            path.display()
        ))
    };
    if bytes.contains(&0) {
        return Err(binary());
    }
    String::from_utf8(bytes).map_err(|_| binary())
}

/// Opens the regular file `name` in `dir` for reading, refusing links and special files.
pub(crate) fn open_file_in(dir: &OwnedFd, name: &str, path: &SafePath) -> Result<File, ToolError> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rfs::openat(dir, name, flags, Mode::empty()).map_err(|e| map_errno(e, path))?;
    let stat = rfs::fstat(&fd).map_err(|e| map_errno(e, path))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok(File::from(fd)),
        FileType::Directory => Err(ToolError::invalid(
            "path",
            format!("a file, but `{}` is a directory", path.display()),
        )),
        _ => Err(ToolError::denied(format!(
            "`{}` is not a regular file",
            path.display()
        ))),
    }
}

/// What an atomic write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    Created,
    Replaced,
}

/// How many fresh temporary names a write tries before it gives up.
const TEMP_ATTEMPTS: usize = 8;

/// A temporary name nobody can guess: `.oxydra-tmp-` and 64 random bits. The shell writes the
/// same directories (`shared/`, `tmp/`); a name made of the process id and a counter let it
/// plant every name the next writes would take, so that each of them failed.
fn temp_name() -> Result<String, ToolError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| ToolError::execution(format!("could not make a temporary file name ({e})")))?;
    Ok(format!(".oxydra-tmp-{:016x}", u64::from_le_bytes(bytes)))
}

/// A new temporary file in `dir`, created exclusively (never a file, link or directory someone
/// planted), under a fresh random name each attempt.
fn create_temp(dir: &OwnedFd, mode: u32, path: &SafePath) -> Result<(String, OwnedFd), ToolError> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut last = rustix::io::Errno::EXIST;
    for _ in 0..TEMP_ATTEMPTS {
        let temp = temp_name()?;
        match rfs::openat(dir, temp.as_str(), flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => return Ok((temp, fd)),
            Err(e @ rustix::io::Errno::EXIST) => last = e,
            Err(e) => return Err(map_errno(e, path)),
        }
    }
    Err(map_errno(last, path))
}

/// Writes `bytes` to `name` in `dir` atomically: a temporary file in the same directory, synced,
/// then renamed over the name. An existing file keeps its permission bits; a symlink or directory
/// at the name is refused.
pub(crate) fn write_atomic(
    dir: &OwnedFd,
    name: &str,
    bytes: &[u8],
    path: &SafePath,
) -> Result<Written, ToolError> {
    let existing = type_at(dir.as_fd(), name).map_err(|e| map_errno(e, path))?;
    let (written, mode) = match existing {
        None => (Written::Created, 0o644),
        Some((FileType::RegularFile, stat)) => (Written::Replaced, stat.st_mode & 0o777),
        Some((FileType::Symlink, _)) => return Err(ToolError::denied(RULE_SYMLINK)),
        Some((FileType::Directory, _)) => {
            return Err(ToolError::invalid(
                "path",
                format!("a file, but `{}` is a directory", path.display()),
            ));
        }
        Some(_) => {
            return Err(ToolError::denied(format!(
                "`{}` is not a regular file",
                path.display()
            )));
        }
    };
    let (temp, fd) = create_temp(dir, mode, path)?;
    let result = fill_and_rename(File::from(fd), dir, &temp, name, bytes, mode, path);
    if result.is_err() {
        let _ = rfs::unlinkat(dir, temp.as_str(), AtFlags::empty());
    }
    result.map(|()| written)
}

fn fill_and_rename(
    mut file: File,
    dir: &OwnedFd,
    temp: &str,
    name: &str,
    bytes: &[u8],
    mode: u32,
    path: &SafePath,
) -> Result<(), ToolError> {
    let io_err = |e| ToolError::execution_with(format!("could not write `{}`", path.display()), e);
    file.write_all(bytes).map_err(io_err)?;
    // The creation mode was filtered by the umask; restore an existing file's bits exactly.
    rfs::fchmod(&file, Mode::from_raw_mode(mode)).map_err(|e| map_errno(e, path))?;
    file.sync_data().map_err(io_err)?;
    drop(file);
    rfs::renameat(dir, temp, dir, name).map_err(|e| map_errno(e, path))
}

/// `(n lines)` wording used in tool results.
pub(crate) fn line_count(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.lines().count()
    }
}
