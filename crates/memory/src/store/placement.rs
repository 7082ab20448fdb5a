//! Where the database is: the user's local file (and the one-time legacy move) or a remote server.

use std::path::{Path, PathBuf};

use types::{DbPath, MemoryConfig, WorkspacePaths};

use crate::error::MemoryError;
use crate::store::worker::Target;

/// Where an older Oxydra kept its database: `<dir>/.oxydra/memory.db` relative to the process's
/// working directory. A database found there is moved once to the user's workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LegacyDir {
    /// The process's current working directory (what `open` uses).
    #[default]
    CurrentDir,
    /// This directory instead (tests, tools that changed directory).
    Dir(PathBuf),
    /// Do not look for a legacy database.
    Skip,
}

impl LegacyDir {
    fn resolve(&self) -> Option<PathBuf> {
        match self {
            LegacyDir::CurrentDir => std::env::current_dir().ok(),
            LegacyDir::Dir(dir) => Some(dir.clone()),
            LegacyDir::Skip => None,
        }
    }
}

/// The connection target for `config` and the user whose workspace root is `user_root`. For a local
/// file this creates the parent directories and performs the legacy move when it applies.
pub(crate) fn target(
    config: &MemoryConfig,
    user_root: &Path,
    legacy: &LegacyDir,
) -> Result<Target, MemoryError> {
    if let Some(url) = &config.remote_url {
        crate::store::remote::check_url(url)?;
        let token = match &config.auth_token_env {
            Some(var) => std::env::var(var)
                .ok()
                .filter(|t| !t.is_empty())
                .ok_or_else(|| MemoryError::MissingAuthToken { var: var.clone() })?,
            // A server without authentication (e.g. a local sqld).
            None => String::new(),
        };
        if config.replica {
            let path = config.db_path.resolve(user_root);
            create_parent(&path)?;
            return Ok(Target::Replica {
                path,
                url: url.clone(),
                token,
                key: None,
            });
        }
        return Ok(Target::Remote {
            url: url.clone(),
            token,
        });
    }
    let path = config.db_path.resolve(user_root);
    let is_default = config.db_path == DbPath::Auto
        || path == WorkspacePaths::new(user_root).default_memory_db();
    if is_default && let Some(dir) = legacy.resolve() {
        move_legacy_db(&path, &dir)?;
    }
    create_parent(&path)?;
    Ok(Target::Local { path, key: None })
}

pub(crate) fn create_parent(path: &Path) -> Result<(), MemoryError> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => std::fs::create_dir_all(parent)
            .map_err(MemoryError::io("creating the memory directory")),
        _ => Ok(()),
    }
}

/// Moves `<legacy_dir>/.oxydra/memory.db` (with its `-wal` and `-shm`) to `target` when `target`
/// does not exist and the legacy file does. Returns whether it moved anything.
///
/// The side files move first and the main file last: an interrupted move leaves the legacy database
/// in place and is completed by the next open.
pub(crate) fn move_legacy_db(target: &Path, legacy_dir: &Path) -> Result<bool, MemoryError> {
    let legacy = legacy_dir.join(".oxydra").join("memory.db");
    if target.exists() || !legacy.is_file() {
        return Ok(false);
    }
    if same_file(&legacy, target) {
        return Ok(false);
    }
    create_parent(target)?;
    for suffix in ["-wal", "-shm"] {
        let from = with_suffix(&legacy, suffix);
        if from.exists() {
            move_file(&from, &with_suffix(target, suffix))?;
        }
    }
    move_file(&legacy, target)?;
    tracing::warn!(
        from = %legacy.display(),
        to = %target.display(),
        "moved the memory database from its old location (relative to the working directory) into the user's workspace"
    );
    Ok(true)
}

fn same_file(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| {
        p.parent()
            .and_then(|d| d.canonicalize().ok())
            .map(|d| d.join(p.file_name().unwrap_or_default()))
    };
    matches!((canon(a), canon(b)), (Some(x), Some(y)) if x == y)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Rename, or copy and remove when the two paths are on different filesystems.
fn move_file(from: &Path, to: &Path) -> Result<(), MemoryError> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    copy_new(from, to).map_err(MemoryError::io("moving the legacy memory database"))?;
    std::fs::remove_file(from).map_err(MemoryError::io("moving the legacy memory database"))
}

/// Copies `from` to a new file `to`. Never through a link at `to`: the runner moves a legacy
/// database as root into a workspace the agent can write, where a link planted at the database's
/// place (even a dangling one) would have the copy create or overwrite the file it points to.
fn copy_new(from: &Path, to: &Path) -> std::io::Result<u64> {
    let mut source = std::fs::File::open(from)?;
    let mut copy = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    std::io::copy(&mut source, &mut copy)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    /// The copy of a move across filesystems writes a new file, and refuses a link planted at
    /// its place, dangling or not, leaving what it points to untouched.
    #[test]
    fn the_copy_never_writes_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("legacy.db");
        std::fs::write(&from, b"the user's notes").unwrap();
        let to = dir.path().join("memory.db");
        assert_eq!(copy_new(&from, &to).unwrap(), 16);
        assert_eq!(std::fs::read(&to).unwrap(), b"the user's notes");
        let (elsewhere, kept) = (dir.path().join("planted.db"), dir.path().join("kept.db"));
        std::fs::write(&kept, b"another user's notes").unwrap();
        for pointed in [&elsewhere, &kept] {
            let link = dir.path().join("linked.db");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(pointed, &link).unwrap();
            assert!(copy_new(&from, &link).is_err(), "{}", pointed.display());
        }
        assert!(!elsewhere.exists());
        assert_eq!(std::fs::read(&kept).unwrap(), b"another user's notes");
    }
}
