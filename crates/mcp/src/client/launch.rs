//! The seam where a stdio server is started: a [`Launcher`] turns a server's configuration into
//! a running program's stdin and stdout, and a guard that ends it when dropped. Who runs it (the
//! agent for development, the user's shell daemon under the shell's uid and Landlock, a
//! container of its own) is the launcher's choice; the client only speaks MCP over the bytes.

use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;

use tokio::io::{AsyncRead, AsyncWrite};
use types::McpServerConfig;

/// A started stdio server.
pub struct Launched {
    /// The server's stdout: MCP messages from it.
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// The server's stdin: MCP messages to it.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// The server's stderr, if the launcher has it: its last lines say why it stopped.
    pub stderr: Option<Box<dyn AsyncRead + Send + Unpin>>,
    /// Ends the server when dropped.
    pub guard: Box<dyn Send + Sync>,
}

impl fmt::Debug for Launched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Launched")
            .field("stderr", &self.stderr.is_some())
            .finish_non_exhaustive()
    }
}

/// Why a server could not be started (shown in the server's status, never to the model with a
/// host path in it: the registry scrubs tool errors, and statuses are the operator's).
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The configuration is not one this launcher can run (an HTTP server, a missing image).
    #[error("{0}")]
    Unsupported(String),
    /// The program did not start.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// The launcher's own channel (the shell daemon, the container engine) failed.
    #[error("{0}")]
    Channel(String),
}

/// Starts stdio servers.
#[async_trait::async_trait]
pub trait Launcher: Send + Sync + fmt::Debug {
    /// Starts the server `name` configured as `server` (which has a `command`).
    async fn launch(&self, name: &str, server: &McpServerConfig) -> Result<Launched, LaunchError>;
}

/// The `PATH` a server gets unless its `env` sets one (its environment is otherwise empty).
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Runs a server as a child process of the agent itself, with an empty environment besides the
/// config's `env` (and [`DEFAULT_PATH`]), in `cwd` (the workspace's `shared/`); killed when its
/// guard is dropped. No confinement of its own: for tests and development (production launchers
/// confine the server as the user's shell is).
#[derive(Debug, Clone)]
pub struct DirectLauncher {
    cwd: PathBuf,
}

impl DirectLauncher {
    /// Servers run in `cwd` (the workspace's `shared/`).
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self { cwd: cwd.into() }
    }
}

#[async_trait::async_trait]
impl Launcher for DirectLauncher {
    async fn launch(&self, name: &str, server: &McpServerConfig) -> Result<Launched, LaunchError> {
        let Some(command) = server.command.as_deref() else {
            return Err(LaunchError::Unsupported(format!(
                "[mcp.servers.{name}] has no `command` to run"
            )));
        };
        let mut child = tokio::process::Command::new(command)
            .args(&server.args)
            .env_clear()
            .env("PATH", DEFAULT_PATH)
            .envs(&server.env)
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| LaunchError::Spawn {
                command: command.to_owned(),
                source,
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(LaunchError::Channel(
                "the server's pipes are missing".into(),
            ));
        };
        let stderr = child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn AsyncRead + Send + Unpin>);
        Ok(Launched {
            reader: Box::new(stdout),
            writer: Box::new(stdin),
            stderr,
            guard: Box::new(ChildGuard(Some(child))),
        })
    }
}

/// Kills the child when dropped, and reaps it in the background.
struct ChildGuard(Option<tokio::process::Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let Some(mut child) = self.0.take() else {
            return;
        };
        let _ = child.start_kill();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = child.wait().await;
            });
        }
    }
}
