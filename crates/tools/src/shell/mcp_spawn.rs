//! The client side of an MCP server's pipe through a shell daemon (see [`types::McpSpawnRequest`]):
//! one connection per server, opened (once the daemon proved itself) with the user's shell
//! secret. Both tiers use it: in the
//! process tier the daemon is the user's `shell-vm`; in the container tier either that one or the
//! `shell-vm` in the server's own container (`ipc/mcp-<name>.sock`).
//!
//! What comes back is the server's stdio: write JSON-RPC lines to [`McpPipe::writer`], read them
//! from [`McpPipe::reader`]. Dropping [`McpPipe::guard`] (or both halves) shuts the connection,
//! and the daemon then kills the server's process group.

use std::io::ErrorKind;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use types::{McpSpawn, McpSpawnRequest, ShellAuth, ShellResponse, encode_line};

/// How long the daemon has to answer the spawn (it starts the program, nothing more).
pub const SPAWN_DEADLINE: Duration = Duration::from_secs(30);

/// Why no server pipe was opened. The messages are for the model and the user: no path, no
/// secret.
#[derive(Debug, thiserror::Error)]
pub enum McpSpawnError {
    /// No daemon listens on the socket (the user's shell, or the server's container, is down).
    #[error("the MCP server's sandbox is not running; start the agent with the runner")]
    NotRunning(#[source] std::io::Error),
    /// The daemon answered with an error: the secret was refused, too many servers run, or the
    /// program could not be started.
    #[error("the MCP server could not be started: {0}")]
    Refused(String),
    /// The connection broke, or the daemon did not answer within [`SPAWN_DEADLINE`].
    #[error("the MCP server's sandbox did not answer; try again or restart the agent")]
    Lost(#[source] std::io::Error),
}

/// An MCP server's stdio over the daemon's connection.
#[derive(Debug)]
pub struct McpPipe {
    /// The server's stdout (buffered: bytes the server wrote right after starting are kept).
    pub reader: BufReader<OwnedReadHalf>,
    /// The server's stdin.
    pub writer: OwnedWriteHalf,
    /// Ends the server when dropped, whoever holds the halves.
    pub guard: McpServerGuard,
}

/// Shuts the connection (both ways) when dropped: the daemon sees it closed and kills the
/// server's process group, even while a transport task still holds a half.
#[derive(Debug)]
pub struct McpServerGuard(Option<OwnedFd>);

impl Drop for McpServerGuard {
    fn drop(&mut self) {
        if let Some(fd) = self.0.take() {
            let _ = std::os::unix::net::UnixStream::from(fd).shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Asks the daemon on `socket` (proving `secret`) to start `spec`, and returns its stdio.
pub async fn spawn_mcp_server(
    socket: &Path,
    secret: &str,
    spec: &McpSpawn,
) -> Result<McpPipe, McpSpawnError> {
    let stream = super::connect_unfollowed(socket).await.map_err(|e| {
        if matches!(
            e.kind(),
            ErrorKind::NotFound | ErrorKind::ConnectionRefused | ErrorKind::NotADirectory
        ) {
            McpSpawnError::NotRunning(e)
        } else {
            McpSpawnError::Lost(e)
        }
    })?;
    let guard = McpServerGuard(stream.as_fd().try_clone_to_owned().ok());
    let (read, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read);
    // Nothing (the secret, the server's `env`) is sent before the daemon proved itself.
    super::proof::check_daemon(&mut reader, &mut writer, secret)
        .await
        .map_err(|e| match e.kind() {
            ErrorKind::PermissionDenied => McpSpawnError::Refused(e.to_string()),
            _ => McpSpawnError::Lost(e),
        })?;
    let encoding = |e: serde_json::Error| McpSpawnError::Lost(std::io::Error::other(e));
    let mut hello = encode_line(&ShellAuth {
        auth: secret.to_owned(),
    })
    .map_err(encoding)?;
    hello.push_str(
        &encode_line(&McpSpawnRequest {
            mcp_spawn: spec.clone(),
        })
        .map_err(encoding)?,
    );
    writer
        .write_all(hello.as_bytes())
        .await
        .map_err(McpSpawnError::Lost)?;
    let answer = tokio::time::timeout(SPAWN_DEADLINE, first_line(&mut reader))
        .await
        .map_err(|_| McpSpawnError::Lost(ErrorKind::TimedOut.into()))??;
    match answer {
        ShellResponse::Piped => Ok(McpPipe {
            reader,
            writer,
            guard,
        }),
        ShellResponse::Error { message, .. } => Err(McpSpawnError::Refused(message)),
        other => Err(McpSpawnError::Refused(format!(
            "unexpected answer from the sandbox: {other:?}"
        ))),
    }
}

/// The daemon's one answer line, read without consuming anything after it (the server's own
/// output may follow in the same read; the [`BufReader`] keeps it).
async fn first_line(reader: &mut BufReader<OwnedReadHalf>) -> Result<ShellResponse, McpSpawnError> {
    let line = super::client::next_reply(reader)
        .await
        .map_err(McpSpawnError::Lost)?
        .ok_or_else(|| McpSpawnError::Lost(ErrorKind::UnexpectedEof.into()))?;
    serde_json::from_slice(&line).map_err(|e| McpSpawnError::Lost(std::io::Error::other(e)))
}
