//! One of the user's stdio MCP servers behind a connection: started like a shell command (in
//! `shared/`, a process group of its own, [`command_env`] plus the request's `env`, this daemon's
//! uid and confinement — so it sees no more than the shell), answered with one
//! [`ShellResponse::Piped`] line, then the connection's bytes go to its stdin and its stdout's
//! come back, untouched. Its stderr goes to this daemon's log, at most [`MAX_STDERR_LOG_BYTES`].
//!
//! The connection closing ends the server (a short grace to exit on its own, then `SIGKILL` to
//! its group); the server ending (its stdout closed, or its process gone) closes the connection.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::Semaphore;
use types::{McpSpawn, ShellResponse, WorkspacePaths};

use crate::exec::command_env;
use crate::group::ProcessGroup;
use crate::server::write_frame;

/// How much of one server's stderr reaches the log; the rest is read and dropped.
pub const MAX_STDERR_LOG_BYTES: usize = 16 * 1024;
/// Longest stderr line logged as it is (longer ones are cut).
const MAX_LOG_LINE: usize = 2000;
/// After the client hung up, how long the server has to exit on its own.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// After the server exited (and its group was killed), how long its output is still forwarded.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Serves one MCP connection: refuses it with an `error` frame (and closes) when `limit` servers
/// already run or the program cannot start; otherwise pipes until either side ends.
pub(crate) async fn serve(
    spawn: McpSpawn,
    reader: BufReader<OwnedReadHalf>,
    mut write: OwnedWriteHalf,
    ws: &WorkspacePaths,
    (permits, max): (&Arc<Semaphore>, usize),
) {
    let refuse = |message: String| ShellResponse::Error { id: None, message };
    let Ok(_permit) = Arc::clone(permits).try_acquire_owned() else {
        let message = format!("too many MCP servers running (limit {max}); stop one first");
        write_frame(&mut write, &refuse(message)).await;
        return;
    };
    if let Err(problem) = check(&spawn) {
        write_frame(&mut write, &refuse(problem)).await;
        return;
    }
    let label = label(&spawn.command);
    let mut child = match start(&spawn, ws) {
        Ok(child) => child,
        Err(e) => {
            tracing::warn!(server = %label, error = %e, "MCP server could not start");
            let message = format!("the MCP server `{label}` could not be started: {e}");
            write_frame(&mut write, &refuse(message)).await;
            return;
        }
    };
    let group = ProcessGroup::led_by(child.id());
    tracing::info!(server = %label, pid = ?child.id(), "MCP server started");
    if !write_frame(&mut write, &ShellResponse::Piped).await {
        return;
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(log_stderr(stderr, label.clone()));
    }
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return;
    };
    let how = pipe(&mut child, &group, reader, stdin, stdout, write).await;
    group.kill();
    let status = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
    tracing::info!(server = %label, status = ?status.ok().and_then(Result::ok), "MCP server ended ({how})");
}

/// Moves bytes both ways until one side ends; says which.
async fn pipe(
    child: &mut tokio::process::Child,
    group: &ProcessGroup,
    mut reader: BufReader<OwnedReadHalf>,
    mut stdin: tokio::process::ChildStdin,
    mut stdout: tokio::process::ChildStdout,
    mut write: OwnedWriteHalf,
) -> &'static str {
    let to_server = async move {
        let _ = tokio::io::copy_buf(&mut reader, &mut stdin).await;
        // Dropping stdin here closes the server's input: an MCP server exits on it.
    };
    let from_server = async move {
        let _ = tokio::io::copy(&mut stdout, &mut write).await;
        let _ = write.shutdown().await;
    };
    tokio::pin!(from_server);
    tokio::select! {
        () = to_server => {
            // The client hung up: the server has a moment to exit on its own.
            let _ = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
            "the client hung up"
        }
        () = &mut from_server => "the server closed its output",
        _ = child.wait() => {
            // Whatever it left running goes with it; what it wrote is still delivered.
            group.kill();
            let _ = tokio::time::timeout(DRAIN_GRACE, from_server).await;
            "the server exited"
        }
    }
}

/// What the request must hold before anything is started.
fn check(spawn: &McpSpawn) -> Result<(), String> {
    if spawn.command.trim().is_empty() {
        return Err("mcp_spawn: `command` is empty".into());
    }
    let has_nul = |s: &String| s.contains('\0');
    if has_nul(&spawn.command) || spawn.args.iter().any(has_nul) {
        return Err("mcp_spawn: `command` and `args` may not contain NUL".into());
    }
    let bad_key = |k: &String| k.is_empty() || k.contains(['=', '\0']);
    if let Some(key) = spawn.env.keys().find(|k| bad_key(k)) {
        return Err(format!(
            "mcp_spawn: environment variable name {key:?} is empty or holds '=' or NUL"
        ));
    }
    if spawn.env.values().any(has_nul) {
        return Err("mcp_spawn: environment values may not contain NUL".into());
    }
    Ok(())
}

/// The program's file name, for the log and errors (never its directory).
fn label(command: &str) -> String {
    Path::new(command)
        .file_name()
        .map_or_else(|| "server".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// Starts the server in `shared/`, in a process group of its own, with only [`command_env`] and
/// the request's `env`.
fn start(spawn: &McpSpawn, ws: &WorkspacePaths) -> std::io::Result<tokio::process::Child> {
    let mut command = std::process::Command::new(&spawn.command);
    command
        .args(&spawn.args)
        .current_dir(ws.shared())
        .env_clear()
        .envs(command_env(ws))
        .envs(&spawn.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    tokio::process::Command::from(command).spawn()
}

/// Logs the server's stderr line by line up to [`MAX_STDERR_LOG_BYTES`], then drops the rest
/// (still reading it, so the server never blocks on a full pipe).
async fn log_stderr(stderr: impl AsyncRead + Unpin, label: String) {
    let mut lines = BufReader::new(stderr);
    let mut logged = 0usize;
    let mut line = Vec::new();
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if logged >= MAX_STDERR_LOG_BYTES {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end();
        let cut = &text[..text.floor_char_boundary(MAX_LOG_LINE)];
        logged += cut.len();
        tracing::info!(server = %label, "stderr: {cut}");
        if logged >= MAX_STDERR_LOG_BYTES {
            tracing::warn!(server = %label, "MCP server stderr past {MAX_STDERR_LOG_BYTES} bytes; the rest is dropped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spawn(command: &str, args: &[&str], env: &[(&str, &str)]) -> McpSpawn {
        McpSpawn {
            command: command.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn requests_are_checked_before_anything_starts() {
        assert_eq!(
            check(&spawn("python3", &["-m", "s"], &[("K", "v")])),
            Ok(())
        );
        for (bad, says) in [
            (spawn(" ", &[], &[]), "empty"),
            (spawn("a\0b", &[], &[]), "NUL"),
            (spawn("p", &["x\0"], &[]), "NUL"),
            (spawn("p", &[], &[("A=B", "v")]), "'='"),
            (spawn("p", &[], &[("", "v")]), "empty"),
            (spawn("p", &[], &[("K", "v\0")]), "NUL"),
        ] {
            let problem = check(&bad).unwrap_err();
            assert!(problem.contains(says), "{bad:?}: {problem}");
        }
    }

    #[test]
    fn the_label_is_the_programs_name_only() {
        assert_eq!(label("/home/me/venv/bin/python3"), "python3");
        assert_eq!(label("server"), "server");
        assert_eq!(label("/"), "server");
    }
}
