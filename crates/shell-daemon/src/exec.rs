//! Running one [`ShellRequest`]: `/bin/sh -c` in `shared/`, its own process group, a minimal
//! environment, streamed output under a cap, a timeout.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use types::{CancellationToken, ShellRequest, ShellResponse, WorkspacePaths};

use crate::group::ProcessGroup;
use crate::utf8::Utf8Stream;

/// The only `PATH` a command sees.
pub const COMMAND_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/// After the shell exits (and its group is killed), how long to keep reading output still in the
/// pipes before giving up on a process that escaped the group with `setsid`.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Per-command limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandLimits {
    /// Cap on a command's stdout and stderr together; more is dropped.
    pub max_output_bytes: u64,
    /// Timeout of a request that names none.
    pub default_timeout: Duration,
    /// Longest timeout a request may ask for.
    pub max_timeout: Duration,
}

/// The whole environment of a command: `PATH`, `HOME` (= `shared/`), `LANG`, `TERM`, and `TMPDIR`
/// (= `tmp/`, because `/tmp` is not writable under the sandbox). Nothing is inherited from the
/// daemon but `LANG`, so no API key or token can leak into a command.
pub fn command_env(ws: &WorkspacePaths) -> Vec<(&'static str, OsString)> {
    let lang = std::env::var_os("LANG")
        .filter(|l| l.len() < 64)
        .unwrap_or_else(|| "C.UTF-8".into());
    vec![
        ("PATH", COMMAND_PATH.into()),
        ("HOME", ws.shared().into_os_string()),
        ("LANG", lang),
        ("TERM", "dumb".into()),
        ("TMPDIR", ws.tmp().into_os_string()),
    ]
}

/// Runs `req` and streams its output into `frames`; returns the final frame (`exit` or `error`),
/// or `None` when `cancel` fired (the client is gone; the group has been killed).
pub(crate) async fn run(
    req: ShellRequest,
    ws: &WorkspacePaths,
    limits: CommandLimits,
    frames: &mpsc::Sender<ShellResponse>,
    cancel: &CancellationToken,
) -> Option<ShellResponse> {
    let id = req.id;
    let error = |message: String| {
        Some(ShellResponse::Error {
            id: Some(id),
            message,
        })
    };
    let timeout = match timeout_of(req.timeout_ms, limits) {
        Ok(timeout) => timeout,
        Err(message) => return error(message),
    };
    let mut child = match spawn(&req, ws) {
        Ok(child) => child,
        Err(e) => {
            tracing::warn!(id, error = %e, "spawn failed");
            return error(format!("the shell could not be started: {e}"));
        }
    };
    let group = ProcessGroup::led_by(child.id());
    tracing::info!(id, pid = ?child.id(), timeout_ms = timeout.as_millis() as u64, "command started");
    if let (Some(mut pipe), Some(data)) = (child.stdin.take(), req.stdin) {
        tokio::spawn(async move {
            // A command that does not read its input closes the pipe early: not an error.
            let _ = pipe.write_all(data.as_bytes()).await;
        });
    }
    let mut out = Output {
        budget: limits.max_output_bytes,
        truncated: false,
        id,
        frames,
    };
    let Some(Ended { status, timed_out }) =
        watch(&mut child, &group, timeout, &mut out, cancel).await
    else {
        tracing::info!(id, "client gone; killing the command's process group");
        group.kill();
        return None;
    };
    match status {
        Some(Ok(status)) => {
            tracing::info!(id, code = ?status.code(), signal = ?status.signal(), timed_out, "command finished");
            Some(ShellResponse::Exit {
                id,
                code: status.code(),
                signal: status.signal(),
                timed_out,
                truncated: out.truncated,
            })
        }
        Some(Err(e)) => error(format!("waiting for the command failed: {e}")),
        None => error("the command's status is unknown".to_owned()),
    }
}

/// The timeout a request asks for, or the default; an error names the allowed range.
fn timeout_of(asked_ms: Option<u64>, limits: CommandLimits) -> Result<Duration, String> {
    match asked_ms.map(Duration::from_millis) {
        None => Ok(limits.default_timeout),
        Some(t) if t.is_zero() || t > limits.max_timeout => Err(format!(
            "timeout_ms must be between 1 and {}",
            limits.max_timeout.as_millis()
        )),
        Some(t) => Ok(t),
    }
}

/// Starts `/bin/sh -c` in `shared/`, in a process group of its own, with only
/// [`command_env`].
fn spawn(req: &ShellRequest, ws: &WorkspacePaths) -> std::io::Result<tokio::process::Child> {
    let mut command = std::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&req.command)
        .current_dir(ws.shared())
        .env_clear()
        .envs(command_env(ws))
        .stdin(if req.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    tokio::process::Command::from(command).spawn()
}

/// How a command that ran to its end (or timeout) ended.
struct Ended {
    status: Option<std::io::Result<ExitStatus>>,
    timed_out: bool,
}

/// Streams the child's output until its pipes close and it has exited (killing its group at the
/// timeout); `None` when `cancel` fired or the client stopped taking frames.
async fn watch(
    child: &mut tokio::process::Child,
    group: &ProcessGroup,
    timeout: Duration,
    out: &mut Output<'_>,
    cancel: &CancellationToken,
) -> Option<Ended> {
    let id = out.id;
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let (mut out_text, mut err_text) = (Utf8Stream::default(), Utf8Stream::default());
    let (mut out_buf, mut err_buf) = ([0u8; 8192], [0u8; 8192]);
    let mut status: Option<std::io::Result<ExitStatus>> = None;
    let mut timed_out = false;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let drain = tokio::time::sleep(Duration::MAX);
    tokio::pin!(drain);
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);

    while stdout.is_some() || stderr.is_some() || status.is_none() {
        let sent = tokio::select! {
            n = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => match n {
                Ok(n) if n > 0 => out.emit(Stream::Stdout, &mut out_text, &out_buf[..n]).await,
                _ => {
                    stdout = None;
                    out.send(Stream::Stdout, out_text.finish()).await
                }
            },
            n = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => match n {
                Ok(n) if n > 0 => out.emit(Stream::Stderr, &mut err_text, &err_buf[..n]).await,
                _ => {
                    stderr = None;
                    out.send(Stream::Stderr, err_text.finish()).await
                }
            },
            s = child.wait(), if status.is_none() => {
                // The shell is done: whatever it left running in its group goes with it.
                group.kill();
                status = Some(s);
                drain.as_mut().reset(tokio::time::Instant::now() + DRAIN_GRACE);
                true
            },
            () = &mut deadline, if !timed_out => {
                tracing::info!(id, "command timed out; killing its process group");
                timed_out = true;
                group.kill();
                true
            },
            () = &mut drain, if status.is_some() => {
                tracing::warn!(id, "output pipes still open after the group was killed; closing");
                stdout = None;
                stderr = None;
                true
            },
            () = &mut cancelled => false,
        };
        if !sent {
            return None;
        }
    }
    Some(Ended { status, timed_out })
}

async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

/// Sends output frames for one command, within its byte budget.
struct Output<'a> {
    budget: u64,
    truncated: bool,
    id: u64,
    frames: &'a mpsc::Sender<ShellResponse>,
}

impl Output<'_> {
    /// Decodes and sends what fits in the budget; false when the client is gone.
    async fn emit(&mut self, stream: Stream, text: &mut Utf8Stream, bytes: &[u8]) -> bool {
        let keep = usize::try_from(self.budget).map_or(bytes.len(), |b| b.min(bytes.len()));
        if keep < bytes.len() {
            self.truncated = true;
        }
        self.budget -= keep as u64;
        if keep == 0 {
            return true;
        }
        let data = text.push(&bytes[..keep]);
        self.send(stream, data).await
    }

    async fn send(&self, stream: Stream, data: String) -> bool {
        if data.is_empty() {
            return true;
        }
        let id = self.id;
        let frame = match stream {
            Stream::Stdout => ShellResponse::Stdout { id, data },
            Stream::Stderr => ShellResponse::Stderr { id, data },
        };
        self.frames.send(frame).await.is_ok()
    }
}
