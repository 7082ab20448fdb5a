//! `shell-vm`: one user's shell daemon.
//!
//! ```text
//! shell-vm [--bootstrap FILE | --bootstrap-json JSON] [--allow-unconfined | --container]
//!          (bootstrap JSON on stdin without either)
//! ```
//!
//! Order matters: scrub the environment (by re-executing itself), read and validate the bootstrap,
//! confine this single thread with Landlock as `shell-vm`, bind the socket, and only then start
//! tokio — so every worker thread and every command inherits the sandbox.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Parser;
use sandbox::{Enforcement, Role};
use shell_daemon::{DaemonConfig, bind_socket, serve};
use types::ShellBootstrap;

#[derive(Debug, Parser)]
#[command(
    name = "shell-vm",
    about = "One user's shell daemon (started by the runner)."
)]
struct Cli {
    /// Bootstrap JSON file; without it (or --bootstrap-json) the bootstrap is read from stdin.
    #[arg(long, conflicts_with = "bootstrap_json")]
    bootstrap: Option<PathBuf>,
    /// The bootstrap itself (the container tier passes it this way; it holds no secret).
    #[arg(long = "bootstrap-json")]
    bootstrap_json: Option<String>,
    /// Keep running (loudly degraded) when the kernel cannot enforce the Landlock sandbox.
    #[arg(long)]
    allow_unconfined: bool,
    /// Running in the container tier: the container's mounts confine the shell, and Landlock is
    /// a second layer applied when the engine allows it.
    #[arg(long, conflicts_with = "allow_unconfined")]
    container: bool,
}

/// The daemon's own environment after start; everything else is dropped by a re-exec so that no
/// secret sits in `/proc/<daemon>/environ`, which commands (same sandbox, same uid) could read.
const KEPT_ENV: &[&str] = &["PATH", "LANG", "OXYDRA_LOG", "RUST_LOG"];

fn main() -> anyhow::Result<()> {
    scrub_environment()?;
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OXYDRA_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
    let cli = Cli::parse();
    let boot = read_bootstrap(&cli)?;
    boot.validate().context("invalid bootstrap")?;
    let ws = boot.workspace();
    tracing::info!(user = %boot.user_id, "shell-vm starting");

    let confinement =
        sandbox::confine(Role::ShellVm, &ws, &[]).context("cannot confine the shell")?;
    match confinement.enforcement {
        Enforcement::Full => {}
        Enforcement::Partial => tracing::warn!(
            "the shell sandbox is only partially enforced by this kernel; file visibility is \
             enforced, newer restrictions are not"
        ),
        Enforcement::None if cli.container => tracing::info!(
            "Landlock is not available inside this container; its mounts alone confine the shell \
             (.oxydra/ and vault/ are not mounted here)"
        ),
        Enforcement::None if cli.allow_unconfined => tracing::error!(
            "RUNNING UNCONFINED (--allow-unconfined): this kernel has no Landlock, so shell \
             commands can read .oxydra/, vault/ and every file this uid can"
        ),
        Enforcement::None => {
            confinement.require_enforced()?;
            bail!("the shell sandbox is not enforced");
        }
    }

    let config = DaemonConfig::from_bootstrap(&boot)?;
    // No core dumps, no ptrace by same-uid processes, /proc/<pid>/{environ,mem} unreadable.
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        tracing::warn!(error = %e, "cannot make the daemon non-dumpable");
    }
    let socket = boot.socket();
    let listener = bind_socket(&socket)?;
    tracing::info!(socket = %socket.display(), "listening");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(serve(listener, config, shutdown_signal()));
    let _ = std::fs::remove_file(&socket);
    result?;
    tracing::info!("shell-vm stopped");
    Ok(())
}

/// Re-executes this binary with only [`KEPT_ENV`] when anything else is set.
fn scrub_environment() -> anyhow::Result<()> {
    if std::env::vars_os().all(|(k, _)| KEPT_ENV.iter().any(|kept| k == *kept)) {
        return Ok(());
    }
    let exe = std::env::current_exe().context("cannot find the shell-vm executable")?;
    let kept = std::env::vars_os().filter(|(k, _)| KEPT_ENV.iter().any(|kept| k == *kept));
    let error = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env_clear()
        .envs(kept)
        .exec();
    Err(error).context("cannot re-execute shell-vm with a clean environment")
}

fn read_bootstrap(cli: &Cli) -> anyhow::Result<ShellBootstrap> {
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
    serde_json::from_str(&text).context("the bootstrap is not valid JSON for shell-vm")
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot listen for signals; stop with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM"),
        _ = int.recv() => tracing::info!("SIGINT"),
    }
}
