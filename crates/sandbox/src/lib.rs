//! Landlock confinement for the process tier.
//!
//! In the process tier a user's `oxydra-vm` and `shell-vm` run as plain host processes; this crate
//! is what stops them from seeing more than DESIGN §4 allows. [`plan`] turns a [`Role`] and the
//! user's [`types::WorkspacePaths`] into a list of [`Grant`]s (pure data, easy to test), and
//! [`confine`] applies that plan to the calling thread — and everything it spawns afterwards — with
//! Landlock, reporting how much the running kernel enforced ([`Enforcement`]).
//!
//! Landlock confines only the calling thread and threads created later: call [`confine`] before an
//! async runtime starts, or in a launcher such as the `sandbox-exec` binary, never after worker
//! threads exist. Denied accesses fail with `EACCES`.
//!
//! [`guest`] is what both guest binaries do the same way around that: logging, reading the
//! bootstrap, confining as their role with one decision table for an unenforced sandbox, and
//! waiting for SIGTERM or SIGINT.
//!
//! [`refuse_syscalls`] adds what Landlock cannot: a seccomp filter refusing the shell new
//! namespaces and SysV / POSIX message-queue IPC.
//!
//! This crate does not provision workspaces, start processes or confine the network.

mod apply;
mod error;
pub mod guest;
mod role;
mod syscalls;

pub use apply::{Confinement, Enforcement, TARGET_ABI, confine, landlock_available};
pub use error::SandboxError;
pub use role::{Access, Grant, Role, SYSTEM_READ_ONLY, SYSTEM_READ_WRITE, plan};
pub use syscalls::refuse_syscalls;
