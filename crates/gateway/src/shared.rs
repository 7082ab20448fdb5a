//! [`Shared`]: the state every connection and route handler of a running gateway sees — the
//! configuration, the users served, the shutdown signal, the connection limits and the next
//! connection id. The router (`server`) builds it; the handlers take it from here.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use types::{CancellationToken, UserId};

use crate::GatewayConfig;
use crate::limits::Limits;
use crate::outbound::ConnId;
use crate::user::UserAgent;
use crate::web_auth::WebAuth;

/// State shared by every connection.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: GatewayConfig,
    pub(crate) users: HashMap<UserId, Arc<UserAgent>>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) limits: Arc<Limits>,
    pub(crate) next_conn: AtomicU64,
    /// The web client's sign-in codes and browser sessions.
    pub(crate) web: WebAuth,
    /// The session cookie's name, `oxydra_session_<port>` (cookies are not kept apart by port).
    pub(crate) cookie_name: String,
}

impl Shared {
    pub(crate) fn next_conn_id(&self) -> ConnId {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }
}
