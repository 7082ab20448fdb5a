//! `oxydra-vm`: one user's agent — gateway, runtime, tools, memory.
//!
//! ```text
//! oxydra-vm [--bootstrap FILE | --bootstrap-json JSON] [--insecure]
//!           (bootstrap JSON on stdin without either)
//! ```
//!
//! Order matters: read and validate the bootstrap and the user's `agent.toml`, load the gateway
//! token, confine this single thread with Landlock as `oxydra-vm`, and only then start tokio — so
//! every worker thread, database thread and child inherits the sandbox. Then compose the agent
//! ([`runner::compose`]: the store unless `[memory] enabled = false`, the tools, the runtime) with
//! its provider, start the gateway on 127.0.0.1, write the endpoint (`.oxydra/gateway.json`, with a
//! public copy in `ipc/`) and `.oxydra/health.json`, and serve until SIGTERM or SIGINT (which
//! removes them). Every file it writes goes through `runner::SafeDir` (never through a link).

mod health;
mod serve;

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Parser;
use gateway::GatewayToken;
use runner::{SandboxMode, VmBootstrap, load_agent_config, provision};
use sandbox::{Enforcement, Role};

#[derive(Debug, Parser)]
#[command(
    name = "oxydra-vm",
    about = "One user's agent (started by the runner)."
)]
struct Cli {
    /// Bootstrap JSON file; without it (or --bootstrap-json) the bootstrap is read from stdin.
    #[arg(long, conflicts_with = "bootstrap_json")]
    bootstrap: Option<PathBuf>,
    /// The bootstrap itself (the container tier passes it this way; it holds no secret).
    #[arg(long = "bootstrap-json")]
    bootstrap_json: Option<String>,
    /// Run unconfined (loudly) when the kernel cannot enforce Landlock, whatever the bootstrap says.
    #[arg(long)]
    insecure: bool,
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let line: Vec<String> = e.chain().map(ToString::to_string).collect();
            tracing::error!("oxydra-vm failed: {}", line.join(": "));
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OXYDRA_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
    let cli = Cli::parse();
    let mut boot = read_bootstrap(&cli)?;
    if cli.insecure && boot.sandbox == SandboxMode::Required {
        boot.sandbox = SandboxMode::BestEffort;
    }
    let config = load_agent_config(boot.agent_config.as_deref())?;
    let ws = provision(&boot.workspace_root, &boot.user_id)?;
    let token_path = boot.token_path();
    let token_dir = token_path.parent().map(PathBuf::from).unwrap_or_default();
    let token =
        GatewayToken::load_or_create(&token_dir).context("cannot load the gateway token")?;
    let db = config.memory.db_path.resolve(&ws.root);
    if config.memory.enabled
        && config.memory.remote_url.is_none()
        && !db.starts_with(&ws.root)
        && boot.sandbox != SandboxMode::Off
    {
        bail!(
            "memory.db_path {} is outside the user's workspace, which the sandbox hides; use \
             db_path = \"auto\" or a path inside {}",
            db.display(),
            ws.root.display()
        );
    }
    runner::check_db_place(&config.memory, &ws)?;
    std::env::set_current_dir(&ws.root)
        .with_context(|| format!("cannot enter {}", ws.root.display()))?;
    tracing::info!(user = %boot.user_id, tier = boot.tier.name(), "oxydra-vm starting");

    let sandbox = confine(&boot, &ws)?;
    // It holds the user's keys and shell secret: no core dumps, no ptrace or /proc/<pid>/mem by
    // other processes of its uid (another user's shell, when the runner is not root).
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        tracing::warn!(error = %e, "cannot make oxydra-vm non-dumpable");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(serve::run(boot, ws, config, token, sandbox));
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result
}

/// Applies the `oxydra-vm` Landlock ruleset to this (still single) thread as the bootstrap asks;
/// returns a word for the health file.
fn confine(boot: &VmBootstrap, ws: &types::WorkspacePaths) -> anyhow::Result<&'static str> {
    if boot.sandbox == SandboxMode::Off {
        tracing::warn!("no self-confinement (sandbox = off): the tier must confine this process");
        return Ok("off");
    }
    let confinement =
        sandbox::confine(Role::OxydraVm, ws, &[]).context("cannot confine oxydra-vm")?;
    match confinement.enforcement {
        Enforcement::Full if boot.tier == runner::Tier::Container => Ok("container+landlock"),
        Enforcement::Full => Ok("landlock"),
        Enforcement::Partial => {
            tracing::warn!(
                "the oxydra-vm sandbox is only partially enforced by this kernel; file visibility \
                 is enforced, newer restrictions are not"
            );
            Ok("landlock-partial")
        }
        Enforcement::None if boot.tier == runner::Tier::Container => {
            tracing::info!(
                "Landlock is not available inside this container; its mounts alone confine the \
                 agent"
            );
            Ok("container")
        }
        Enforcement::None if boot.sandbox == SandboxMode::BestEffort => {
            tracing::error!(
                "RUNNING UNCONFINED (--insecure): this kernel has no Landlock, so the agent's \
                 process can read and write every file this uid can, including other users' \
                 workspaces"
            );
            Ok("NONE")
        }
        Enforcement::None => {
            confinement.require_enforced()?;
            bail!("the oxydra-vm sandbox is not enforced")
        }
    }
}

fn read_bootstrap(cli: &Cli) -> anyhow::Result<VmBootstrap> {
    let text = match (&cli.bootstrap, &cli.bootstrap_json) {
        (_, Some(json)) => json.clone(),
        (Some(path), None) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the bootstrap {}", path.display()))?,
        (None, None) => {
            let mut text = String::new();
            std::io::stdin()
                .take(1024 * 1024)
                .read_to_string(&mut text)
                .context("cannot read the bootstrap from stdin")?;
            text
        }
    };
    Ok(VmBootstrap::from_json(&text)?)
}
