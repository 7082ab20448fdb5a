//! What both guest binaries (`oxydra-vm` and `shell-vm`) do the same way around their own work:
//! log to stderr (filter from `OXYDRA_LOG`, default `info`) with [`init_logging`]; take the
//! bootstrap from `--bootstrap FILE`, `--bootstrap-json JSON` or stdin ([`BootstrapArgs`]);
//! confine the still single-threaded process as their role and decide what a sandbox the kernel
//! does not enforce means ([`confine_guest`]); and wait for SIGTERM or SIGINT
//! ([`ShutdownSignal`], listened for from the runtime's start). One copy, so the two guests cannot
//! drift apart.

use std::io::Read;
use std::path::PathBuf;

use types::WorkspacePaths;

use crate::{Enforcement, Role, SandboxError, confine};

/// Largest bootstrap read from stdin.
const MAX_BOOTSTRAP_BYTES: u64 = 1024 * 1024;

/// Where a guest's bootstrap comes from (flatten into the binary's command line).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BootstrapArgs {
    /// Bootstrap JSON file; without it (or --bootstrap-json) the bootstrap is read from stdin.
    #[arg(long, conflicts_with = "bootstrap_json")]
    pub bootstrap: Option<PathBuf>,
    /// The bootstrap itself, for one that holds no secret (the container tier passes
    /// `shell-vm`'s this way): a command line is visible to every user of the host.
    #[arg(long = "bootstrap-json")]
    pub bootstrap_json: Option<String>,
}

/// Why the bootstrap could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("cannot read the bootstrap {}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the bootstrap from stdin")]
    Stdin(#[source] std::io::Error),
}

impl BootstrapArgs {
    /// The bootstrap text: `--bootstrap-json`, else the `--bootstrap` file, else stdin (at most
    /// 1 MiB).
    pub fn read(&self) -> Result<String, BootstrapError> {
        match (&self.bootstrap, &self.bootstrap_json) {
            (_, Some(json)) => Ok(json.clone()),
            (Some(path), None) => {
                std::fs::read_to_string(path).map_err(|source| BootstrapError::File {
                    path: path.clone(),
                    source,
                })
            }
            (None, None) => {
                let mut text = String::new();
                std::io::stdin()
                    .take(MAX_BOOTSTRAP_BYTES)
                    .read_to_string(&mut text)
                    .map_err(BootstrapError::Stdin)?;
                Ok(text)
            }
        }
    }
}

/// Logs to stderr without colours; the filter comes from `OXYDRA_LOG` (default `info`).
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OXYDRA_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
}

/// How a guest is confined besides Landlock, and what it may do when Landlock enforces nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestPolicy {
    /// Runs in the container tier: the container's mounts confine it, Landlock is a second layer.
    pub container: bool,
    pub unenforced: Unenforced,
}

/// What an unenforced sandbox means outside a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unenforced {
    /// Refuse to run (the default).
    Refuse,
    /// Run, loudly (the operator passed `--insecure` / `--allow-unconfined`).
    RunLoudly,
}

/// How a guest ended up confined (the word goes into the health file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confined {
    /// Landlock fully enforced.
    Landlock,
    /// A container, with Landlock fully enforced inside it.
    ContainerLandlock,
    /// Landlock partly enforced: file visibility is, newer restrictions are not.
    Partial,
    /// A container whose engine allows no Landlock: its mounts alone confine the guest.
    Container,
    /// Nothing confines the guest (allowed by [`Unenforced::RunLoudly`]).
    Unconfined,
}

impl Confined {
    pub fn as_str(self) -> &'static str {
        match self {
            Confined::Landlock => "landlock",
            Confined::ContainerLandlock => "container+landlock",
            Confined::Partial => "landlock-partial",
            Confined::Container => "container",
            Confined::Unconfined => "NONE",
        }
    }
}

/// Confines the calling (still single) thread as `role` (plus `extra_read_only` paths, read and
/// execute) and decides, by `policy`, whether the guest may run with what the kernel enforced.
/// Call it before any async runtime starts.
pub fn confine_guest(
    role: Role,
    ws: &WorkspacePaths,
    extra_read_only: &[PathBuf],
    policy: GuestPolicy,
) -> Result<Confined, SandboxError> {
    let confinement = confine(role, ws, extra_read_only)?;
    let confined = decide(role, confinement.enforcement, policy)?;
    match confined {
        Confined::Landlock | Confined::ContainerLandlock => {}
        Confined::Partial => tracing::warn!(
            "the {role} sandbox is only partially enforced by this kernel; file visibility is \
             enforced, newer restrictions are not"
        ),
        Confined::Container => tracing::info!(
            "Landlock is not available inside this container; its mounts alone confine {role}"
        ),
        Confined::Unconfined => tracing::error!(
            "RUNNING UNCONFINED: this kernel has no Landlock, so {role} and everything it runs \
             can read and write every file this uid can, including .oxydra/, vault/ and other \
             users' workspaces"
        ),
    }
    Ok(confined)
}

/// The decision table of [`confine_guest`].
pub fn decide(
    role: Role,
    enforcement: Enforcement,
    policy: GuestPolicy,
) -> Result<Confined, SandboxError> {
    match (enforcement, policy.container, policy.unenforced) {
        (Enforcement::Full, true, _) => Ok(Confined::ContainerLandlock),
        (Enforcement::Full, false, _) => Ok(Confined::Landlock),
        (Enforcement::Partial, _, _) => Ok(Confined::Partial),
        (Enforcement::None, true, _) => Ok(Confined::Container),
        (Enforcement::None, false, Unenforced::RunLoudly) => Ok(Confined::Unconfined),
        (Enforcement::None, false, Unenforced::Refuse) => Err(SandboxError::NotEnforced { role }),
    }
}

/// SIGTERM and SIGINT, listened for from creation on: a guest creates it as soon as its async
/// runtime runs, so a signal that lands while it is still starting (writing its markers, say) is
/// not the default action killing it half-way, but a stop it sees once it is up.
#[derive(Debug)]
pub struct ShutdownSignal {
    /// `None` when the signal cannot be listened for (then the guest stops only with SIGKILL).
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
}

impl ShutdownSignal {
    /// Starts listening. Call it inside the tokio runtime.
    pub fn listen() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let (term, int) = (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        );
        if term.is_none() || int.is_none() {
            tracing::warn!("cannot listen for signals; stop with SIGKILL");
        }
        Self { term, int }
    }

    /// Returns at the next SIGTERM or SIGINT (one received since [`ShutdownSignal::listen`]
    /// counts). Cancel-safe: a `select!` may drop it and call it again.
    pub async fn recv(&mut self) {
        let (Some(term), Some(int)) = (self.term.as_mut(), self.int.as_mut()) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM"),
            _ = int.recv() => tracing::info!("SIGINT"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn policy(container: bool, unenforced: Unenforced) -> GuestPolicy {
        GuestPolicy {
            container,
            unenforced,
        }
    }

    #[test]
    fn the_decision_table() {
        use Enforcement::{Full, None, Partial};
        use Unenforced::{Refuse, RunLoudly};
        let check = |enforcement, container, unenforced, expected: Option<Confined>| {
            let got = decide(Role::ShellVm, enforcement, policy(container, unenforced)).ok();
            assert_eq!(
                got, expected,
                "{enforcement:?} container={container} {unenforced:?}"
            );
        };
        check(Full, false, Refuse, Some(Confined::Landlock));
        check(Full, true, Refuse, Some(Confined::ContainerLandlock));
        check(Partial, false, Refuse, Some(Confined::Partial));
        check(None, true, Refuse, Some(Confined::Container));
        check(None, false, RunLoudly, Some(Confined::Unconfined));
        check(None, false, Refuse, Option::None);
    }

    /// A SIGTERM that arrives while the guest is still starting (before it waits) stops it once
    /// it waits, instead of killing it half-way.
    #[tokio::test]
    async fn a_signal_before_the_wait_is_kept() {
        let mut stop = ShutdownSignal::listen();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        tokio::time::timeout(std::time::Duration::from_secs(30), stop.recv())
            .await
            .expect("the signal sent before recv is seen");
    }

    #[test]
    fn the_bootstrap_comes_from_json_then_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("boot.json");
        std::fs::write(&file, "{\"from\":\"file\"}").unwrap();
        let args = BootstrapArgs {
            bootstrap: Some(file.clone()),
            bootstrap_json: Option::None,
        };
        assert_eq!(args.read().unwrap(), "{\"from\":\"file\"}");
        let args = BootstrapArgs {
            bootstrap: Option::None,
            bootstrap_json: Some("{}".into()),
        };
        assert_eq!(args.read().unwrap(), "{}");
        let missing = BootstrapArgs {
            bootstrap: Some(dir.path().join("absent.json")),
            bootstrap_json: Option::None,
        };
        assert!(matches!(missing.read(), Err(BootstrapError::File { .. })));
    }
}
