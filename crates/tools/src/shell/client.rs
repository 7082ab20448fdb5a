//! The client side of the shell protocol: one connection per command, opened by having the
//! daemon prove itself ([`super::proof`]) and then proving the user's shell secret (see
//! [`types::ShellAuth`]).

use std::io::ErrorKind;
use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use types::{CancellationToken, ShellAuth, ShellRequest, ShellResponse, encode_line};

use super::ShellRun;
use crate::ToolError;

/// What the model is told when no daemon listens for the user.
pub const SHELL_NOT_RUNNING: &str =
    "the shell is not running for this user; start the agent with the runner";

/// Most output kept per stream; the registry cuts the final text shorter anyway.
const KEEP_BYTES: usize = 64 * 1024;

/// Longest reply line read from a daemon. Its frames carry at most 8 KiB of output each (under
/// 64 KiB JSON-escaped); a longer line is not the daemon's: the shell can put a listener of its
/// own at the socket's path, and an endless line was buffered whole until memory ran out.
pub(crate) const MAX_REPLY_BYTES: usize = 1024 * 1024;

/// What the model is told of a reply line longer than [`MAX_REPLY_BYTES`].
pub(crate) const REPLY_TOO_LONG: &str = "the shell sent a reply longer than 1 MiB, which the shell daemon never does; restart the agent with the runner";

/// The next line of `reader` (its newline included; `None` at the end), at most
/// [`MAX_REPLY_BYTES`]: a longer one is an `InvalidData` error.
pub(crate) async fn next_reply<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let limit = u64::try_from(MAX_REPLY_BYTES).unwrap_or(u64::MAX) + 1;
    let n = (&mut *reader)
        .take(limit)
        .read_until(b'\n', &mut line)
        .await?;
    if n == 0 {
        return Ok(None);
    }
    if line.len() > MAX_REPLY_BYTES {
        return Err(std::io::Error::new(ErrorKind::InvalidData, REPLY_TOO_LONG));
    }
    Ok(Some(line))
}

/// Reads the user's shell secret from `path` (`.oxydra/shell.secret`).
pub async fn read_secret(path: &Path) -> Result<String, ToolError> {
    match tokio::fs::read_to_string(path).await {
        Ok(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        Ok(_) => Err(ToolError::execution(SHELL_NOT_RUNNING)),
        Err(e) => Err(ToolError::execution_with(SHELL_NOT_RUNNING, e)),
    }
}

/// Runs `command` through the daemon listening on `socket`, proving `secret` first. Cancelling
/// `cancel` (or dropping the future) closes the connection, and the daemon then kills the
/// command's process group.
pub async fn run_command(
    socket: &Path,
    secret: &str,
    command: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<ShellRun, ToolError> {
    let stream = match super::connect_unfollowed(socket).await {
        Ok(stream) => stream,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::NotFound | ErrorKind::ConnectionRefused | ErrorKind::NotADirectory
            ) =>
        {
            return Err(ToolError::execution_with(SHELL_NOT_RUNNING, e));
        }
        Err(e) => {
            return Err(ToolError::execution_with(
                "the shell could not be reached; try again, or restart the agent with the runner",
                e,
            ));
        }
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Cancelled),
        run = exchange(stream, secret, command, timeout) => run,
    }
}

async fn exchange(
    stream: UnixStream,
    secret: &str,
    command: &str,
    timeout: Duration,
) -> Result<ShellRun, ToolError> {
    let lost = |e: std::io::Error| {
        ToolError::execution_with("the shell stopped before the command finished", e)
    };
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    super::proof::check_daemon(&mut reader, &mut write, secret)
        .await
        .map_err(|e| match e.kind() {
            ErrorKind::PermissionDenied => ToolError::execution(super::proof::NOT_THE_DAEMON),
            ErrorKind::InvalidData => ToolError::execution(REPLY_TOO_LONG),
            _ => ToolError::execution_with("the shell did not answer; restart the agent", e),
        })?;
    let request = ShellRequest {
        id: 1,
        command: command.to_owned(),
        timeout_ms: Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
        stdin: None,
    };
    let encoding = |e| ToolError::execution_with("the command could not be encoded", e);
    let auth = ShellAuth {
        auth: secret.to_owned(),
    };
    let mut line = encode_line(&auth).map_err(encoding)?;
    line.push_str(&encode_line(&request).map_err(encoding)?);
    write.write_all(line.as_bytes()).await.map_err(lost)?;
    let mut run = ShellRun::default();
    loop {
        let line = match next_reply(&mut reader).await {
            Ok(Some(line)) => line,
            Ok(None) => return Err(lost(ErrorKind::UnexpectedEof.into())),
            Err(e) if e.kind() == ErrorKind::InvalidData => {
                return Err(ToolError::execution(REPLY_TOO_LONG));
            }
            Err(e) => return Err(lost(e)),
        };
        let frame: ShellResponse = serde_json::from_slice(&line)
            .map_err(|e| ToolError::execution_with("the shell sent an unreadable reply", e))?;
        match frame {
            ShellResponse::Stdout { data, .. } => keep(&mut run.stdout, &data, &mut run.cut),
            ShellResponse::Stderr { data, .. } => keep(&mut run.stderr, &data, &mut run.cut),
            ShellResponse::Exit {
                code,
                signal,
                timed_out,
                truncated,
                ..
            } => {
                run.code = code;
                run.signal = signal;
                run.timed_out = timed_out;
                run.cut |= truncated;
                return Ok(run);
            }
            ShellResponse::Error { message, .. } => {
                return Err(ToolError::execution(format!(
                    "the shell refused the command: {message}"
                )));
            }
            ShellResponse::Piped | ShellResponse::Proof { .. } => {
                return Err(ToolError::execution("the shell sent an unexpected reply"));
            }
        }
    }
}

fn keep(buf: &mut String, data: &str, cut: &mut bool) {
    let room = KEEP_BYTES.saturating_sub(buf.len());
    if data.len() <= room {
        buf.push_str(data);
    } else {
        buf.push_str(&data[..data.floor_char_boundary(room)]);
        *cut = true;
    }
}
