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
/// refused).
pub fn stored_key(
    workspace_root: &Path,
    user: &UserId,
) -> Result<Option<EncryptionKey>, RunnerError> {
    let path = memory_key_path(workspace_root, user);
    let bytes = match crate::beneath::read_regular(&path, 4096) {
        Ok(bytes) => bytes,
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
    } else if enc.enabled {
        Ok(user_key(enc, workspace_root, user)?.map(|k| k.key))
    } else {
        stored_key(workspace_root, user)
    }
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
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn alice() -> UserId {
        UserId::parse("alice").unwrap()
    }

    #[test]
    fn a_key_file_is_created_once_private_and_destroyed() {
        let root = tempfile::tempdir().unwrap();
        let enc = MemoryEncryption {
            enabled: true,
            key_command: None,
        };
        let first = user_key(&enc, root.path(), &alice()).unwrap().unwrap();
        assert!(first.created);
        let path = memory_key_path(root.path(), &alice());
        assert_eq!(path, root.path().join(".runner/alice/memory.key"));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let again = user_key(&enc, root.path(), &alice()).unwrap().unwrap();
        assert!(!again.created);
        assert_eq!(again.key, first.key);
        assert!(destroy_key(root.path(), &alice()).unwrap());
        assert!(!path.exists());
        assert!(!destroy_key(root.path(), &alice()).unwrap());
        let off = MemoryEncryption::default();
        assert!(user_key(&off, root.path(), &alice()).unwrap().is_none());
    }

    #[test]
    fn a_key_command_supplies_the_key_and_its_failures_are_clear() {
        let root = tempfile::tempdir().unwrap();
        let hex = "ab".repeat(32);
        let enc = |cmd: &str| MemoryEncryption {
            enabled: true,
            key_command: Some(cmd.to_owned()),
        };
        let got = user_key(&enc(&format!("echo {hex}")), root.path(), &alice())
            .unwrap()
            .unwrap();
        assert_eq!(got.key.expose(), hex);
        assert!(
            !memory_key_path(root.path(), &alice()).exists(),
            "nothing stored"
        );
        // The command learns whose key is asked for.
        let user = user_key(
            &enc("printf '%s' \"$OXYDRA_USER\"; printf 'x%.0s' $(seq 40)"),
            root.path(),
            &alice(),
        )
        .unwrap()
        .unwrap();
        assert!(user.key.expose().starts_with("alicex"));
        for (cmd, says) in [("exit 3", "failed"), ("echo short", "not a key")] {
            let err = user_key(&enc(cmd), root.path(), &alice()).unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
    }

    #[test]
    fn memory_encryption_is_read_and_checked() {
        let c = parse_config(
            "[memory_encryption]\nenabled = true\nkey_command = \"pass show k\"\n[users.a]\n",
        )
        .unwrap();
        assert!(c.memory_encryption.enabled);
        assert_eq!(
            c.memory_encryption.key_command.as_deref(),
            Some("pass show k")
        );
        for (text, says) in [
            (
                "[memory_encryption]\nkey_command = \"x\"\n",
                "enabled is not true",
            ),
            ("[memory_encryption]\nenable = true\n", "enable"),
        ] {
            let err = parse_config(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    fn parse_config(text: &str) -> Result<crate::RunnerConfig, String> {
        crate::RunnerConfig::parse(text, Path::new("/etc/oxydra/runner.toml"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_planted_link_is_not_read_as_the_key() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(".runner/alice");
        std::fs::create_dir_all(&dir).unwrap();
        let elsewhere = root.path().join("elsewhere");
        std::fs::write(&elsewhere, "cd".repeat(32)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join(MEMORY_KEY_FILE)).unwrap();
        assert!(stored_key(root.path(), &alice()).is_err());
    }
}
