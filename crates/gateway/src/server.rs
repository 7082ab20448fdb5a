//! [`Gateway`]: the users served and the listener; [`RunningGateway`]: the bound server.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::response::Response;
use axum::routing::{any, get, post};
use tokio::sync::watch;
use types::{CancellationToken, UserId};

use crate::hosts::ServedHosts;
use crate::limits::{Admission, Caps, LimitedListener, Limits, raise_fd_limit};
use crate::shared::Shared;
use crate::tls::GatewayListener;
use crate::user::UserAgent;
use crate::web_auth::{WebAuth, WebSession};
use crate::web_routes;
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

    /// Binds `<bind>:<port>` (`127.0.0.1` by default; a loud warning when not loopback and without
    /// TLS), with TLS when configured (then HTTPS and WSS only, with HSTS), and serves WebSocket
    /// clients on `/` (and `/ws`), the web client's page on a plain `GET /` with its
    /// sign-in routes (`web_routes`), each user's metrics on `/metrics` (bearer token), until
    /// [`RunningGateway::shutdown`]; a request naming a host it does not serve is refused before
    /// any route (`hosts`). Raises the process's soft open-file limit to its hard limit and
    /// derives the connection caps the configuration leaves open from it.
    pub async fn start(self) -> Result<RunningGateway, GatewayError> {
        if self.users.is_empty() {
            return Err(GatewayError::NoUsers);
        }
        let (ip, port) = (self.config.bind, self.config.port);
        let bind = |source| GatewayError::Bind {
            bind: ip,
            port,
            source,
        };
        let listener = tokio::net::TcpListener::bind((ip, port))
            .await
            .map_err(bind)?;
        let addr = listener.local_addr().map_err(bind)?;
        let tls = self.config.tls.is_some();
        if let Some(warning) = crate::exposure_warning(addr.ip(), tls) {
            tracing::warn!(%addr, "{warning}");
        }
        let caps = Caps::resolve(&self.config, raise_fd_limit());
        let limits = Limits::new(caps, self.config.auth_timeout);
        let listener = LimitedListener::new(listener, Arc::clone(&limits));
        let listener = GatewayListener::new(listener, self.config.tls.as_ref()).map_err(bind)?;
        let sessions = sessions_files(&self.users);
        let shared = Arc::new(Shared {
            users: self.users,
            shutdown: CancellationToken::default(),
            limits: Arc::clone(&limits),
            next_conn: AtomicU64::new(1),
            web: WebAuth::new(self.config.signin_code_lifetime, sessions),
            cookie_name: format!("oxydra_session_{}", addr.port()),
            config: self.config,
        });
        let mut app = Router::new()
            .route("/", get(web_routes::root))
            .route("/ws", get(web_routes::ws_only))
            .route("/assets/{name}", get(crate::web_assets::asset))
            .route("/favicon.ico", get(crate::web_assets::no_icon))
            .route("/auth/link", post(web_routes::issue_link))
            .route("/signin/{code}", get(web_routes::redeem_link))
            .route("/auth/token", post(web_routes::sign_in_with_token))
            .route("/auth/me", get(web_routes::me))
            .route("/auth/signout", post(web_routes::sign_out))
            .route("/metrics", get(crate::metrics::serve))
            .route("/mcp", any(crate::mcp_route::handle))
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(ServedHosts::new(addr.ip(), &shared.config.allow_hosts)),
                crate::hosts::refuse_others,
            ))
            .layer(axum::middleware::from_fn(crate::web_assets::secure_headers));
        if tls {
            app = app.layer(axum::middleware::map_response(crate::web_assets::hsts));
        }
        let app = app.with_state(Arc::clone(&shared));
        for user in shared.users.values() {
            crate::scheduled::start(user, &shared);
            crate::captured::start(user, &shared);
            crate::mcp_status::start(user, &shared);
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
            tls,
            users = shared.users.len(),
            max_connections = caps.total,
            max_unauthenticated = caps.unauthenticated,
            "gateway listening"
        );
        Ok(RunningGateway { addr, shared, task })
    }
}

/// Each user's web sessions file, in their `.oxydra/`.
fn sessions_files(users: &HashMap<UserId, Arc<UserAgent>>) -> HashMap<UserId, PathBuf> {
    users
        .iter()
        .map(|(id, u)| {
            let file = u.workspace.internal().join(crate::web_auth::SESSIONS_FILE);
            (id.clone(), file)
        })
        .collect()
}

/// Upgrades to a WebSocket connection; `web` is the browser session its upgrade request proved,
/// if any (its `hello` may then leave the token empty).
pub(crate) fn upgrade(
    shared: Arc<Shared>,
    admission: Admission,
    ws: WebSocketUpgrade,
    web: Option<WebSession>,
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
        .on_upgrade(move |socket| crate::conn::serve(socket, shared, admission, web))
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

    /// `ws://127.0.0.1:PORT/` (`wss://` with TLS): the address this machine's clients use (the
    /// loopback one when listening on every interface).
    pub fn url(&self) -> String {
        let scheme = if self.tls() { "wss" } else { "ws" };
        format!("{scheme}://{}/", self.reachable_addr())
    }

    /// `http://127.0.0.1:PORT/` (`https://` with TLS): the web client's page.
    pub fn web_url(&self) -> String {
        let scheme = if self.tls() { "https" } else { "http" };
        format!("{scheme}://{}/", self.reachable_addr())
    }

    /// Whether it serves TLS.
    pub fn tls(&self) -> bool {
        self.shared.config.tls.is_some()
    }

    fn reachable_addr(&self) -> SocketAddr {
        match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => (Ipv4Addr::LOCALHOST, self.addr.port()).into(),
            IpAddr::V6(ip) if ip.is_unspecified() => (Ipv6Addr::LOCALHOST, self.addr.port()).into(),
            _ => self.addr,
        }
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
