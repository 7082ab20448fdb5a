//! `oxydra-vm`: one user's agent — gateway, runtime, tools, memory.
//!
//! ```text
//! oxydra-vm [--bootstrap FILE | --bootstrap-json JSON] [--insecure]
//!           (bootstrap JSON on stdin without either)
//! ```
//!
//! Order matters: read and validate the bootstrap and the user's `agent.toml`, load the gateway
//! token and the TLS certificate (if any), confine this single thread with Landlock as `oxydra-vm`, and only then start tokio — so
//! every worker thread, database thread and child inherits the sandbox. Then compose the agent
//! ([`runner::compose`]: the store unless `[memory] enabled = false`, the tools, the runtime) with
//! its provider, start the gateway (on `[gateway] bind`, 127.0.0.1 by default), write the
//! endpoint (`.oxydra/gateway.json`, with a public copy in `ipc/`) and `.oxydra/health.json`, and serve until SIGTERM or SIGINT (which
//! removes them). Every file it writes goes through `runner::SafeDir` (never through a link). The
//! steps it shares with `shell-vm` (logging, bootstrap, confinement decision, signal wait) are
//! `sandbox::guest`.

mod health;
mod serve;

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Parser;
use gateway::GatewayToken;
use runner::{SandboxMode, TlsPem, VmBootstrap, load_agent_config, provision};
use sandbox::Role;
use sandbox::guest::{BootstrapArgs, GuestPolicy, Unenforced, confine_guest};

#[derive(Debug, Parser)]
#[command(
    name = "oxydra-vm",
    about = "One user's agent (started by the runner)."
)]
struct Cli {
    #[command(flatten)]
    bootstrap: BootstrapArgs,
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
    sandbox::guest::init_logging();
    let cli = Cli::parse();
    let mut boot = VmBootstrap::from_json(&cli.bootstrap.read()?)?;
    if cli.bootstrap.bootstrap_json.is_some() && (boot.memory_key.is_some() || boot.tls.is_some()) {
        // Every host user can read a command line (`ps`, /proc/*/cmdline).
        bail!(
            "the bootstrap holds a secret (the memory key or the TLS key): pass it on stdin or in \
             a --bootstrap file, never with --bootstrap-json"
        );
    }
    if cli.insecure && boot.sandbox == SandboxMode::Required {
        boot.sandbox = SandboxMode::BestEffort;
    }
    let config = load_agent_config(boot.agent_config.as_deref())?;
    // The runner hands the certificate and key over; run by hand, the files are read here,
    // before the sandbox hides them.
    let tls = match &boot.tls {
        Some(pem) => Some(pem.clone()),
        None => TlsPem::read(&config.gateway)?,
    };
    let tls = tls.map(|pem| pem.identity()).transpose()?;
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
    let result = runtime.block_on(serve::run(boot, ws, config, token, sandbox, tls));
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result
}

/// Applies the `oxydra-vm` Landlock ruleset to this (still single) thread as the bootstrap asks;
/// returns a word for the health file.
fn confine(boot: &VmBootstrap, ws: &types::WorkspacePaths) -> anyhow::Result<&'static str> {
    let unenforced = match boot.sandbox {
        SandboxMode::Off => {
            tracing::warn!(
                "no self-confinement (sandbox = off): the tier must confine this process"
            );
            return Ok("off");
        }
        SandboxMode::BestEffort => Unenforced::RunLoudly,
        SandboxMode::Required => Unenforced::Refuse,
    };
    let policy = GuestPolicy {
        container: boot.tier == runner::Tier::Container,
        unenforced,
    };
    let confined =
        confine_guest(Role::OxydraVm, ws, &[], policy).context("cannot confine oxydra-vm")?;
    Ok(confined.as_str())
}
