//! Per-user memory encryption keys (`[memory_encryption]` in `runner.toml`).
//!
//! The runner holds each user's key in `<workspace_root>/.runner/<user>/memory.key` (mode 0600,
//! directory 0700, outside every workspace: no guest of either tier mounts or may read it), or
//! fetches it from the operator's `key_command` (nothing stored). It hands the key to the user's
//! `oxydra-vm` in the bootstrap (stdin in the process tier), so the key never lands on a guest's
//! filesystem. Destroying the key file destroys the data (`runner forget`).

use std::path::{Path, PathBuf};
use std::process::Command;

use memory::EncryptionKey;
use serde::Deserialize;
use types::{AgentConfig, UserId, WorkspacePaths};

use crate::{RUNNER_DIR, RunnerError, SafeDir};

/// The key file's name in `<workspace_root>/.runner/<user>/`.
pub const MEMORY_KEY_FILE: &str = "memory.key";
/// Bytes of randomness in a key the runner creates (written as 64 hex digits).
const KEY_BYTES: usize = 32;

/// `[memory_encryption]` as written in `runner.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMemoryEncryption {
    enabled: Option<bool>,
    key_command: Option<String>,
}

/// Whether users' local memory files (and replicas) are encrypted at rest, and where keys come
/// from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryEncryption {
    pub enabled: bool,
    /// Prints the user's key on stdout (run with `sh -c`, `OXYDRA_USER` set to the user id);
    /// without it the runner creates and keeps a key file per user.
    pub key_command: Option<String>,
}

impl RawMemoryEncryption {
    pub(crate) fn resolve(self) -> Result<MemoryEncryption, String> {
        let key_command = self.key_command.filter(|c| !c.trim().is_empty());
        let enabled = self.enabled.unwrap_or(false);
        if key_command.is_some() && !enabled {
            return Err("[memory_encryption] key_command is set but enabled is not true".into());
        }
        Ok(MemoryEncryption {
            enabled,
            key_command,
        })
    }
}

/// `<workspace_root>/.runner/<user>/memory.key`.
pub fn memory_key_path(workspace_root: &Path, user: &UserId) -> PathBuf {
    workspace_root.join(key_dir(user)).join(MEMORY_KEY_FILE)
}

fn key_dir(user: &UserId) -> PathBuf {
    Path::new(RUNNER_DIR).join(user.as_str())
}

/// The user's key: `None` when encryption is off. With `key_command`, what it prints; otherwise
/// the key file, created with a fresh random key when missing (`created` tells which).
pub fn user_key(
    enc: &MemoryEncryption,
    workspace_root: &Path,
    user: &UserId,
) -> Result<Option<UserKey>, RunnerError> {
    if !enc.enabled {
        return Ok(None);
    }
    if let Some(command) = &enc.key_command {
        let key = run_key_command(command, user)?;
        return Ok(Some(UserKey {
            key,
            created: false,
        }));
    }
    if let Some(key) = stored_key(workspace_root, user)? {
        return Ok(Some(UserKey {
            key,
            created: false,
        }));
    }
    let key = new_key()?;
    store_key(workspace_root, user, &key)?;
    Ok(Some(UserKey { key, created: true }))
}

/// A user's key and whether it was just created (so no database was encrypted with it yet).
#[derive(Debug, Clone)]
pub struct UserKey {
    pub key: EncryptionKey,
    pub created: bool,
}

/// The key in the user's key file, if there is one (a link or anything but a regular file is
/// refused). A key file that group or others may read (say 0644 after a copy) is set to 0600,
/// with a warning, before it is used.
pub fn stored_key(
    workspace_root: &Path,
    user: &UserId,
) -> Result<Option<EncryptionKey>, RunnerError> {
    let path = memory_key_path(workspace_root, user);
    let bytes = match crate::beneath::read_private(&path, 4096) {
        Ok((bytes, tightened)) => {
            if tightened {
                tracing::warn!(
                    path = %path.display(),
                    "the memory key file was readable by others: its mode is now 0600"
                );
            }
            bytes
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RunnerError::io("read the memory key", &path)(e)),
    };
    let text = String::from_utf8_lossy(&bytes);
    EncryptionKey::parse(&text)
        .map(Some)
        .map_err(|e| RunnerError::MemoryKey(format!("{}: {e}", path.display())))
}

/// A fresh random key (64 hex digits).
pub fn new_key() -> Result<EncryptionKey, RunnerError> {
    let mut bytes = [0u8; KEY_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| {
        RunnerError::io("create a memory key in", Path::new(RUNNER_DIR))(std::io::Error::other(
            e.to_string(),
        ))
    })?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    EncryptionKey::parse(&hex).map_err(|e| RunnerError::MemoryKey(e.to_string()))
}

/// Writes `key` as the user's key file (mode 0600, atomically, following no link), creating
/// `.runner/<user>/` (mode 0700) when missing.
pub fn store_key(
    workspace_root: &Path,
    user: &UserId,
    key: &EncryptionKey,
) -> Result<(), RunnerError> {
    let dir = SafeDir::create(workspace_root, &key_dir(user), 0o700)?;
    dir.write_private(MEMORY_KEY_FILE, format!("{}\n", key.expose()).as_bytes())
}

/// Removes the user's key file (what remains of an encrypted database is unreadable noise).
/// Returns whether there was one.
pub fn destroy_key(workspace_root: &Path, user: &UserId) -> Result<bool, RunnerError> {
    let path = memory_key_path(workspace_root, user);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(false);
    }
    let dir = SafeDir::open(workspace_root, &key_dir(user))?;
    dir.remove(MEMORY_KEY_FILE)?;
    Ok(true)
}

/// The mark `runner forget` leaves: `<workspace_root>/.runner/<user>/forgotten`, holding when.
const FORGOTTEN_FILE: &str = "forgotten";

/// Records that `user`'s memory was forgotten (now), so that a memory command does not quietly
/// make a new, empty store in its place.
pub fn mark_forgotten(workspace_root: &Path, user: &UserId) -> Result<(), RunnerError> {
    let dir = SafeDir::create(workspace_root, &key_dir(user), 0o700)?;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    dir.write_private(FORGOTTEN_FILE, now.as_bytes())
}

/// When `user`'s memory was forgotten, if it was and nothing started it afresh since.
pub fn forgotten_at(workspace_root: &Path, user: &UserId) -> Option<String> {
    let path = workspace_root.join(key_dir(user)).join(FORGOTTEN_FILE);
    std::fs::read_to_string(path)
        .ok()
        .map(|t| t.trim().to_owned())
}

/// Clears the mark of [`mark_forgotten`]: the user's memory starts afresh.
pub fn clear_forgotten(workspace_root: &Path, user: &UserId) -> Result<(), RunnerError> {
    match SafeDir::open(workspace_root, &key_dir(user)) {
        Ok(dir) => dir.remove(FORGOTTEN_FILE),
        Err(RunnerError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Where the user's memory lives, as far as keys are concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryPlace {
    /// Memory is off: no store, no key.
    Disabled,
    /// A local file (encrypted at rest when keys are on).
    Local(PathBuf),
    /// A replica file of a server's database (encrypted at rest when keys are on).
    Replica(PathBuf),
    /// A server only: its storage is the server's; no key applies.
    Server,
}

impl MemoryPlace {
    pub fn of(agent: &AgentConfig, ws: &WorkspacePaths) -> Self {
        let memory = &agent.memory;
        let file = || memory.db_path.resolve(&ws.root);
        match (memory.enabled, memory.remote_url.is_some(), memory.replica) {
            (false, _, _) => MemoryPlace::Disabled,
            (true, false, _) => MemoryPlace::Local(file()),
            (true, true, true) => MemoryPlace::Replica(file()),
            (true, true, false) => MemoryPlace::Server,
        }
    }
}

/// The key `user`'s agent is started with: `None` when encryption is off or no file of the
/// user's memory is on this host. Before it is handed over, the file is made to fit it: an
/// unencrypted local database is encrypted in place (every note kept), and a replica file that
/// is not encrypted is removed (a copy: the first sync makes it again, encrypted).
pub async fn key_for_agent(
    enc: &MemoryEncryption,
    workspace_root: &Path,
    user: &UserId,
    place: &MemoryPlace,
) -> Result<Option<EncryptionKey>, RunnerError> {
    let file = match place {
        MemoryPlace::Local(file) | MemoryPlace::Replica(file) => file,
        MemoryPlace::Disabled | MemoryPlace::Server => return Ok(None),
    };
    if key_lost(enc, workspace_root, user, file)? {
        match place {
            // A copy of the server's database: the first sync makes it again with the new key.
            MemoryPlace::Replica(_) => {
                tracing::warn!(%user, "memory: the replica's key is missing; removing the replica file, it is synced again");
                remove_database_files(workspace_root, file)?;
            }
            _ => return Err(lost_key_error(workspace_root, user, file)),
        }
    }
    let Some(UserKey { key, .. }) = user_key(enc, workspace_root, user)? else {
        return Ok(None);
    };
    if is_plaintext_db(file) {
        match place {
            MemoryPlace::Replica(_) => {
                tracing::info!(%user, "memory: removing the unencrypted replica file; it is synced again, encrypted");
                remove_database_files(workspace_root, file)?;
            }
            _ => {
                // Run as root, this rewrites the file: never one the agent linked here.
                crate::check_db_links(place, workspace_root)?;
                tracing::info!(%user, "memory: encrypting the existing memory database at rest");
                memory::change_key(file, None, Some(&key))
                    .await
                    .map_err(RunnerError::Memory)?;
            }
        }
    }
    Ok(Some(key))
}

/// The key `runner memory ...` opens the user's local file with (a replica is reached on its
/// server by the CLI, so no key applies). An unencrypted file is opened as it is (the agent's
/// next start encrypts it); a key file left from before encryption was turned off still opens
/// the file it encrypted (`runner memory rekey` decrypts it).
pub fn key_for_cli(
    enc: &MemoryEncryption,
    workspace_root: &Path,
    user: &UserId,
    place: &MemoryPlace,
) -> Result<Option<EncryptionKey>, RunnerError> {
    let MemoryPlace::Local(file) = place else {
        return Ok(None);
    };
    if is_plaintext_db(file) {
        Ok(None)
    } else if key_lost(enc, workspace_root, user, file)? {
        Err(lost_key_error(workspace_root, user, file))
    } else if enc.enabled {
        Ok(user_key(enc, workspace_root, user)?.map(|k| k.key))
    } else {
        stored_key(workspace_root, user)
    }
}

/// True when `file` is an encrypted database and the key file that opened it is gone (keys from
/// the runner's file, not a `key_command`): a new key would only make it unreadable for good.
fn key_lost(
    enc: &MemoryEncryption,
    workspace_root: &Path,
    user: &UserId,
    file: &Path,
) -> Result<bool, RunnerError> {
    let encrypted = memory::is_plaintext(file) == Some(false);
    Ok(enc.enabled
        && enc.key_command.is_none()
        && encrypted
        && stored_key(workspace_root, user)?.is_none())
}

fn lost_key_error(workspace_root: &Path, user: &UserId, file: &Path) -> RunnerError {
    RunnerError::MemoryKey(format!(
        "the memory database {} is encrypted but its key {} is missing; nothing was changed. \
         Restore the key file from a backup (mode 0600), or destroy the unreadable data with \
         `runner --user {user} forget`",
        file.display(),
        memory_key_path(workspace_root, user).display()
    ))
}

/// True when `file` is an SQLite database whose header can be read (not encrypted).
pub fn is_plaintext_db(file: &Path) -> bool {
    memory::is_plaintext(file) == Some(true)
}

/// The files of a local database or replica at `file`: the database, its journals and libsql's
/// replication metadata.
pub fn database_files(file: &Path) -> Vec<PathBuf> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    ["", "-wal", "-shm", "-journal", "-info", "-client_wal_index"]
        .iter()
        .map(|suffix| file.with_file_name(format!("{name}{suffix}")))
        .collect()
}

/// Removes every file of the database at `file` (below the trusted `workspace_root`), following
/// no link on the way.
pub fn remove_database_files(workspace_root: &Path, file: &Path) -> Result<(), RunnerError> {
    for path in database_files(file) {
        crate::remove_beneath(workspace_root, &path)?;
    }
    Ok(())
}

fn run_key_command(command: &str, user: &UserId) -> Result<EncryptionKey, RunnerError> {
    let problem = |problem: String| RunnerError::MemoryKey(format!("key_command: {problem}"));
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("OXYDRA_USER", user.as_str())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| problem(format!("cannot run it: {e}")))?;
    if !out.status.success() {
        return Err(problem(format!(
            "it failed ({}) for user {user}",
            out.status
        )));
    }
    EncryptionKey::parse(&String::from_utf8_lossy(&out.stdout))
        .map_err(|e| problem(format!("its output for user {user} is not a key: {e}")))
}

#[cfg(test)]
#[path = "memory_key_tests.rs"]
mod tests;
