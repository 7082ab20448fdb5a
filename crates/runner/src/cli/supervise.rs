//! One user's supervisor (either tier): start `shell-vm` then `oxydra-vm` — as host processes or
//! as containers — restart a crashed guest with backoff (within a bound), and on shutdown stop
//! both (removing their containers) and remove every marker. Before each launch the workspace is
//! healed (see [`runner::heal`]; what was repaired goes to the log and the runner marker), and in
//! the process tier each guest runs in a cgroup that ends with it (see [`runner::Tracking`]).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use runner::container_spec::{GuestSpec, container_body};
use runner::{
    ChildInfo, RestartPolicy, RunnerConfig, RunnerMarker, SandboxMode, Separation, Tier, UserEntry,
    VmBootstrap,
};
use sandbox::Role;
use types::{AgentConfig, CancellationToken, ShellBootstrap, WorkspacePaths};

use crate::guest::{self, Guest};

#[path = "supervise_healing.rs"]
mod healing;
#[path = "supervise_mcp.rs"]
mod mcp_containers;
use crate::out::say;

/// Everything one user's supervisor needs.
#[derive(Debug, Clone)]
pub struct Plan {
    pub config: RunnerConfig,
    pub user: UserEntry,
    pub ws: WorkspacePaths,
    pub shell_bin: PathBuf,
    pub vm_bin: PathBuf,
    /// Landlock is missing and `--insecure` was given: guests run unconfined, loudly.
    pub unconfined: bool,
    /// The user's agent settings (read before start).
    pub agent: AgentConfig,
    /// The engine, in the container tier.
    pub docker: Option<bollard::Docker>,
    /// A digest of the user's settings, kept in the runner marker (see `start_cmd`).
    pub config_digest: String,
    /// The uid the user's guests run as (their own when the runner is root).
    pub separation: Separation,
    /// The user's memory encryption key, handed to `oxydra-vm` in its bootstrap only.
    pub memory_key: Option<memory::EncryptionKey>,
    /// The user's stdio MCP servers: read paths for the shell, containers of their own.
    pub mcp: runner::McpPlan,
}

struct Supervisor {
    plan: Plan,
    guests: BTreeMap<&'static str, Guest>,
    restarts: BTreeMap<&'static str, u32>,
    crashes: BTreeMap<&'static str, VecDeque<Instant>>,
    started_at: String,
    /// The verifier and proof key of the user's current shell secret, for each `shell-vm`.
    keys: runner::ShellKeys,
    /// Where the guests' processes are tracked (process tier).
    tracking: runner::Tracking,
    /// What was repaired in the workspace (`<time> <what>`), for the marker.
    repairs: Vec<String>,
    /// Why the last healing could not finish, if it could not.
    unrepaired: Option<String>,
    /// The containers of the user's MCP servers that have their own (container tier).
    mcp: Vec<crate::container_guest::ContainerGuest>,
}

/// How often the workspace is healed while both guests run (see `healing`).
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// What [`Supervisor::wait_any`] saw.
enum Event {
    Stop,
    Exited(Role, std::process::ExitStatus),
    Check,
}

/// Runs the user's guests until `stop` is cancelled or a guest cannot be kept running. The caller
/// has claimed the workspace (see `start_cmd`); markers are removed on the way out either way.
pub async fn run(plan: Plan, stop: CancellationToken) -> Result<()> {
    let mut sup = Supervisor {
        plan,
        guests: BTreeMap::new(),
        restarts: BTreeMap::new(),
        crashes: BTreeMap::new(),
        started_at: crate::out::now(),
        keys: runner::ShellKeys::default(),
        tracking: runner::Tracking::Untracked("container tier"),
        repairs: Vec::new(),
        unrepaired: None,
        mcp: Vec::new(),
    };
    if sup.plan.docker.is_none() {
        sup.tracking = runner::Tracking::of(&sup.plan.ws);
        if let runner::Tracking::Untracked(why) = sup.tracking {
            tracing::warn!(
                "{why}: the shell's processes are not tracked, so a command that leaves its \
                 session can outlive a stop"
            );
        }
    }
    let result = sup.serve(&stop).await;
    sup.stop_all().await;
    result
}

impl Supervisor {
    async fn serve(&mut self, stop: &CancellationToken) -> Result<()> {
        self.heal();
        self.write_marker()?;
        self.keys = runner::issue_shell_secret(&self.plan.ws, self.plan.separation.identity())?;
        let user = self.plan.user.id.clone();
        // The MCP servers' own containers first, so they serve once the agent is ready.
        self.mcp = mcp_containers::start(&self.plan, &self.keys).await?;
        let started = self.start_both(stop).await;
        let Some(endpoint) = started.with_context(|| format!("cannot start {user}'s agent"))?
        else {
            return Ok(());
        };
        let token = self
            .plan
            .ws
            .internal()
            .join(gateway::GatewayToken::FILE_NAME);
        say(format!(
            "{user}: ready at {endpoint} (token in {}; logs in {})",
            token.display(),
            runner::runner_log_path(&self.plan.ws, "")
                .with_file_name("")
                .display()
        ));
        loop {
            let (role, status) = match self.wait_any(stop).await {
                Event::Stop => return Ok(()),
                Event::Check => {
                    self.check(stop).await?;
                    continue;
                }
                Event::Exited(role, status) => (role, status),
            };
            let what = guest::describe(status);
            let log = guest::log_path(&self.plan.ws, role.name());
            let policy = self.plan.config.supervision.restart;
            if policy == RestartPolicy::Never
                || (policy == RestartPolicy::OnFailure && status.success())
            {
                bail!(
                    "{user}'s {role} exited ({what}); restart = {policy:?}, so {user} is stopped; see {}",
                    log.display()
                );
            }
            tracing::warn!(%user, %role, "{role} exited ({what}); restarting");
            self.restart(role, &what, stop).await?;
        }
    }

    /// The first guest to exit and how, `stop` being cancelled, or the time for a check (see
    /// `healing`).
    async fn wait_any(&mut self, stop: &CancellationToken) -> Event {
        let mut iter = self.guests.values_mut();
        let (Some(a), Some(b)) = (iter.next(), iter.next()) else {
            stop.cancelled().await;
            return Event::Stop;
        };
        let (ra, rb) = (a.role, b.role);
        tokio::select! {
            () = stop.cancelled() => Event::Stop,
            s = a.wait() => Event::Exited(ra, s),
            s = b.wait() => Event::Exited(rb, s),
            () = tokio::time::sleep(CHECK_EVERY) => Event::Check,
        }
    }

    /// Launches both guests at once and waits until both serve: creating and starting a container
    /// is most of a start, and `oxydra-vm` needs the shell only when it runs a command (its health
    /// says `shell: not running` until the shell serves). If either fails, or `stop` is cancelled
    /// while they get ready (`None`), both are stopped.
    async fn start_both(&mut self, stop: &CancellationToken) -> Result<Option<String>> {
        let grace = self.plan.config.supervision.stop_timeout;
        let timeout = self.plan.config.supervision.ready_timeout;
        let (shell, vm) = tokio::join!(self.launch(Role::ShellVm), self.launch(Role::OxydraVm));
        let (mut shell, mut vm) = match (shell, vm) {
            (Ok(shell), Ok(vm)) => (shell, vm),
            (Ok(mut started), Err(e)) | (Err(e), Ok(mut started)) => {
                started.stop(grace).await;
                return Err(e);
            }
            (Err(e), Err(_)) => return Err(e),
        };
        let ws = &self.plan.ws;
        let ready = tokio::select! {
            r = async { tokio::join!(shell.wait_ready(ws, timeout), vm.wait_ready(ws, timeout)) } => Some(r),
            () = stop.cancelled() => None,
        };
        let endpoint = match ready {
            Some((Ok(_), Ok(endpoint))) => endpoint,
            Some((Err(e), _) | (_, Err(e))) => {
                vm.stop(grace).await;
                shell.stop(grace).await;
                return Err(e);
            }
            None => {
                vm.stop(grace).await;
                shell.stop(grace).await;
                return Ok(None);
            }
        };
        self.guests.insert(Role::ShellVm.name(), shell);
        self.guests.insert(Role::OxydraVm.name(), vm);
        self.write_marker()?;
        Ok(Some(endpoint))
    }

    /// Starts `role` and waits until it serves.
    async fn start(&mut self, role: Role) -> Result<String> {
        let mut guest = self.launch(role).await?;
        let ready = guest
            .wait_ready(&self.plan.ws, self.plan.config.supervision.ready_timeout)
            .await;
        match ready {
            Ok(endpoint) => {
                self.guests.insert(role.name(), guest);
                self.write_marker()?;
                Ok(endpoint)
            }
            Err(e) => {
                guest.stop(self.plan.config.supervision.stop_timeout).await;
                Err(e)
            }
        }
    }

    /// Launches `role` (a host process or a container) after removing what a previous instance
    /// may have left; does not wait for it to serve.
    async fn launch(&self, role: Role) -> Result<Guest> {
        let ws = &self.plan.ws;
        let stale = match role {
            Role::ShellVm => vec![types::shell_socket_path(ws)],
            Role::OxydraVm => runner::oxydra_vm_files(ws).to_vec(),
        };
        for file in &stale {
            runner::remove_if_exists(file)?;
        }
        let guest = match &self.plan.docker {
            Some(docker) => {
                let p = &self.plan;
                let (uid, gid) = match p.separation.guest(role) {
                    Some(id) => (id.uid, id.gid),
                    None => (
                        rustix::process::getuid().as_raw(),
                        rustix::process::getgid().as_raw(),
                    ),
                };
                let container = container_body(&GuestSpec {
                    role,
                    user: &p.user,
                    ws: &p.ws,
                    settings: &p.config.container,
                    agent: &p.agent,
                    uid,
                    gid,
                    shell_keys: &self.keys,
                    agent_uid: p.separation.guest(Role::OxydraVm).map(|id| id.uid),
                    memory_key: p.memory_key.as_ref(),
                    shell_read_paths: &p.mcp.shell_read_paths,
                })?;
                let name =
                    runner::container_name(&p.config.workspace_root, &p.user.id, role.name());
                guest::launch_container(role, docker, &name, container, &p.ws).await?
            }
            None => {
                let (binary, args, bootstrap) = self.launch_spec(role)?;
                let identity = self.plan.separation.guest(role);
                let placement = match self.tracking.cgroup() {
                    Some(cgroup) => Some(cgroup.prepare(role.name())?),
                    None => None,
                };
                let who = (identity, placement);
                guest::spawn(role, &binary, &args, &self.plan.ws, &bootstrap, who).await?
            }
        };
        Ok(guest)
    }

    fn launch_spec(&self, role: Role) -> Result<(PathBuf, Vec<&'static str>, String)> {
        let p = &self.plan;
        let mut args = Vec::new();
        let bootstrap = match role {
            Role::ShellVm => {
                if p.unconfined {
                    args.push("--allow-unconfined");
                }
                let mut boot =
                    ShellBootstrap::new(p.user.id.clone(), p.config.workspace_root.clone());
                self.keys.fill(&mut boot);
                boot.agent_uid = p.separation.guest(Role::OxydraVm).map(|id| id.uid);
                boot.extra_read_paths = p.mcp.shell_read_paths.clone();
                serde_json::to_string(&boot)?
            }
            Role::OxydraVm => {
                let mut boot = VmBootstrap::new(p.user.id.clone(), p.config.workspace_root.clone());
                boot.tier = Tier::Process;
                // The process tier is --insecure: Landlock whenever the kernel has it; without it
                // both guests run unconfined and say so in their logs.
                boot.sandbox = SandboxMode::BestEffort;
                boot.agent_config = p.user.agent_config.clone();
                boot.gateway_port = p.user.gateway_port;
                boot.default_model.clone_from(&p.user.model);
                boot.memory_key = p
                    .memory_key
                    .as_ref()
                    .map(|k| runner::SecretText(k.expose().to_owned()));
                // Read at each launch: a renewed certificate is served from the next restart.
                boot.tls = runner::TlsPem::read(&p.agent.gateway)?;
                serde_json::to_string(&boot)?
            }
        };
        let binary = match role {
            Role::ShellVm => p.shell_bin.clone(),
            Role::OxydraVm => p.vm_bin.clone(),
        };
        Ok((binary, args, bootstrap))
    }

    /// Restarts `role` with backoff until it is ready again, or gives up when it crashed more than
    /// `max_restarts` times within the window.
    async fn restart(&mut self, role: Role, what: &str, stop: &CancellationToken) -> Result<()> {
        let user = self.plan.user.id.clone();
        let s = self.plan.config.supervision.clone();
        if let Some(mut dead) = self.guests.remove(role.name()) {
            // Reaps the process, or removes the exited container (keeping its log).
            dead.stop(s.stop_timeout).await;
        }
        if role == Role::OxydraVm {
            // Its endpoint names a port nobody holds now, which the shell (it can listen on
            // loopback, and reads the port in ipc/gateway.json) may take: a client must not find
            // that address, with the token to send it, until the next launch writes a new one.
            for file in runner::oxydra_vm_files(&self.plan.ws) {
                if let Err(e) = runner::remove_if_exists(&file) {
                    tracing::warn!(error = %e, "could not remove a dead agent's marker");
                }
            }
        }
        self.end_strays(role);
        let mut last = what.to_owned();
        let mut cause: Option<String> = None;
        loop {
            let crashes = self.crashes.entry(role.name()).or_default();
            let now = Instant::now();
            crashes.push_back(now);
            while crashes
                .front()
                .is_some_and(|t| now.duration_since(*t) > s.restart_window)
            {
                crashes.pop_front();
            }
            let n = u32::try_from(crashes.len()).unwrap_or(u32::MAX);
            if n > s.max_restarts {
                bail!(
                    "{user}'s {role} failed {n} times within {} s (last: {last}); giving up — \
                     {}",
                    s.restart_window.as_secs(),
                    self.give_up_advice(role, &cause)
                );
            }
            let wait = s.backoff(n);
            tracing::warn!(%user, %role, attempt = n, "restarting in {} ms", wait.as_millis());
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                () = tokio::time::sleep(wait) => {}
            }
            *self.restarts.entry(role.name()).or_default() += 1;
            self.heal_for_restart()?;
            match self.start(role).await {
                Ok(endpoint) => {
                    say(format!(
                        "{user}: {role} restarted after it exited ({what}); ready at {endpoint}"
                    ));
                    return Ok(());
                }
                Err(e) => {
                    let text = format!("{e:#}");
                    last = text.lines().next().unwrap_or_default().to_owned();
                    // The last line the guest logged (quoted after the first line), if any.
                    cause = text
                        .lines()
                        .skip(2)
                        .filter(|l| !l.trim().is_empty())
                        .last()
                        .map(|l| l.trim().to_owned());
                    tracing::warn!(%user, %role, "restart failed: {last}");
                }
            }
        }
    }

    fn write_marker(&self) -> Result<()> {
        let children = self
            .guests
            .iter()
            .map(|(name, g)| {
                let info = ChildInfo {
                    pid: g.pid,
                    started_at: g.started_at.clone(),
                    restarts: self.restarts.get(name).copied().unwrap_or(0),
                    container: g.container().map(str::to_owned),
                };
                ((*name).to_owned(), info)
            })
            .collect();
        let marker = RunnerMarker {
            pid: std::process::id(),
            started_at: self.started_at.clone(),
            tier: self.plan.user.tier.name().to_owned(),
            children,
            config_digest: Some(self.plan.config_digest.clone()),
            repairs: self.repairs.clone(),
        };
        Ok(runner::write_json_atomic(
            &self.plan.ws.root,
            &runner::runner_marker_path(&self.plan.ws),
            &marker,
        )?)
    }

    /// Stops oxydra-vm, then shell-vm (and every process they left), and removes every marker
    /// and the socket.
    async fn stop_all(&mut self) {
        let grace = self.plan.config.supervision.stop_timeout;
        mcp_containers::stop(&mut self.mcp, grace).await;
        for role in [Role::OxydraVm, Role::ShellVm] {
            if let Some(mut g) = self.guests.remove(role.name()) {
                let how = g.stop(grace).await.map(guest::describe);
                tracing::info!(%role, "stopped ({})", how.unwrap_or_default());
            }
        }
        if let Some(cgroup) = self.tracking.cgroup() {
            cgroup.remove();
        }
        // The markers, and what a guest stopped in the middle of writing one left beside it.
        if let Err(e) = runner::remove_run_files(&self.plan.ws) {
            tracing::warn!(error = %e, "could not remove a marker");
        }
    }
}

/// How long a user's supervisor may take to stop everything.
pub fn stop_budget(config: &RunnerConfig) -> Duration {
    config.supervision.stop_timeout * 2 + Duration::from_secs(5)
}
