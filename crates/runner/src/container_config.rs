//! The `[container]` table of `runner.toml`: the guest images, each role's resource limits and the
//! shell's network. Only the container tier reads it.

use serde::Deserialize;

use crate::RunnerError;

/// The `oxydra-vm` image built by `runner images build` for this version.
pub fn default_oxydra_vm_image() -> String {
    format!("oxydra-vm:{}", env!("CARGO_PKG_VERSION"))
}

/// The `shell-vm` image built by `runner images build` for this version.
pub fn default_shell_vm_image() -> String {
    format!("oxydra-shell-vm:{}", env!("CARGO_PKG_VERSION"))
}

/// Which network a user's `shell-vm` container joins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellNetwork {
    /// No network at all: commands reach nothing but the workspace (the default).
    #[default]
    None,
    /// The host's network (for `curl`, package downloads, ...).
    Host,
}

impl ShellNetwork {
    /// Docker's `network_mode` for it.
    pub fn docker_mode(self) -> &'static str {
        match self {
            ShellNetwork::None => "none",
            ShellNetwork::Host => "host",
        }
    }
}

/// One container's resource limits, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Memory limit in MiB (swap included).
    pub memory_mb: u64,
    /// CPU quota in billionths of a CPU (Docker's `NanoCpus`).
    pub nano_cpus: i64,
    /// Most processes and threads the container may hold.
    pub pids: i64,
}

impl Limits {
    const OXYDRA_VM: Limits = Limits {
        memory_mb: 2048,
        nano_cpus: 2_000_000_000,
        pids: 512,
    };
    const SHELL_VM: Limits = Limits {
        memory_mb: 1024,
        nano_cpus: 1_000_000_000,
        pids: 256,
    };

    /// Memory in bytes, as Docker wants it.
    pub fn memory_bytes(&self) -> i64 {
        i64::try_from(self.memory_mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX)
    }
}

/// The container tier's settings, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSettings {
    pub oxydra_vm_image: String,
    pub shell_vm_image: String,
    pub oxydra_vm: Limits,
    pub shell_vm: Limits,
    /// The shell's network unless a user's entry says otherwise.
    pub shell_network: ShellNetwork,
}

impl Default for ContainerSettings {
    fn default() -> Self {
        Self {
            oxydra_vm_image: default_oxydra_vm_image(),
            shell_vm_image: default_shell_vm_image(),
            oxydra_vm: Limits::OXYDRA_VM,
            shell_vm: Limits::SHELL_VM,
            shell_network: ShellNetwork::None,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawContainer {
    oxydra_vm_image: Option<String>,
    shell_vm_image: Option<String>,
    shell_network: Option<ShellNetwork>,
    oxydra_vm: Option<RawLimits>,
    shell_vm: Option<RawLimits>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    memory_mb: Option<u64>,
    cpus: Option<f64>,
    pids: Option<i64>,
}

impl RawContainer {
    /// Resolves the table; `problem` wraps a message into the config error.
    pub(crate) fn resolve(
        self,
        problem: &dyn Fn(String) -> RunnerError,
    ) -> Result<ContainerSettings, RunnerError> {
        let d = ContainerSettings::default();
        let image = |value: Option<String>, default: String, key: &str| match value {
            Some(v) if v.trim().is_empty() || v.chars().any(char::is_whitespace) => Err(problem(
                format!("[container] {key} must be an image reference such as `{default}`"),
            )),
            Some(v) => Ok(v),
            None => Ok(default),
        };
        Ok(ContainerSettings {
            oxydra_vm_image: image(self.oxydra_vm_image, d.oxydra_vm_image, "oxydra_vm_image")?,
            shell_vm_image: image(self.shell_vm_image, d.shell_vm_image, "shell_vm_image")?,
            oxydra_vm: limits(self.oxydra_vm, d.oxydra_vm, "oxydra_vm", problem)?,
            shell_vm: limits(self.shell_vm, d.shell_vm, "shell_vm", problem)?,
            shell_network: self.shell_network.unwrap_or(d.shell_network),
        })
    }
}

fn limits(
    raw: Option<RawLimits>,
    default: Limits,
    table: &str,
    problem: &dyn Fn(String) -> RunnerError,
) -> Result<Limits, RunnerError> {
    let raw = raw.unwrap_or_default();
    let memory_mb = raw.memory_mb.unwrap_or(default.memory_mb);
    if memory_mb < 64 {
        return Err(problem(format!(
            "[container.{table}] memory_mb = {memory_mb} is too small; give at least 64"
        )));
    }
    let nano_cpus = match raw.cpus {
        None => default.nano_cpus,
        Some(c) if c.is_finite() && (0.01..=1024.0).contains(&c) => (c * 1e9).round() as i64,
        Some(c) => {
            return Err(problem(format!(
                "[container.{table}] cpus = {c} is out of range; give a number of CPUs such as 1.5"
            )));
        }
    };
    let pids = raw.pids.unwrap_or(default.pids);
    if pids < 16 {
        return Err(problem(format!(
            "[container.{table}] pids = {pids} is too small; give at least 16"
        )));
    }
    Ok(Limits {
        memory_mb,
        nano_cpus,
        pids,
    })
}
