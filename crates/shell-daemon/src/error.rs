//! The daemon library's error type.

use std::path::PathBuf;

/// Why the daemon could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("{} exists and is not a socket; refusing to replace it", path.display())]
    NotASocket { path: PathBuf },

    #[error("cannot listen on {}", path.display())]
    Bind {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("the bootstrap carries no valid secret_sha256; the runner must provide one")]
    NoVerifier,

    #[error("the bootstrap carries no valid proof_key; the runner must provide one")]
    NoProofKey,

    #[error("accepting a connection failed")]
    Accept(#[source] std::io::Error),
}
