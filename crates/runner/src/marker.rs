//! The files a running user leaves behind — endpoint, health, supervisor — written atomically.
//!
//! Where each lives is a security decision: the shell can write `ipc/` (its socket is there) and
//! `logs/`, so nothing a trusted reader acts on lives there. The endpoint the runner and the TUI
//! use (they send the token to it), the health file and the runner marker (`stop` signals the
//! pids in it) are in `.oxydra/`, which the shell can neither see nor forge. `ipc/` holds only a
//! public copy of the endpoint, informational. The runner's copies of the guests' logs are in
//! `<workspace_root>/.runner/<user>/logs/`, outside every workspace, where only the runner writes.
//! Every write goes through [`crate::beneath`]: no link, FIFO or hard link planted at any of
//! these names is ever opened. None of these files holds a secret.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use types::WorkspacePaths;

use crate::RunnerError;
use crate::beneath::SafeDir;

/// `.oxydra/health.json`, written by `oxydra-vm` at start and refreshed while it runs.
pub const HEALTH_FILE: &str = "health.json";
/// A marker larger than this is not read past it (they are a few hundred bytes).
const MAX_MARKER_BYTES: u64 = 1024 * 1024;

/// `.oxydra/runner.json`, written by the runner supervising the user.
pub const RUNNER_MARKER: &str = "runner.json";

/// `.oxydra/runner.json`: the supervising runner and its children.
pub fn runner_marker_path(ws: &WorkspacePaths) -> PathBuf {
    ws.internal().join(RUNNER_MARKER)
}

/// `<workspace_root>/.runner/`: the runner's own files about its users. User ids never start
/// with `.`, so this is no user's workspace, and no guest of either tier can reach it.
pub const RUNNER_DIR: &str = ".runner";

/// `.oxydra/health.json`.
pub fn health_path(ws: &WorkspacePaths) -> PathBuf {
    ws.internal().join(HEALTH_FILE)
}

/// The directory holding every workspace, and this one's user id.
fn root_and_user(ws: &WorkspacePaths) -> (PathBuf, PathBuf) {
    let user = ws.root.file_name().map(PathBuf::from).unwrap_or_default();
    let root = ws.root.parent().map(Path::to_owned).unwrap_or_default();
    (root, user)
}

/// `<workspace_root>/.runner/<user>/logs`, relative to the workspace root.
fn runner_logs_rel(ws: &WorkspacePaths) -> (PathBuf, PathBuf) {
    let (root, user) = root_and_user(ws);
    (root, Path::new(RUNNER_DIR).join(user).join("logs"))
}

/// `<workspace_root>/.runner/<user>/logs/`: where the runner keeps its copies of the guests'
/// output (and a detached runner's own log). Only the runner writes there.
pub fn runner_logs(ws: &WorkspacePaths) -> PathBuf {
    let (root, rel) = runner_logs_rel(ws);
    root.join(rel)
}

/// `<workspace_root>/.runner/<user>/logs/<role>.log`.
pub fn runner_log_path(ws: &WorkspacePaths, role: &str) -> PathBuf {
    runner_logs(ws).join(format!("{role}.log"))
}

/// The directory of [`runner_log_path`], created (mode 0700) and opened without following links.
pub fn runner_log_dir(ws: &WorkspacePaths) -> Result<SafeDir, RunnerError> {
    let (root, rel) = runner_logs_rel(ws);
    SafeDir::create(&root, &rel, 0o700)
}

/// What `oxydra-vm` writes while it runs (and removes when it stops): both endpoint copies and
/// the health file.
pub fn oxydra_vm_files(ws: &WorkspacePaths) -> [PathBuf; 3] {
    [ws.endpoint(), ws.public_endpoint(), health_path(ws)]
}

/// Every file a running user leaves behind: what `start` clears first and `stop` removes.
pub fn run_files(ws: &WorkspacePaths) -> [PathBuf; 5] {
    let [endpoint, public, health] = oxydra_vm_files(ws);
    [
        endpoint,
        public,
        health,
        types::shell_socket_path(ws),
        runner_marker_path(ws),
    ]
}

/// Where a user's gateway listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayMarker {
    /// `ws://127.0.0.1:PORT/`, `wss://` when the gateway serves TLS (the loopback address when
    /// it listens on every interface).
    pub url: String,
    /// The `oxydra-vm` process.
    pub pid: u32,
    /// RFC 3339.
    pub started_at: String,
}

impl GatewayMarker {
    /// `127.0.0.1:PORT` from the url.
    pub fn socket_addr(&self) -> Option<std::net::SocketAddr> {
        self.url
            .strip_prefix("ws://")
            .or_else(|| self.url.strip_prefix("wss://"))?
            .trim_end_matches('/')
            .parse()
            .ok()
    }

    /// Whether the gateway serves TLS (`wss://`).
    pub fn tls(&self) -> bool {
        self.url.starts_with("wss://")
    }
}

/// A short status of `oxydra-vm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// `ok`, or `degraded` when something below is not.
    pub status: String,
    pub user_id: String,
    pub memory: String,
    pub provider: String,
    pub shell: String,
    pub sandbox: String,
    pub updated_at: String,
    /// Each of the user's MCP servers' status line (`name (stdio): up, 3 tools`, or `down
    /// (restarting): why`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<String>,
}

impl Health {
    /// One line for `runner status` (naming the MCP servers that are not up, if any).
    pub fn summary(&self) -> String {
        let mut line = format!(
            "{} (memory {}, provider {}, shell {}, sandbox {})",
            self.status, self.memory, self.provider, self.shell, self.sandbox
        );
        let not_up: Vec<&str> = self
            .mcp_servers
            .iter()
            .filter(|s| !s.contains("): up"))
            .map(String::as_str)
            .collect();
        if !not_up.is_empty() {
            line.push_str("; MCP server ");
            line.push_str(&not_up.join("; "));
        }
        line
    }
}

/// One supervised child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildInfo {
    pub pid: u32,
    pub started_at: String,
    /// Restarts after a crash since the runner started.
    pub restarts: u32,
    /// The container's name (container tier); `pid` is then the host pid of its init.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

/// The runner supervising a user, and its children (so `stop` can reach them even if the runner
/// itself died).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerMarker {
    pub pid: u32,
    pub started_at: String,
    pub tier: String,
    /// By role name (`oxydra-vm`, `shell-vm`).
    pub children: BTreeMap<String, ChildInfo>,
    /// A digest of the settings the guests were started with (`start` restarts on a change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_digest: Option<String>,
    /// What the runner repaired in the workspace before a (re)start (`<time> <what>`), latest
    /// last (see `heal`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
}

/// Writes `value` as JSON to `path` (below the trusted directory `root`, usually the workspace)
/// through a fresh temporary file and a rename, never following a link (see [`crate::beneath`]):
/// readers never see a half-written file. Mode 0644.
pub fn write_json_atomic(
    root: &Path,
    path: &Path,
    value: &impl Serialize,
) -> Result<(), RunnerError> {
    let mut text = serde_json::to_vec_pretty(value).map_err(|source| RunnerError::Json {
        path: path.to_owned(),
        source,
    })?;
    text.push(b'\n');
    crate::beneath::write_beneath(root, path, &text)
}

/// The JSON in `path`; `Ok(None)` when the file does not exist. A link, FIFO or anything but a
/// regular file there is an error, never followed or waited on (see
/// [`crate::beneath::read_regular`]).
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, RunnerError> {
    read_json_within(path, MAX_MARKER_BYTES)
}

/// [`read_json`] of a file that may be larger (read up to `limit` bytes).
pub(crate) fn read_json_within<T: DeserializeOwned>(
    path: &Path,
    limit: u64,
) -> Result<Option<T>, RunnerError> {
    match crate::beneath::read_regular(path, limit) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| RunnerError::Json {
                path: path.to_owned(),
                source,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RunnerError::io("read", path)(e)),
    }
}

/// Removes every [`run_files`] entry of `ws` (see [`remove_if_exists`]) and the temporary files
/// an interrupted write of one left behind: what `start` clears first and `stop` removes last.
pub fn remove_run_files(ws: &WorkspacePaths) -> Result<(), RunnerError> {
    for file in run_files(ws) {
        remove_if_exists(&file)?;
        crate::beneath::remove_temps_beneath(&ws.root, &file)?;
    }
    Ok(())
}

/// Removes `path` if present. `unlink` never follows the final name, and the directories above it
/// (`.oxydra/`, `ipc/`) sit in the workspace root, which no guest can write, so no guest can swap
/// them for a link.
pub fn remove_if_exists(path: &Path) -> Result<(), RunnerError> {
    match std::fs::remove_file(path) {
        // A directory planted by the shell (in `ipc/`) where a file belongs: not ours to empty,
        // and no reason to stop a start or a stop.
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
            tracing::warn!(path = %path.display(), "a directory is in the way; left as it is");
            Ok(())
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(RunnerError::io("remove", path)(e))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_and_parse_their_address() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(types::ENDPOINT_FILE);
        assert_eq!(read_json::<GatewayMarker>(&path).unwrap(), None);
        let marker = GatewayMarker {
            url: "ws://127.0.0.1:4242/".into(),
            pid: 7,
            started_at: "2025-01-01T00:00:00Z".into(),
        };
        write_json_atomic(dir.path(), &path, &marker).unwrap();
        assert_eq!(
            read_json::<GatewayMarker>(&path).unwrap(),
            Some(marker.clone())
        );
        assert_eq!(
            marker.socket_addr(),
            Some("127.0.0.1:4242".parse().unwrap())
        );
        assert!(!marker.tls());
        let tls = GatewayMarker {
            url: "wss://[::1]:4243/".into(),
            ..marker.clone()
        };
        assert_eq!(tls.socket_addr(), Some("[::1]:4243".parse().unwrap()));
        assert!(tls.tls());
        remove_if_exists(&path).unwrap();
        remove_if_exists(&path).unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn markers_are_never_read_through_a_link_or_from_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, "{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(read_json::<serde_json::Value>(&link).is_err());
        let fifo = dir.path().join("fifo.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            fifo.as_path(),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        // Returns at once (non-blocking open), with an error.
        assert!(read_json::<serde_json::Value>(&fifo).is_err());
        assert_eq!(
            read_json::<serde_json::Value>(&real).unwrap(),
            Some(serde_json::json!({}))
        );
    }
}
