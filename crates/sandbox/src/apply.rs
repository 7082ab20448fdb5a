//! Building the Landlock ruleset of a [`Role`] and applying it to the calling thread.

use std::fmt;
use std::path::PathBuf;

use landlock::{
    ABI, Access as _, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use types::WorkspacePaths;

use crate::{Access, Grant, Role, SandboxError, plan};

/// The Landlock ABI this crate asks for: filesystem rights up to ABI 5 (`IoctlDev`) and the ABI 6
/// scopes (signals and abstract unix sockets). Older kernels get a partial ruleset.
pub const TARGET_ABI: ABI = ABI::V7;

/// How much of the requested confinement the kernel enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Enforcement {
    /// Every requested restriction is in force.
    Full,
    /// Some restrictions are in force; the kernel lacks newer ones (e.g. truncate, scopes).
    /// File visibility (read, list, write) is enforced from ABI 1 on.
    Partial,
    /// Nothing is enforced: the kernel has no Landlock. The process runs unconfined.
    None,
}

impl fmt::Display for Enforcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Enforcement::Full => "fully enforced",
            Enforcement::Partial => "partially enforced",
            Enforcement::None => "not enforced",
        })
    }
}

/// The outcome of [`confine`]: which role, how much was enforced, and the paths granted.
#[derive(Debug, Clone)]
pub struct Confinement {
    pub role: Role,
    pub enforcement: Enforcement,
    /// Whether `no_new_privs` is set (set-uid binaries cannot gain privileges).
    pub no_new_privs: bool,
    /// The grants that were applied (absent optional system paths left out).
    pub grants: Vec<Grant>,
}

impl Confinement {
    /// An error unless at least part of the ruleset is enforced.
    pub fn require_enforced(&self) -> Result<(), SandboxError> {
        match self.enforcement {
            Enforcement::None => Err(SandboxError::NotEnforced { role: self.role }),
            Enforcement::Full | Enforcement::Partial => Ok(()),
        }
    }
}

/// Confines the calling thread (and every thread and process it creates from now on) to what
/// `role` may touch in `ws`, plus `extra_read_only` paths. Irreversible.
///
/// Best effort by kernel: on a kernel without Landlock this returns `Ok` with
/// [`Enforcement::None`]; callers that must not run unconfined use
/// [`Confinement::require_enforced`].
pub fn confine(
    role: Role,
    ws: &WorkspacePaths,
    extra_read_only: &[PathBuf],
) -> Result<Confinement, SandboxError> {
    let landlock_err = |source| SandboxError::Landlock { role, source };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(landlock_err)?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(landlock_err)?
        .create()
        .map_err(landlock_err)?;
    let mut applied = Vec::new();
    for grant in plan(role, ws, extra_read_only) {
        let fd = match PathFd::new(&grant.path) {
            Ok(fd) => fd,
            Err(_) if !grant.required && !grant.path.exists() => {
                tracing::debug!(path = %grant.path.display(), "optional system path absent");
                continue;
            }
            Err(source) if grant.path.exists() => {
                return Err(SandboxError::BadPath {
                    path: grant.path,
                    source,
                });
            }
            Err(_) => return Err(SandboxError::MissingPath { path: grant.path }),
        };
        let mut access = rights(grant.access);
        if !grant.path.is_dir() {
            access &= AccessFs::from_file(TARGET_ABI);
        }
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(landlock_err)?;
        applied.push(grant);
    }
    let status = ruleset.restrict_self().map_err(landlock_err)?;
    let enforcement = match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    };
    match enforcement {
        Enforcement::Full => tracing::info!(%role, "Landlock sandbox fully enforced"),
        Enforcement::Partial => tracing::warn!(
            %role,
            landlock = ?status.landlock,
            "Landlock sandbox only partially enforced: this kernel lacks newer Landlock features"
        ),
        Enforcement::None => tracing::error!(
            %role,
            "Landlock sandbox NOT enforced: this kernel does not support Landlock"
        ),
    }
    Ok(Confinement {
        role,
        enforcement,
        no_new_privs: status.no_new_privs,
        grants: applied,
    })
}

/// True when the running kernel supports Landlock (ABI 1 or later). Builds a ruleset without
/// applying it, so it is safe to call anywhere.
pub fn landlock_available() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(Ruleset::create)
        .is_ok()
}

fn rights(access: Access) -> BitFlags<AccessFs> {
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let all = AccessFs::from_all(TARGET_ABI);
    match access {
        Access::Read => read,
        Access::ReadExec => read | AccessFs::Execute,
        Access::ReadWrite => all & !BitFlags::from(AccessFs::Execute),
        Access::ReadWriteExec => all,
    }
}
