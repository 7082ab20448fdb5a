//! The shell daemon behind `shell-vm`: one per user, listening on `<workspace>/ipc/shell.sock`
//! and running each [`types::ShellRequest`] as `/bin/sh -c` in the user's `shared/` directory.
//!
//! Every command gets its own process group, a minimal environment ([`exec::command_env`]), a
//! timeout and an output cap; its stdout and stderr stream back as [`types::ShellResponse`] frames
//! (protocol and framing: [`types::ShellRequest`]'s module docs). When the command's shell exits,
//! when it times out, or when the client hangs up, the whole group is killed with `SIGKILL`.
//!
//! A connection may instead ask for one of the user's stdio MCP servers ([`types::McpSpawn`]):
//! [`mcp`] starts it the same way (its own process group, a cleared environment, `shared/`, the
//! daemon's confinement and uid) and pipes the connection's bytes to and from it.
//!
//! Only the user's own `oxydra-vm` is served: a connection must come from the daemon's uid and
//! prove the user's shell secret before anything runs ([`auth`]).
//!
//! The binary confines itself with Landlock ([`sandbox::Role::ShellVm`]) before this crate's
//! async code starts; nothing here widens or checks that confinement. This crate never opens
//! `.oxydra/` or `vault/`.

pub mod auth;
mod error;
pub mod exec;
mod group;
pub mod mcp;
mod server;
mod utf8;

pub use auth::{Prover, Verifier};
pub use error::DaemonError;
pub use exec::{CommandLimits, command_env};
pub use server::{DaemonConfig, bind_socket, serve};
