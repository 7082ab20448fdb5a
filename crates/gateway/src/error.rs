//! [`GatewayError`]: why the gateway could not start or serve.

use std::path::PathBuf;

use types::UserId;

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The listening socket could not be bound.
    #[error("could not listen on {}: {source}", std::net::SocketAddr::new(*bind, *port))]
    Bind {
        bind: std::net::IpAddr,
        port: u16,
        #[source]
        source: std::io::Error,
    },

    /// The gateway token file could not be read or created.
    #[error("gateway token {path}: {source}")]
    Token {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The token file exists but holds no usable secret.
    #[error("gateway token {0} is empty or malformed: delete it to have a new one created")]
    BadToken(PathBuf),

    /// No randomness source for a new token.
    #[error("could not generate a gateway token: {0}")]
    Random(String),

    /// The same user was configured twice.
    #[error("user {0} is configured twice")]
    DuplicateUser(UserId),

    /// The gateway was given no users to serve.
    #[error("the gateway has no users to serve")]
    NoUsers,
}
