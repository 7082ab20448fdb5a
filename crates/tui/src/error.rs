//! [`TuiError`]: what can go wrong in the client, by kind.

use std::path::PathBuf;

/// An error of the terminal client.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// A file the flags point at could not be read.
    #[error("cannot read {path}: {source}")]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The flags do not say where or who to connect as.
    #[error("{0}")]
    Usage(String),
    /// The workspace has no endpoint file: its agent is not running.
    #[error(
        "no agent is running for this workspace ({path} does not exist); start it with \
         `runner --user <id> start --detach`"
    )]
    NotRunning { path: PathBuf },
    /// `.oxydra/gateway.json` is not what oxydra-vm writes.
    #[error("{path} is not a gateway endpoint file: {reason}")]
    Endpoint { path: PathBuf, reason: String },
    /// The terminal could not be set up, drawn or read.
    #[error("terminal: {0}")]
    Terminal(#[source] std::io::Error),
}
