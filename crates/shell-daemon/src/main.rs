//! `shell-vm`: one user's shell daemon.
//!
//! ```text
//! shell-vm [--bootstrap FILE] [--allow-unconfined | --container]
//!          (bootstrap JSON on stdin without either)
//! ```
//!
//! Order matters: scrub the environment (by re-executing itself), read and validate the bootstrap,
//! confine this single thread with Landlock as `shell-vm`, install the seccomp filter refusing new
//! namespaces and SysV IPC ([`sandbox::refuse_syscalls`]), and only then start tokio — so every
//! worker thread and every command inherits the sandbox — listen for SIGTERM/SIGINT, bind the
//! socket and serve. The steps it shares with `oxydra-vm` (logging, bootstrap, confinement
//! decision, signal wait) are `sandbox::guest`.

use std::os::unix::process::CommandExt;

use anyhow::Context;
use clap::Parser;
use sandbox::Role;
use sandbox::guest::{BootstrapArgs, GuestPolicy, ShutdownSignal, Unenforced, confine_guest};
use shell_daemon::{DaemonConfig, bind_socket, serve};
use types::ShellBootstrap;

#[derive(Debug, Parser)]
#[command(
    name = "shell-vm",
    about = "One user's shell daemon (started by the runner)."
)]
struct Cli {
    #[command(flatten)]
    bootstrap: BootstrapArgs,
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
    sandbox::guest::init_logging();
    let cli = Cli::parse();
    let text = cli.bootstrap.read()?;
    let boot: ShellBootstrap =
        serde_json::from_str(&text).context("the bootstrap is not valid JSON for shell-vm")?;
    boot.validate().context("invalid bootstrap")?;
    // The proof key lets whoever holds it pose as this daemon to the agent: never on a command
    // line, which every process that can list this one reads.
    if cli.bootstrap.bootstrap_json.is_some() {
        anyhow::bail!(
            "the bootstrap holds the daemon's proof key: pass it on stdin or in a private file, \
             never with --bootstrap-json"
        );
    }
    let ws = boot.workspace();
    tracing::info!(user = %boot.user_id, "shell-vm starting");

    let policy = GuestPolicy {
        container: cli.container,
        unenforced: if cli.allow_unconfined {
            Unenforced::RunLoudly
        } else {
            Unenforced::Refuse
        },
    };
    // The read_paths of the user's stdio MCP servers join the shell's grants, read-only.
    confine_guest(Role::ShellVm, &ws, &boot.extra_read_paths, policy)
        .context("cannot confine the shell")?;
    // After Landlock (which set no_new_privs), before any thread or command: no new namespaces,
    // no SysV or POSIX message-queue IPC for the shell and everything it runs.
    match sandbox::refuse_syscalls() {
        Ok(()) => tracing::info!("seccomp: namespaces and SysV IPC refused to the shell"),
        Err(e) if cli.allow_unconfined => {
            tracing::error!(error = %e, "RUNNING WITHOUT the seccomp filter (--allow-unconfined)");
        }
        Err(e) => return Err(e).context("cannot refuse namespaces and IPC to the shell"),
    }

    let config = DaemonConfig::from_bootstrap(&boot)?;
    // No core dumps, no ptrace by same-uid processes, /proc/<pid>/{environ,mem} unreadable.
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        tracing::warn!(error = %e, "cannot make the daemon non-dumpable");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // Listen before the socket exists: a SIGTERM/SIGINT from then on is a clean stop (which
    // removes the socket), never the default action leaving it behind.
    let mut stop = {
        let _in_runtime = runtime.enter();
        ShutdownSignal::listen()
    };
    let socket = boot.socket();
    let listener = bind_socket(&socket, config.socket_mode())?;
    tracing::info!(socket = %socket.display(), "listening");
    let result = runtime.block_on(serve(listener, config, async move { stop.recv().await }));
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
