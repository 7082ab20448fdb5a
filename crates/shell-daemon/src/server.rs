//! The socket: binding it safely, accepting connections from our own uid (or the agent's, see
//! [`DaemonConfig::agent_uid`]) that prove the user's shell secret ([`crate::auth`]), reading
//! request lines, running requests concurrently, and writing response frames — or, when the first
//! request is an [`McpSpawnRequest`], handing the connection to [`crate::mcp`].

use std::future::Future;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::Mode;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use types::{
    CancellationToken, MAX_REQUEST_BYTES, MAX_SHELL_TIMEOUT_MS, McpSpawnRequest, ShellBootstrap,
    ShellRequest, ShellResponse, WorkspacePaths, encode_line,
};

use crate::DaemonError;
use crate::auth::{AUTH_DEADLINE, Peer, Prover, Verdict, Verifier};
use crate::exec::{self, CommandLimits};

/// What the daemon serves, resolved from its [`ShellBootstrap`].
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    pub workspace: WorkspacePaths,
    pub limits: CommandLimits,
    /// Commands running at once across all connections; more are refused with an `error` frame.
    pub max_concurrent: usize,
    /// What a client's secret must hash to.
    pub verifier: Verifier,
    /// What proves this daemon to a client that asks ([`types::ShellChallenge`]).
    pub prover: Prover,
    /// The agent's uid when it is not the daemon's own: it may connect too (see
    /// [`ShellBootstrap::agent_uid`]).
    pub agent_uid: Option<u32>,
    /// MCP servers running at once across all connections; more are refused.
    pub max_mcp_servers: usize,
}

impl DaemonConfig {
    /// Fails when the bootstrap carries no valid secret verifier.
    pub fn from_bootstrap(boot: &ShellBootstrap) -> Result<Self, DaemonError> {
        let verifier = boot
            .secret_sha256
            .as_deref()
            .and_then(Verifier::from_hex)
            .ok_or(DaemonError::NoVerifier)?;
        let prover = boot
            .proof_key
            .as_ref()
            .and_then(|key| Prover::from_hex(&key.0))
            .ok_or(DaemonError::NoProofKey)?;
        Ok(Self {
            workspace: boot.workspace(),
            limits: CommandLimits {
                max_output_bytes: boot.max_output_bytes,
                default_timeout: Duration::from_millis(boot.default_timeout_ms),
                max_timeout: Duration::from_millis(MAX_SHELL_TIMEOUT_MS),
            },
            max_concurrent: boot.max_concurrent,
            verifier,
            prover,
            agent_uid: boot.agent_uid,
            max_mcp_servers: boot.max_mcp_servers,
        })
    }

    /// The socket's mode: 0600, or 0660 when an agent of another uid (and the daemon's group)
    /// must connect.
    pub fn socket_mode(&self) -> u32 {
        if self.agent_uid.is_some() {
            0o660
        } else {
            0o600
        }
    }
}

/// Listens on `path` with `mode` (0600 or 0660: see [`DaemonConfig::socket_mode`]), replacing a stale socket left by an earlier run (but never
/// anything that is not a socket). Call before any other thread exists: the umask is changed
/// for the duration of the bind.
pub fn bind_socket(
    path: &Path,
    mode: u32,
) -> Result<std::os::unix::net::UnixListener, DaemonError> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(DaemonError::NotASocket {
                path: path.to_owned(),
            });
        }
        tracing::info!(socket = %path.display(), "removing a stale socket");
        let _ = std::fs::remove_file(path);
    }
    let bind_err = |source| DaemonError::Bind {
        path: path.to_owned(),
        source,
    };
    let old = rustix::process::umask(Mode::from_raw_mode(0o177));
    let listener = std::os::unix::net::UnixListener::bind(path);
    rustix::process::umask(old);
    let listener = listener.map_err(bind_err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o660))
        .map_err(bind_err)?;
    listener.set_nonblocking(true).map_err(bind_err)?;
    Ok(listener)
}

/// Serves connections on `listener` until `shutdown` resolves; then every running command's
/// process group is killed.
pub async fn serve(
    listener: std::os::unix::net::UnixListener,
    config: DaemonConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), DaemonError> {
    let listener = tokio::net::UnixListener::from_std(listener).map_err(DaemonError::Accept)?;
    let config = Arc::new(config);
    let permits = Permits {
        commands: Arc::new(Semaphore::new(config.max_concurrent)),
        mcp_servers: Arc::new(Semaphore::new(config.max_mcp_servers)),
    };
    let me = rustix::process::getuid().as_raw();
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    tracing::info!("shell daemon ready");
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, _) = accepted.map_err(DaemonError::Accept)?;
                match stream.peer_cred() {
                    Ok(cred) if cred.uid() == me || Some(cred.uid()) == config.agent_uid => {
                        let config = Arc::clone(&config);
                        let pid = cred.pid().and_then(|p| u32::try_from(p).ok()).unwrap_or(0);
                        let peer = Peer { uid: cred.uid(), pid };
                        connections.spawn(connection(stream, peer, config, permits.clone()));
                    }
                    Ok(cred) => {
                        connections.spawn(refuse(stream, cred.uid(), cred.pid()));
                    }
                    Err(e) => tracing::warn!(error = %e, "connection refused: no peer credentials"),
                }
            }
        }
    }
    tracing::info!("shutting down; killing running commands");
    connections.shutdown().await;
    Ok(())
}

/// How long a refused root peer is given to show whether it only probed the socket.
const PROBE_GRACE: Duration = Duration::from_secs(2);

/// Refuses a peer of another uid (nothing is read from it, nothing is answered) and says so. A
/// root peer that closes without sending a byte is the runner checking that the socket accepts
/// (its readiness probe): logged at debug, not as a warning; one that sends anything is warned.
async fn refuse(mut stream: UnixStream, uid: u32, pid: Option<i32>) {
    if uid == 0 {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(PROBE_GRACE, stream.read(&mut byte)).await;
        if matches!(read, Ok(Ok(0))) {
            tracing::debug!(peer_pid = ?pid, "a root peer closed without a request (a readiness probe)");
            return;
        }
    }
    tracing::warn!(
        peer_uid = uid,
        peer_pid = ?pid,
        "connection refused: the peer runs as another uid"
    );
}

/// What may run at once, across all connections.
#[derive(Clone)]
struct Permits {
    commands: Arc<Semaphore>,
    mcp_servers: Arc<Semaphore>,
}

async fn connection(stream: UnixStream, peer: Peer, config: Arc<DaemonConfig>, permits: Permits) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    if !authenticate(&mut reader, &mut write, &config, peer).await {
        return;
    }
    let first = read_line(&mut reader).await;
    if let Line::Text(text) = &first
        && let Ok(request) = serde_json::from_str::<McpSpawnRequest>(text)
    {
        let limit = (&permits.mcp_servers, config.max_mcp_servers);
        crate::mcp::serve(request.mcp_spawn, reader, write, &config.workspace, limit).await;
        return;
    }
    let (tx, rx) = mpsc::channel::<ShellResponse>(64);
    let hangup = CancellationToken::default();
    let writer = tokio::spawn(write_frames(write, rx, hangup.clone()));
    run_requests(first, &mut reader, &tx, &hangup, &config, &permits.commands).await;
    drop(tx);
    let _ = writer.await;
    tracing::debug!("connection closed");
}

/// Writes one frame straight to the connection (before or instead of the frame writer task).
pub(crate) async fn write_frame(write: &mut OwnedWriteHalf, frame: &ShellResponse) -> bool {
    match encode_line(frame) {
        Ok(line) => write.write_all(line.as_bytes()).await.is_ok(),
        Err(_) => false,
    }
}

/// Writes each frame as a line; a failed write hangs the connection up.
async fn write_frames(
    mut write: OwnedWriteHalf,
    mut rx: mpsc::Receiver<ShellResponse>,
    hangup: CancellationToken,
) {
    while let Some(frame) = rx.recv().await {
        let Ok(line) = encode_line(&frame) else {
            continue;
        };
        if write.write_all(line.as_bytes()).await.is_err() {
            hangup.cancel();
            break;
        }
    }
}

/// Reads the first line within [`AUTH_DEADLINE`] and checks it; a refused client is told why
/// (unless it hung up) and `false` is returned. A first line asking the daemon to prove itself
/// is answered (for `peer`), and the line after it is the one checked.
async fn authenticate(
    reader: &mut BufReader<OwnedReadHalf>,
    write: &mut OwnedWriteHalf,
    config: &DaemonConfig,
    peer: Peer,
) -> bool {
    let deadline = tokio::time::Instant::now() + AUTH_DEADLINE;
    let mut first = tokio::time::timeout_at(deadline, read_line(reader)).await;
    if let Ok(Line::Text(text)) = &first
        && let Some(challenge) = Prover::challenge(text)
    {
        let proof = config.prover.prove(&challenge, peer);
        if !write_frame(write, &ShellResponse::Proof { proof }).await {
            return false;
        }
        first = tokio::time::timeout_at(deadline, read_line(reader)).await;
    }
    let verdict = match first {
        Ok(Line::Text(text)) => config.verifier.check_line(&text),
        Ok(Line::End) => Verdict::HungUp,
        Ok(Line::TooLong) => Verdict::Malformed,
        Err(_) => Verdict::TimedOut,
    };
    let Some(message) = verdict.refusal() else {
        return true;
    };
    if verdict == Verdict::HungUp {
        tracing::debug!("a client connected and hung up without a request");
    } else {
        tracing::warn!(reason = verdict.reason(), "connection refused");
        let message = message.to_owned();
        write_frame(write, &ShellResponse::Error { id: None, message }).await;
    }
    false
}

/// Runs the requests of an authenticated client (`first` already read) until it hangs up or
/// breaks the protocol; then everything it started is killed.
async fn run_requests(
    first: Line,
    reader: &mut BufReader<OwnedReadHalf>,
    tx: &mpsc::Sender<ShellResponse>,
    hangup: &CancellationToken,
    config: &Arc<DaemonConfig>,
    permits: &Arc<Semaphore>,
) {
    let refuse = |id, message| async move {
        let _ = tx.send(ShellResponse::Error { id, message }).await;
    };
    let mut commands = JoinSet::new();
    let mut pending = Some(first);
    loop {
        let line = match pending.take() {
            Some(line) => line,
            None => tokio::select! {
                line = read_line(reader) => line,
                () = hangup.cancelled() => break,
            },
        };
        let request = match line {
            Line::End => break,
            Line::TooLong => {
                refuse(
                    None,
                    format!("request longer than {MAX_REQUEST_BYTES} bytes"),
                )
                .await;
                break;
            }
            Line::Text(text) => match serde_json::from_str::<ShellRequest>(&text) {
                Ok(request) => request,
                Err(e) => {
                    refuse(None, format!("bad request: {e}")).await;
                    continue;
                }
            },
        };
        let Ok(permit) = Arc::clone(permits).try_acquire_owned() else {
            let message = format!(
                "too many commands running (limit {}); wait for one to finish",
                config.max_concurrent
            );
            refuse(Some(request.id), message).await;
            continue;
        };
        let (tx, cancel, config) = (tx.clone(), hangup.clone(), Arc::clone(config));
        commands.spawn(async move {
            let done = exec::run(request, &config.workspace, config.limits, &tx, &cancel).await;
            drop(permit);
            if let Some(frame) = done {
                let _ = tx.send(frame).await;
            }
        });
    }
    // The client hung up (or broke the protocol): everything it started is killed.
    hangup.cancel();
    while commands.join_next().await.is_some() {}
}

enum Line {
    Text(String),
    TooLong,
    End,
}

async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Line {
    let mut buf = Vec::new();
    let limit = MAX_REQUEST_BYTES as u64 + 1;
    match reader.take(limit).read_until(b'\n', &mut buf).await {
        Ok(0) | Err(_) => Line::End,
        Ok(_) if buf.last() != Some(&b'\n') && buf.len() as u64 >= limit => Line::TooLong,
        Ok(_) => Line::Text(String::from_utf8_lossy(&buf).into_owned()),
    }
}
