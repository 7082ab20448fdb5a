//! `shell_exec`: runs a command in the user's shell daemon (`shell-vm`) and reports its exit code
//! and output. The daemon runs the command sandboxed, in `shared/`; this tool is only its client
//! and never runs anything on the host itself. [`spawn_mcp_server`] is the same daemon's other
//! door: a stdio MCP server started in the shell's confinement, its stdio piped back.

mod client;
mod mcp_spawn;
mod proof;
mod report;
mod socket;

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use types::{SafetyTier, ToolExecutionContext, shell_secret_path, shell_socket_path};

use crate::files::parse;
use crate::{Tool, ToolError};

pub use client::{SHELL_NOT_RUNNING, read_secret, run_command};
pub use mcp_spawn::{McpPipe, McpServerGuard, McpSpawnError, spawn_mcp_server};
pub use proof::{NOT_THE_DAEMON, proof_key_of};
pub use report::{ShellRun, render};
pub use socket::connect_unfollowed;

pub const SHELL_EXEC_TOOL_NAME: &str = "shell_exec";
/// Timeout of a command whose call names none.
pub const DEFAULT_COMMAND_TIMEOUT_SECS: u64 = 120;
/// Longest `timeout_secs` a call may ask for.
pub const MAX_COMMAND_TIMEOUT_SECS: u64 = 600;
/// Longest command accepted.
pub const MAX_COMMAND_BYTES: usize = 16 * 1024;

/// Runs a shell command for the user through their `shell-vm` daemon at
/// `<workspace>/ipc/shell.sock` ([`types::shell_socket_path`]), proving the user's shell secret
/// from `.oxydra/shell.secret` ([`types::shell_secret_path`]) on every connection.
#[derive(Debug, Default)]
pub struct ShellExec;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    timeout_secs: Option<u64>,
}

#[async_trait::async_trait]
impl Tool for ShellExec {
    fn name(&self) -> &str {
        SHELL_EXEC_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Run a shell command (/bin/sh -c) in the user's sandboxed shell. The working directory is \
         shared/ (HOME too); tmp/ is scratch space. The shell cannot see .oxydra/ or vault/. \
         Returns the exit code, stdout and stderr. Commands are killed (with everything they \
         started) at the timeout: default 120 s, set timeout_secs up to 600 for long jobs."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "minLength": 1, "maxLength": MAX_COMMAND_BYTES,
                            "description": "The command line, run with /bin/sh -c in shared/"},
                "timeout_secs": {"type": "integer", "minimum": 1,
                                 "maximum": MAX_COMMAND_TIMEOUT_SECS,
                                 "description": "Kill the command after this many seconds (default 120)"}
            }
        })
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::Privileged
    }

    fn reads_untrusted(&self) -> Option<types::UntrustedInput> {
        Some(types::UntrustedInput::Shell)
    }

    /// The longest command timeout plus a margin for the daemon to report it: the command's own
    /// `timeout_secs` is the limit that matters, enforced by the daemon.
    fn timeout(&self) -> Duration {
        Duration::from_secs(MAX_COMMAND_TIMEOUT_SECS + 10)
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let args: Args = parse(args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::invalid("command", "a non-empty command line"));
        }
        let secs = args.timeout_secs.unwrap_or(DEFAULT_COMMAND_TIMEOUT_SECS);
        if !(1..=MAX_COMMAND_TIMEOUT_SECS).contains(&secs) {
            return Err(ToolError::invalid(
                "timeout_secs",
                format!("between 1 and {MAX_COMMAND_TIMEOUT_SECS}"),
            ));
        }
        let socket = shell_socket_path(&ctx.workspace);
        let secret = read_secret(&shell_secret_path(&ctx.workspace)).await?;
        let run = run_command(
            &socket,
            &secret,
            &args.command,
            Duration::from_secs(secs),
            &ctx.cancellation,
        )
        .await?;
        Ok(render(&run, secs))
    }
}
