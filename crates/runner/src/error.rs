//! [`RunnerError`]: what went wrong in the runner's shared pieces, with the path and the cause.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid {}: {problem}", path.display())]
    Config { path: PathBuf, problem: String },
    /// A path the operator named that a root command will not use as it is.
    #[error("{}: {problem}", path.display())]
    Refused { path: PathBuf, problem: String },
    #[error("invalid bootstrap: {0}")]
    Bootstrap(String),
    /// The gateway's TLS certificate or key cannot be read or served.
    #[error("{0}")]
    Tls(String),
    #[error("invalid user id `{user}`")]
    User {
        user: String,
        #[source]
        source: types::IdError,
    },
    #[error(
        "cannot find the `{name}` binary in {}; build it (`cargo build -p {package} --bins`, or \
         --release) or set {env} to the directory holding it",
        dir.display(), env = crate::BIN_DIR_ENV
    )]
    MissingBinary {
        name: &'static str,
        package: &'static str,
        dir: PathBuf,
    },
    /// The Docker engine is unreachable or refused a request (container tier, images).
    #[error("Docker: {0}")]
    Docker(String),
    /// A user's memory encryption key could not be had (key file, `key_command`).
    #[error("memory encryption key: {0}")]
    MemoryKey(String),
    /// The memory store refused (opening with a key, changing a key).
    #[error("memory store")]
    Memory(#[source] memory::MemoryError),
    #[error("invalid JSON in {}", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl RunnerError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }
}
