//! One guest of either tier: a host process (spawned with its bootstrap on stdin and its output in
//! the runner's `<workspace_root>/.runner/<user>/logs/<role>.log`) or a container (see `container_guest`); wait until it is ready, wait for it
//! to exit, stop it.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use runner::{GatewayMarker, read_json};
use rustix::process::Signal;
use sandbox::Role;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use types::WorkspacePaths;

use crate::container_guest::ContainerGuest;

/// Lines of a guest's log quoted when it fails to start.
const TAIL_LINES: usize = 15;

/// How a guest runs.
#[derive(Debug)]
pub enum Handle {
    Process(Child),
    Container(ContainerGuest),
}

/// A running guest.
#[derive(Debug)]
pub struct Guest {
    pub role: Role,
    pub handle: Handle,
    /// The host pid (for a container: its init process).
    pub pid: u32,
    pub started_at: String,
    pub log: PathBuf,
}

/// `<workspace_root>/.runner/<user>/logs/<role>.log` (never in the workspace's `logs/`, which
/// the shell can write: see [`runner::runner_log_path`]).
pub fn log_path(ws: &WorkspacePaths, role: &str) -> PathBuf {
    runner::runner_log_path(ws, role)
}

/// Opens `role`'s log for appending (rotating it first when large), for a child's stdout and
/// stderr; never through a link, FIFO or hard link (see [`runner::SafeDir::open_append`]).
pub fn open_log(ws: &WorkspacePaths, role: &str) -> Result<(std::fs::File, std::fs::File)> {
    let dir = runner::runner_log_dir(ws)?;
    let name = format!("{role}.log");
    crate::log_file::rotate_if_large(&dir, &name, crate::log_file::ROTATE_BYTES);
    let file = dir.open_append(&name)?;
    let second = file
        .try_clone()
        .with_context(|| format!("cannot open the log {}", dir.path().join(&name).display()))?;
    Ok((file, second))
}

/// Starts `binary` as `role` in its own process group, in the user's workspace, with `bootstrap`
/// written to its stdin, as `identity` when given (see [`runner::drop_to`]). The environment is
/// passed through (oxydra-vm needs the provider's key; shell-vm drops everything but PATH and
/// LANG itself). With a `placement`, the child enters its cgroup first (see [`runner::Tracking`]).
pub async fn spawn(
    role: Role,
    binary: &Path,
    args: &[&str],
    ws: &WorkspacePaths,
    bootstrap: &str,
    (identity, placement): (Option<runner::GuestIdentity>, Option<runner::Placement>),
) -> Result<Guest> {
    let log = log_path(ws, role.name());
    let (stdout, stderr) = open_log(ws, role.name())?;
    let mut command = Command::new(binary);
    if let Some(place) = placement {
        // SAFETY: `enter` is one raw `write` (no allocation, no locks), done before privileges
        // are dropped (only root may move a process into the cgroup).
        #[allow(
            unsafe_code,
            reason = "pre_exec is the only way to place the child before it runs anything"
        )]
        unsafe {
            command.pre_exec(move || place.enter());
        }
    }
    if let Some(id) = identity {
        // SAFETY: `drop_to` makes only raw system calls (no allocation, no locks), which is
        // what a forked child of a multi-threaded process may do before it execs.
        #[allow(
            unsafe_code,
            reason = "pre_exec is the only way to drop privileges between fork and exec"
        )]
        unsafe {
            command.pre_exec(move || runner::drop_to(id));
        }
    }
    let mut child = command
        .args(args)
        .current_dir(&ws.root)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let pid = child.id().unwrap_or_default();
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(bootstrap.as_bytes())
            .await
            .with_context(|| format!("cannot hand {role} its bootstrap"))?;
        // Dropping stdin closes it: the guest reads to end of file.
    }
    tracing::info!(%role, pid, "started");
    Ok(Guest {
        role,
        handle: Handle::Process(child),
        pid,
        started_at: crate::out::now(),
        log,
    })
}

/// Starts `role` as the container `name` created from `container` (its bootstrap written to the
/// container's stdin when it reads it there), its output copied to the runner's `<role>.log`.
pub async fn launch_container(
    role: Role,
    docker: &bollard::Docker,
    name: &str,
    container: runner::container_spec::GuestContainer,
    ws: &WorkspacePaths,
) -> Result<Guest> {
    let log = log_path(ws, role.name());
    // Rotate like the process tier; the follower appends.
    drop(open_log(ws, role.name())?);
    let dir = runner::runner_log_dir(ws)?;
    let container =
        ContainerGuest::launch(docker, name, container, dir, format!("{}.log", role.name()))
            .await?;
    Ok(Guest {
        role,
        pid: container.pid,
        handle: Handle::Container(container),
        started_at: crate::out::now(),
        log,
    })
}

impl Guest {
    /// The container's name, for a container guest.
    pub fn container(&self) -> Option<&str> {
        match &self.handle {
            Handle::Container(c) => Some(&c.name),
            Handle::Process(_) => None,
        }
    }

    /// How the guest ended, if it has.
    async fn try_exited(&mut self) -> Result<Option<ExitStatus>> {
        match &mut self.handle {
            Handle::Process(child) => Ok(child.try_wait()?),
            Handle::Container(c) => Ok(c.try_exited().await),
        }
    }

    /// Waits until the guest exits; how it ended.
    pub async fn wait(&mut self) -> ExitStatus {
        match &mut self.handle {
            Handle::Process(child) => child.wait().await.unwrap_or_else(|_| failed_status()),
            Handle::Container(c) => c.wait().await,
        }
    }

    /// Waits until the guest serves (shell-vm: its socket accepts; oxydra-vm: `.oxydra/gateway.json`
    /// names this process and its port accepts), failing if it exits or `timeout` passes.
    pub async fn wait_ready(&mut self, ws: &WorkspacePaths, timeout: Duration) -> Result<String> {
        let deadline = Instant::now() + timeout;
        let mut poll = crate::out::Poll::new();
        loop {
            if let Some(status) = self.try_exited().await? {
                bail!(
                    "{} exited before it was ready ({})\nlast lines of {}:\n{}",
                    self.role,
                    describe(status),
                    self.log.display(),
                    crate::out::tail(&self.log, TAIL_LINES)
                );
            }
            if let Some(endpoint) = self.probe(ws).await {
                return Ok(endpoint);
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} was not ready within {} s\nlast lines of {}:\n{}",
                    self.role,
                    timeout.as_secs(),
                    self.log.display(),
                    crate::out::tail(&self.log, TAIL_LINES)
                );
            }
            poll.pause().await;
        }
    }

    async fn probe(&self, ws: &WorkspacePaths) -> Option<String> {
        match self.role {
            Role::ShellVm => {
                let socket = types::shell_socket_path(&ws.clone());
                tools::connect_unfollowed(&socket).await.ok()?;
                Some(socket.display().to_string())
            }
            Role::OxydraVm => {
                let marker: GatewayMarker = read_json(&ws.endpoint()).ok()??;
                // A container's pids are its own; its stale marker was removed before it started.
                if matches!(self.handle, Handle::Process(_)) && marker.pid != self.pid {
                    return None;
                }
                tokio::net::TcpStream::connect(marker.socket_addr()?)
                    .await
                    .ok()?;
                Some(marker.url)
            }
        }
    }

    /// SIGTERM, then SIGKILL after `grace`; returns how it ended. A container is also removed.
    pub async fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        let child = match &mut self.handle {
            Handle::Container(c) => return c.stop(grace).await,
            Handle::Process(child) => child,
        };
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        runner::signal(self.pid, Signal::TERM);
        match tokio::time::timeout(grace, child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                tracing::warn!(role = %self.role, "did not stop within {} s; killing it", grace.as_secs());
                let _ = child.start_kill();
                child.wait().await.ok()
            }
        }
    }
}

/// `exit status 1`, `killed by signal 9`.
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "ended".to_owned(),
    }
}

/// The status of a guest whose exit could not be read: a failure.
pub fn failed_status() -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus::from_raw(1 << 8)
}
