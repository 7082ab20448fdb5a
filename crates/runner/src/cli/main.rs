//! `runner`: the operator's command. It provisions users' workspaces and starts, supervises and
//! stops their agents (`init`, `start`, `stop`, `status`, `logs`, `restart`; the process tier),
//! manages a user's memory (`runner memory ...`, `runner memory rekey`) and schedules
//! (`runner schedule ...`, in `schedule_cmd`), reports token usage and cost (`runner usage`, in
//! `usage_cmd`), lists and exports conversations (`runner sessions ...`, in `sessions_cmd`),
//! forgets a user
//! (`runner forget`, in `keys_cmd`) and prints the tool catalogue (`runner tools`).
//!
//! Modules: `cli` (clap surface), `init_cmd` (with `init_provider`: the model it asks for), `start_cmd` (foreground), `detach` (`--detach`),
//! `running` (what already serves a user, with which settings), `interrupt` (Ctrl-C while
//! starting), `supervise` (one user's guests: launch, readiness, restart, stop), `guest` (spawning
//! one guest and waiting for it), `stop_cmd`, `status_cmd`, `logs_cmd`, `memory_cmd` (with
//! `agent_copy`: what it follows of the agent's own agent.toml), `tools_cmd`, `out`.

mod agent_copy;
mod args;
mod container_guest;
mod detach;
mod guest;
mod images_cmd;
mod init_cmd;
mod init_provider;
mod interrupt;
mod keys_cmd;
mod log_file;
mod logs_cmd;
mod mcp_cmd;
mod mcp_servers_cmd;
mod memory_act;
mod memory_audit;
mod memory_cmd;
mod memory_governed;
mod memory_organise;
mod memory_tree;
mod open_cmd;
mod out;
mod running;
mod schedule_cmd;
mod sessions_cmd;
mod start_cmd;
mod status_cmd;
mod stop_cmd;
mod supervise;
mod tools_cmd;
mod tui_cmd;
mod usage_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Parser;
use runner::{RunnerConfig, Tier};

/// The global options every subcommand sees.
#[derive(Debug, Clone)]
pub struct Global {
    pub config: Option<PathBuf>,
    pub user: Option<String>,
    pub insecure: bool,
    pub verbose: bool,
}

impl Global {
    pub fn runner_config(&self) -> Result<RunnerConfig> {
        let path = RunnerConfig::locate(self.config.as_deref())?;
        Ok(RunnerConfig::load(&path)?)
    }

    /// The config and the users selected by `--user`, checked to name tiers this build can run
    /// with the flags given (a user of the process tier needs `--insecure`).
    pub fn launchable_users(&self) -> Result<(RunnerConfig, Vec<runner::UserEntry>)> {
        let config = self.runner_config()?;
        let users = config.select(self.user.as_deref())?;
        let process: Vec<&str> = users
            .iter()
            .filter(|u| u.tier == Tier::Process)
            .map(|u| u.id.as_str())
            .collect();
        if !process.is_empty() && !self.insecure {
            bail!(
                "the process tier ({} in runner.toml) runs each agent and its shell as host \
                 processes confined only by Landlock; pass --insecure to accept that (e.g. \
                 `runner --insecure start`)",
                process.join(", ")
            );
        }
        Ok((config, users))
    }
}

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    init_tracing(cli.verbose);
    let global = Global {
        config: cli.config.clone(),
        user: cli.user.clone(),
        insecure: cli.insecure,
        verbose: cli.verbose,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&anyhow::Error::new(e).context("cannot start the async runtime")),
    };
    let result = runtime.block_on(async move {
        let Some(command) = cli.command else {
            return if cli.tui {
                tui_cmd::run(&global)
            } else {
                anyhow::bail!("nothing to do: give a command (see runner --help) or --tui")
            };
        };
        match command {
            args::Command::Init {
                workspace_root,
                tier,
                provider,
                model,
                base_url,
                api_key_env,
                no_check,
            } => {
                let provider = init_provider::ProviderFlags {
                    provider,
                    model,
                    base_url,
                    api_key_env,
                    no_check,
                };
                init_cmd::run(&global, workspace_root, tier, provider).await
            }
            args::Command::Start { detach, supervisor } => {
                let mode = match (supervisor, detach) {
                    (true, _) => start_cmd::Mode::Supervisor,
                    (false, true) => start_cmd::Mode::Detached,
                    (false, false) => start_cmd::Mode::Foreground,
                };
                start_cmd::run(&global, mode).await
            }
            args::Command::Stop => stop_cmd::run(&global).await,
            args::Command::Status { json } => status_cmd::run(&global, json).await,
            args::Command::Logs {
                role,
                follow,
                lines,
            } => logs_cmd::run(&global, role, follow, lines).await,
            args::Command::Restart { detach } => {
                // An agent running in the background comes back in the background.
                let mode = if detach || stop_cmd::any_detached(&global)? {
                    start_cmd::Mode::Detached
                } else {
                    start_cmd::Mode::Foreground
                };
                stop_cmd::run(&global).await?;
                start_cmd::run(&global, mode).await
            }
            args::Command::Memory(args) => memory_cmd::run(args, &global).await,
            args::Command::Schedule(args) => schedule_cmd::run(args, &global).await,
            args::Command::Usage(args) => usage_cmd::run(args, &global).await,
            args::Command::Sessions(args) => sessions_cmd::run(args, &global).await,
            args::Command::Forget { yes } => keys_cmd::forget(&global, yes).await,
            args::Command::Mcp { root, agent_config } => {
                mcp_cmd::run(&global, root, agent_config).await
            }
            args::Command::McpServers { root, agent_config } => {
                mcp_servers_cmd::run(&global, root, agent_config).await
            }
            args::Command::Images(command) => images_cmd::run(&global, command).await,
            args::Command::Tools {
                json,
                memory,
                agent_config,
            } => tools_cmd::run(&global, json, memory.as_deref(), agent_config.as_deref()).await,
            args::Command::Open { no_browser } => open_cmd::run(&global, no_browser).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // `runner tools --json | head`: the reader has all it wanted; nothing went wrong.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// True when the error is a write to a pipe whose reader has gone.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// One line on stderr, the cause chain joined, then a non-zero exit (130 when a signal stopped a
/// command before it was done).
fn fail(error: &anyhow::Error) -> ExitCode {
    let line: Vec<String> = error.chain().map(ToString::to_string).collect();
    #[allow(
        clippy::print_stderr,
        reason = "the CLI reports its one-line error on stderr"
    )]
    {
        // A cause may quote a file or a log another process wrote: shown, never sent raw.
        eprintln!("error: {}", types::terminal::escape_text(&line.join(": ")));
    }
    if error.downcast_ref::<interrupt::Interrupted>().is_some() {
        ExitCode::from(interrupt::EXIT_INTERRUPTED)
    } else {
        ExitCode::FAILURE
    }
}

fn init_tracing(verbose: bool) {
    let default = if verbose { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("OXYDRA_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
