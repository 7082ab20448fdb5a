//! The shell protocol between the `shell_exec` tool (in `oxydra-vm`) and a user's `shell-vm`
//! daemon, and the daemon's bootstrap.
//!
//! **Transport.** A unix stream socket at `<workspace>/ipc/shell.sock` ([`shell_socket_path`]),
//! mode 0600, created by the daemon. **Framing.** Newline-delimited JSON: every frame is one JSON
//! object on one line, terminated by `\n` (JSON string escaping guarantees no raw newline inside a
//! frame). A request line longer than [`MAX_REQUEST_BYTES`] is refused.
//!
//! **Authentication.** The first line a client writes is a [`ShellAuth`] frame holding the user's
//! shell secret (the contents of `.oxydra/shell.secret`, [`shell_secret_path`], which only
//! `oxydra-vm` can read); the daemon knows only its SHA-256 ([`ShellBootstrap::secret_sha256`]).
//! A wrong or missing secret gets one [`ShellResponse::Error`] (`id: null`) and the connection is
//! closed; nothing runs. The daemon also requires the peer's uid to be its own or the agent's
//! ([`ShellBootstrap::agent_uid`]). Before its secret, a client has the daemon prove itself
//! ([`crate::ShellChallenge`]): the shell writes `ipc/`, so something else may listen there.
//!
//! **Exchange.** The client writes [`ShellRequest`]s; for each, the daemon streams any number of
//! [`ShellResponse::Stdout`] / [`ShellResponse::Stderr`] frames, then exactly one
//! [`ShellResponse::Exit`] or [`ShellResponse::Error`], all carrying the request's `id`. Several
//! requests may run at once on one connection; their frames interleave and are told apart by
//! `id`. Output is decoded as UTF-8 (invalid bytes become U+FFFD); once a command's stdout and
//! stderr together reach the cap, further output is dropped and `exit.truncated` is true.
//! Closing the connection kills every command it started (the whole process group).
//!
//! **An MCP server's pipe.** Instead of requests, an authenticated client may send one
//! [`McpSpawnRequest`] (`{"mcp_spawn":{…}}`) as its second line: the daemon starts that program
//! in `shared/` (its own process group, a cleared environment plus the request's `env`, the
//! daemon's confinement and uid), answers one [`ShellResponse::Piped`] line (or an
//! [`ShellResponse::Error`], and closes), and from then on the connection is a raw byte pipe:
//! what the client writes is the program's stdin, the program's stdout is what it reads; its
//! stderr goes to the shell's log (bounded). Closing the connection kills the program's process
//! group; the program's end closes the connection. At most
//! [`ShellBootstrap::max_mcp_servers`] run at once.
//!
//! ```text
//! → {"auth":"9f86d081884c7d65…"}
//! → {"id":1,"command":"echo hi; echo oops >&2; exit 3","timeout_ms":5000}
//! ← {"type":"stdout","id":1,"data":"hi\n"}
//! ← {"type":"stderr","id":1,"data":"oops\n"}
//! ← {"type":"exit","id":1,"code":3,"timed_out":false,"truncated":false}
//! ```

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{UserId, WorkspacePaths};

/// The daemon's socket file name inside `ipc/`.
pub const SHELL_SOCKET_NAME: &str = "shell.sock";
/// The file inside `.oxydra/` holding the user's shell secret (hex, one line, mode 0600).
pub const SHELL_SECRET_FILE: &str = "shell.secret";
/// Longest request line the daemon reads (1 MiB, stdin included).
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// Timeout of a command that names none: 120 s.
pub const DEFAULT_SHELL_TIMEOUT_MS: u64 = 120_000;
/// Longest timeout a request may ask for: 600 s.
pub const MAX_SHELL_TIMEOUT_MS: u64 = 600_000;
/// Default cap on one command's stdout and stderr together: 1 MiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1024 * 1024;
/// Default cap on commands running at once in one daemon.
pub const DEFAULT_MAX_CONCURRENT: usize = 16;
/// Default cap on MCP servers running at once in one daemon.
pub const DEFAULT_MAX_MCP_SERVERS: usize = 8;

/// `<workspace>/ipc/shell.sock`: where a user's shell daemon listens.
pub fn shell_socket_path(ws: &WorkspacePaths) -> PathBuf {
    ws.ipc().join(SHELL_SOCKET_NAME)
}

/// `<workspace>/ipc/mcp-<server>.sock`: where the `shell-vm` in an MCP server's own container
/// (the container tier, `image` set) listens for that server's [`McpSpawnRequest`].
pub fn mcp_server_socket(ws: &WorkspacePaths, server: &str) -> PathBuf {
    ws.ipc().join(format!("mcp-{server}.sock"))
}

/// `<workspace>/.oxydra/shell.secret`: the secret `oxydra-vm` proves to the shell daemon.
pub fn shell_secret_path(ws: &WorkspacePaths) -> PathBuf {
    ws.internal().join(SHELL_SECRET_FILE)
}

/// The first frame on every connection: the user's shell secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellAuth {
    pub auth: String,
}

impl std::fmt::Debug for ShellAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShellAuth { auth: <redacted> }")
    }
}

/// Run `command` with `/bin/sh -c` in the user's `shared/` directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellRequest {
    /// Chosen by the client, unique among its requests in flight on the connection.
    pub id: u64,
    pub command: String,
    /// Kill the command's process group after this long (default [`DEFAULT_SHELL_TIMEOUT_MS`],
    /// at most [`MAX_SHELL_TIMEOUT_MS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Written to the command's stdin, which is then closed; without it stdin is `/dev/null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
}

/// The request that turns a connection into an MCP server's stdio (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSpawnRequest {
    pub mcp_spawn: McpSpawn,
}

/// The program of a stdio MCP server: what `[mcp.servers.<name>]` names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSpawn {
    /// The program (a name looked up in the shell's `PATH`, or a path).
    pub command: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Its environment besides the shell's minimal one (nothing of the agent's is passed on).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// A frame from the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ShellResponse {
    /// A chunk of the command's standard output.
    Stdout { id: u64, data: String },
    /// A chunk of the command's standard error.
    Stderr { id: u64, data: String },
    /// The command finished: `code` is its exit status, or `None` when a signal ended it
    /// (`signal` says which). `timed_out`: the daemon killed it at its timeout. `truncated`:
    /// output beyond the cap was dropped.
    Exit {
        id: u64,
        code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
        timed_out: bool,
        truncated: bool,
    },
    /// The request could not be run. `id` is `None` when the request line itself was unreadable.
    Error { id: Option<u64>, message: String },
    /// An [`McpSpawnRequest`]'s program runs: from the next byte on, the connection is its stdio.
    Piped,
    /// The answer to a [`crate::ShellChallenge`]: the daemon's proof of itself (hex).
    Proof { proof: String },
}

impl ShellResponse {
    /// The request this frame answers.
    pub fn id(&self) -> Option<u64> {
        match self {
            Self::Stdout { id, .. } | Self::Stderr { id, .. } | Self::Exit { id, .. } => Some(*id),
            Self::Error { id, .. } => *id,
            Self::Piped | Self::Proof { .. } => None,
        }
    }

    /// True for the last frame of a request (`exit` or `error`).
    pub fn is_final(&self) -> bool {
        matches!(self, Self::Exit { .. } | Self::Error { .. } | Self::Piped)
    }
}

/// One frame as a protocol line: compact JSON followed by `\n`.
pub fn encode_line<T: Serialize>(frame: &T) -> Result<String, serde_json::Error> {
    let mut line = serde_json::to_string(frame)?;
    line.push('\n');
    Ok(line)
}

/// What the runner hands a `shell-vm` at start (JSON on stdin or in a file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellBootstrap {
    pub user_id: UserId,
    /// The directory holding every user's workspace; the daemon's is `<workspace_root>/<user_id>`.
    pub workspace_root: PathBuf,
    /// Where to listen; must be a file directly inside the user's `ipc/`. Default
    /// `ipc/shell.sock`, which is where `shell_exec` connects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_path: Option<PathBuf>,
    #[serde(default = "default_max_output")]
    pub max_output_bytes: u64,
    #[serde(default = "default_timeout")]
    pub default_timeout_ms: u64,
    #[serde(default = "default_concurrency")]
    pub max_concurrent: usize,
    /// Lowercase hex SHA-256 of the user's shell secret; a client must present the secret itself
    /// ([`ShellAuth`]). Required: a daemon without it refuses to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_sha256: Option<String>,
    /// The daemon's [`crate::ProofKey`] (required): only on stdin or in a private file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof_key: Option<crate::ProofKey>,
    /// The uid of the user's agent when it is not the daemon's own (a runner run as root gives
    /// the agent and the shell uids of their own): that uid may connect too, and the socket is
    /// made group-accessible (mode 0660; the agent has the daemon's group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_uid: Option<u32>,
    /// Paths the daemon (and so every command and MCP server it runs) may read and execute
    /// besides its workspace directories: the `read_paths` of the user's stdio MCP servers,
    /// checked by the runner. Absolute, and never the workspace root, inside it or above it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_read_paths: Vec<PathBuf>,
    /// MCP servers running at once ([`McpSpawnRequest`]); more are refused (left out at its default).
    #[serde(
        default = "default_mcp_servers",
        skip_serializing_if = "is_default_mcp_servers"
    )]
    pub max_mcp_servers: usize,
}

fn default_max_output() -> u64 {
    DEFAULT_MAX_OUTPUT_BYTES
}
fn default_timeout() -> u64 {
    DEFAULT_SHELL_TIMEOUT_MS
}
fn default_concurrency() -> usize {
    DEFAULT_MAX_CONCURRENT
}
fn default_mcp_servers() -> usize {
    DEFAULT_MAX_MCP_SERVERS
}
fn is_default_mcp_servers(n: &usize) -> bool {
    *n == DEFAULT_MAX_MCP_SERVERS
}

/// Why a [`ShellBootstrap`] was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellBootstrapError {
    #[error("workspace_root must be an absolute path")]
    RelativeRoot,
    #[error("socket_path must be a file directly inside the user's ipc/ directory")]
    SocketOutsideIpc,
    #[error("secret_sha256 is missing or not 64 lowercase hex digits")]
    BadSecretVerifier,
    #[error("proof_key is missing or not 64 lowercase hex digits")]
    BadProofKey,
    #[error(
        "extra_read_paths entry {0:?} must be an absolute path without `..`, outside the workspace root"
    )]
    BadReadPath(PathBuf),
    #[error("{field} must be between {min} and {max}")]
    OutOfRange {
        field: &'static str,
        min: u64,
        max: u64,
    },
}

impl ShellBootstrap {
    /// A bootstrap with every default.
    pub fn new(user_id: UserId, workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            user_id,
            workspace_root: workspace_root.into(),
            socket_path: None,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            default_timeout_ms: DEFAULT_SHELL_TIMEOUT_MS,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            secret_sha256: None,
            proof_key: None,
            agent_uid: None,
            extra_read_paths: Vec::new(),
            max_mcp_servers: DEFAULT_MAX_MCP_SERVERS,
        }
    }

    /// The user's workspace.
    pub fn workspace(&self) -> WorkspacePaths {
        WorkspacePaths::for_user(&self.workspace_root, &self.user_id)
    }

    /// Where the daemon listens.
    pub fn socket(&self) -> PathBuf {
        self.socket_path
            .clone()
            .unwrap_or_else(|| shell_socket_path(&self.workspace()))
    }

    pub fn validate(&self) -> Result<(), ShellBootstrapError> {
        if !self.workspace_root.is_absolute() {
            return Err(ShellBootstrapError::RelativeRoot);
        }
        let socket = self.socket();
        let plain_name = socket
            .file_name()
            .is_some_and(|n| n != ".." && n != "." && !n.is_empty());
        if !plain_name || socket.parent() != Some(Path::new(&self.workspace().ipc())) {
            return Err(ShellBootstrapError::SocketOutsideIpc);
        }
        let range = |field, value: u64, min, max| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(ShellBootstrapError::OutOfRange { field, min, max })
            }
        };
        range("max_output_bytes", self.max_output_bytes, 1024, 64 << 20)?;
        range(
            "default_timeout_ms",
            self.default_timeout_ms,
            1,
            MAX_SHELL_TIMEOUT_MS,
        )?;
        range("max_concurrent", self.max_concurrent as u64, 1, 1024)?;
        range("max_mcp_servers", self.max_mcp_servers as u64, 1, 64)?;
        if let Some(bad) = self
            .extra_read_paths
            .iter()
            .find(|p| !plain_read_path(p, &self.workspace_root))
        {
            return Err(ShellBootstrapError::BadReadPath(bad.clone()));
        }
        if !self
            .secret_sha256
            .as_deref()
            .is_some_and(crate::shell_proof::is_hex32)
        {
            return Err(ShellBootstrapError::BadSecretVerifier);
        }
        if !self
            .proof_key
            .as_ref()
            .is_some_and(|k| crate::shell_proof::is_hex32(&k.0))
        {
            return Err(ShellBootstrapError::BadProofKey);
        }
        Ok(())
    }
}

/// An absolute path without `.`/`..` that neither lies in `root` nor holds it (a grant on `/`
/// or on a parent of the workspaces would open every `.oxydra/`).
fn plain_read_path(path: &Path, root: &Path) -> bool {
    path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && !path.starts_with(root)
        && !root.starts_with(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_frame(frame: ShellResponse, line: &str) {
        assert_eq!(encode_line(&frame).unwrap(), format!("{line}\n"));
        assert_eq!(serde_json::from_str::<ShellResponse>(line).unwrap(), frame);
    }

    #[test]
    fn frames_on_the_wire() {
        check_frame(
            ShellResponse::Stdout {
                id: 1,
                data: "a\nb".into(),
            },
            r#"{"type":"stdout","id":1,"data":"a\nb"}"#,
        );
        check_frame(
            ShellResponse::Exit {
                id: 2,
                code: None,
                signal: Some(9),
                timed_out: true,
                truncated: false,
            },
            r#"{"type":"exit","id":2,"code":null,"signal":9,"timed_out":true,"truncated":false}"#,
        );
        check_frame(
            ShellResponse::Error {
                id: None,
                message: "bad request".into(),
            },
            r#"{"type":"error","id":null,"message":"bad request"}"#,
        );
        let request: ShellRequest =
            serde_json::from_str(r#"{"id":7,"command":"ls","timeout_ms":5}"#).unwrap();
        assert_eq!(
            request,
            ShellRequest {
                id: 7,
                command: "ls".into(),
                timeout_ms: Some(5),
                stdin: None
            }
        );
        assert!(serde_json::from_str::<ShellRequest>(r#"{"id":1,"command":"ls","x":1}"#).is_err());
    }

    #[test]
    fn bootstrap_defaults_and_validation() {
        let boot: ShellBootstrap = serde_json::from_str(&format!(
            r#"{{"user_id":"alice","workspace_root":"/srv/ws","secret_sha256":"{}","proof_key":"{}"}}"#,
            "ab".repeat(32),
            "cd".repeat(32)
        ))
        .unwrap();
        assert_eq!(boot.socket(), PathBuf::from("/srv/ws/alice/ipc/shell.sock"));
        assert_eq!(boot.validate(), Ok(()));
        // Without MCP settings the bootstrap's JSON holds no MCP field (an older shell-vm,
        // which refuses unknown fields, still reads it).
        let json = serde_json::to_string(&boot).unwrap();
        assert!(
            !json.contains("mcp") && !json.contains("extra_read"),
            "{json}"
        );
        for verifier in [None, Some("AB".repeat(32)), Some("ab".repeat(31))] {
            let bad = ShellBootstrap {
                secret_sha256: verifier,
                ..boot.clone()
            };
            assert_eq!(bad.validate(), Err(ShellBootstrapError::BadSecretVerifier));
        }
        assert_eq!(
            encode_line(&ShellAuth { auth: "s".into() }).unwrap(),
            "{\"auth\":\"s\"}\n"
        );
        let with = |socket: &str| ShellBootstrap {
            socket_path: Some(socket.into()),
            ..boot.clone()
        };
        assert_eq!(with("/srv/ws/alice/ipc/s.sock").validate(), Ok(()));
        for bad in [
            "/srv/ws/alice/shared/s.sock",
            "/srv/ws/alice/ipc/../.oxydra/s",
            "/srv/ws/bob/ipc/shell.sock",
        ] {
            assert_eq!(
                with(bad).validate(),
                Err(ShellBootstrapError::SocketOutsideIpc),
                "{bad}"
            );
        }
        let relative = ShellBootstrap::new(boot.user_id.clone(), "ws");
        assert_eq!(relative.validate(), Err(ShellBootstrapError::RelativeRoot));
    }

    #[test]
    fn read_paths_stay_outside_every_workspace() {
        let mut boot = ShellBootstrap::new(UserId::parse("alice").unwrap(), "/srv/ws");
        boot.secret_sha256 = Some("ab".repeat(32));
        boot.proof_key = Some(crate::ProofKey("cd".repeat(32)));
        let with = |path: &str| ShellBootstrap {
            extra_read_paths: vec![PathBuf::from(path)],
            ..boot.clone()
        };
        assert_eq!(with("/opt/data").validate(), Ok(()));
        assert_eq!(with("/srv/wsdata").validate(), Ok(()));
        for bad in [
            "data",
            "/",
            "/srv",
            "/srv/ws",
            "/srv/ws/bob/shared",
            "/srv/ws/alice/.oxydra",
            "/opt/../srv/ws",
        ] {
            assert_eq!(
                with(bad).validate(),
                Err(ShellBootstrapError::BadReadPath(bad.into())),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_mcp_spawn_request_and_its_answer() {
        let line = r#"{"mcp_spawn":{"command":"python3","args":["-m","srv"],"env":{"K":"v"}}}"#;
        let request: McpSpawnRequest = serde_json::from_str(line).unwrap();
        assert_eq!(
            request.mcp_spawn,
            McpSpawn {
                command: "python3".into(),
                args: vec!["-m".into(), "srv".into()],
                env: BTreeMap::from([("K".into(), "v".into())]),
            }
        );
        assert_eq!(encode_line(&request).unwrap(), format!("{line}\n"));
        // A shell request is no spawn request, and the other way round.
        assert!(serde_json::from_str::<McpSpawnRequest>(r#"{"id":1,"command":"ls"}"#).is_err());
        assert!(serde_json::from_str::<ShellRequest>(line).is_err());
        check_frame(ShellResponse::Piped, r#"{"type":"piped"}"#);
        assert!(ShellResponse::Piped.is_final());
    }
}
