//! [`Gateway`]: the users served and the listener; [`RunningGateway`]: the bound server.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, State};
use axum::response::Response;
use axum::routing::{any, get};
use tokio::sync::watch;
use types::{CancellationToken, UserId};

use crate::limits::{Admission, Caps, LimitedListener, Limits, raise_fd_limit};
use crate::shared::Shared;
use crate::user::UserAgent;
use crate::{GatewayConfig, GatewayError};

/// A gateway serving a fixed set of users (an `oxydra-vm` serves exactly one).
#[derive(Debug)]
pub struct Gateway {
    config: GatewayConfig,
    users: HashMap<UserId, Arc<UserAgent>>,
}

impl Gateway {
    pub fn new(config: GatewayConfig) -> Self {
        Self {
            config,
            users: HashMap::new(),
        }
    }

    /// Adds a user; each user is served with their own token, store and runtime.
    pub fn add_user(&mut self, user: UserAgent) -> Result<(), GatewayError> {
        let id = user.user_id.clone();
        if self.users.contains_key(&id) {
            return Err(GatewayError::DuplicateUser(id));
        }
        self.users.insert(id, Arc::new(user));
        Ok(())
    }

    /// Binds `127.0.0.1:<port>` and serves WebSocket clients on `/` (and `/ws`), and each user's
    /// metrics on `/metrics` (bearer token), until
    /// [`RunningGateway::shutdown`]. Raises the process's soft open-file limit to its hard limit
    /// and derives the connection caps the configuration leaves open from it.
    pub async fn start(self) -> Result<RunningGateway, GatewayError> {
        if self.users.is_empty() {
            return Err(GatewayError::NoUsers);
        }
        let port = self.config.port;
        let bind = |source| GatewayError::Bind { port, source };
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .await
            .map_err(bind)?;
        let addr = listener.local_addr().map_err(bind)?;
        let caps = Caps::resolve(&self.config, raise_fd_limit());
        let limits = Limits::new(caps, self.config.auth_timeout);
        let shared = Arc::new(Shared {
            config: self.config,
            users: self.users,
            shutdown: CancellationToken::default(),
            limits: Arc::clone(&limits),
            next_conn: AtomicU64::new(1),
        });
        let listener = LimitedListener::new(listener, limits);
        let app = Router::new()
            .route("/", get(upgrade))
            .route("/ws", get(upgrade))
            .route("/metrics", get(crate::metrics::serve))
            .route("/mcp", any(crate::mcp_route::handle))
            .with_state(Arc::clone(&shared));
        for user in shared.users.values() {
            crate::scheduled::start(user, &shared);
        }
        let stop = shared.shutdown.clone();
        let task = tokio::spawn(async move {
            let app = app.into_make_service_with_connect_info::<Admission>();
            let serve = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled());
            if let Err(e) = serve.await {
                tracing::error!(error = %e, "gateway stopped");
            }
        });
        tracing::info!(
            %addr,
            users = shared.users.len(),
            max_connections = caps.total,
            max_unauthenticated = caps.unauthenticated,
            "gateway listening"
        );
        Ok(RunningGateway { addr, shared, task })
    }
}

async fn upgrade(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(admission): ConnectInfo<Admission>,
    ws: WebSocketUpgrade,
) -> Response {
    // The WebSocket layer refuses a larger frame from its header (before reserving room for its
    // payload), which `frames` turns into `frame_too_large`: an unauthenticated socket cannot
    // make the gateway hold more than this.
    let hard_limit = shared.config.max_frame_bytes.max(1024);
    // Frames are small: modest buffers keep an idle connection cheap (the default is 128 KiB).
    ws.max_message_size(hard_limit)
        .max_frame_size(hard_limit)
        .read_buffer_size(8 * 1024)
        .write_buffer_size(8 * 1024)
        .on_upgrade(move |socket| crate::conn::serve(socket, shared, admission))
}

/// A gateway that is listening.
#[derive(Debug)]
pub struct RunningGateway {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningGateway {
    /// The bound address (the chosen port when configured with 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ws://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("ws://{}/", self.addr)
    }

    /// The connection counters, updated as connections come and go.
    pub fn connections(&self) -> watch::Receiver<crate::ConnectionStats> {
        self.shared.limits.subscribe()
    }

    /// The user served as `user`, if any.
    pub fn user(&self, user: &UserId) -> Option<&UserAgent> {
        self.shared.users.get(user).map(Arc::as_ref)
    }

    /// Stops listening, cancels running turns, closes every connection and waits for the server.
    pub async fn shutdown(self) {
        for user in self.shared.users.values() {
            for hub in user.active_hubs() {
                hub.cancel();
            }
        }
        self.shared.shutdown.cancel();
        if let Err(e) = self.task.await {
            tracing::warn!(error = %e, "gateway task ended abnormally");
        }
    }
}
