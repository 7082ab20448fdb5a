//! The crate's one error type.

use std::path::PathBuf;

use crate::Role;

/// Why a confinement could not be built or applied.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A path the role needs (a workspace directory, or an extra path the caller named) does not
    /// exist: the workspace is not provisioned.
    #[error("{} is missing; provision the workspace first", path.display())]
    MissingPath { path: PathBuf },

    /// An extra read-only path given by the caller could not be opened.
    #[error("cannot open {} for a sandbox rule", path.display())]
    BadPath {
        path: PathBuf,
        #[source]
        source: landlock::PathFdError,
    },

    /// The kernel refused to build or apply the ruleset.
    #[error("cannot apply the {role} Landlock ruleset")]
    Landlock {
        role: Role,
        #[source]
        source: landlock::RulesetError,
    },

    /// Confinement was required but the kernel enforced none of it.
    #[error(
        "the {role} sandbox is not enforced: this kernel does not support Landlock (Linux 5.13+ \
         with Landlock enabled is needed); refusing to run unconfined"
    )]
    NotEnforced { role: Role },

    /// The seccomp filter of [`crate::refuse_syscalls`] could not be built or installed.
    #[error("cannot install the seccomp filter")]
    Seccomp(#[source] seccompiler::Error),
}
