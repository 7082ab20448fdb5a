//! [`GatewayConfig`]: where the gateway listens (address, port, TLS), the host names it answers
//! to, its limits and timeouts, with defaults.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use crate::TlsIdentity;

/// How the gateway listens and how much it buffers. The defaults suit one user's agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// The address to listen on: `127.0.0.1` by default. Anything not loopback without `tls` is
    /// warned about loudly at start: tokens and cookies would cross the network in clear.
    pub bind: IpAddr,
    /// Port; 0 picks a free one (see [`crate::RunningGateway::local_addr`]).
    pub port: u16,
    /// A connection that has not completed the WebSocket upgrade and a valid `hello` this long
    /// after its TCP connection was accepted is closed (the socket itself a second later, so a
    /// half-open connection that never sends an HTTP request is closed too).
    pub auth_timeout: Duration,
    /// Connections held at once, authenticated or not; more are closed as soon as accepted.
    /// `None`: the open-file limit (raised to its hard limit at start) less
    /// [`crate::RESERVED_FDS`], at most 32,768.
    pub max_connections: Option<usize>,
    /// Connections held at once that have not completed `hello`; a newer one closes the oldest.
    /// What `max_connections` leaves above it is reserved for authenticated clients. `None`: a
    /// quarter of `max_connections`, at most 1024.
    pub max_unauthenticated: Option<usize>,
    /// Largest text frame accepted; a larger one gets `frame_too_large` and the connection closes.
    pub max_frame_bytes: usize,
    /// Frames queued for one client before it counts as lagging and is unsubscribed.
    pub client_queue: usize,
    /// Turn events kept per session for resume and resync.
    pub session_log: usize,
    /// A client that does not take a frame within this time is disconnected.
    pub send_timeout: Duration,
    /// Capacity of the runtime's event channel for one turn.
    pub turn_channel: usize,
    /// An authenticated request's body (an MCP `POST`) must have arrived this long after its
    /// token was accepted; a body still coming then is answered `408` and the connection closed.
    pub body_timeout: Duration,
    /// How long a one-time web sign-in link can be used (it is dead after its first use anyway).
    pub signin_code_lifetime: Duration,
    /// Mark the web session cookie `Secure`: set when browsers reach the gateway over HTTPS
    /// (a TLS reverse proxy in front). Always on with `tls`.
    pub secure_cookie: bool,
    /// Serve HTTPS and WSS only, with this certificate and key: cookies `Secure`, HSTS, the
    /// `Origin` of a browser's request must be `https://`.
    pub tls: Option<TlsIdentity>,
    /// Host names (or addresses) a request's `Host` may name besides those always served:
    /// `localhost`, the loopback addresses, the bound address, and any address when bound to
    /// an unspecified one (`0.0.0.0`, `::`). Anything else is refused with 421 before any route
    /// sees it, so a page whose DNS name was rebound to this machine cannot reach the gateway.
    /// From `[gateway] allow_hosts`: a reverse proxy's name, or a name on the local network.
    pub allow_hosts: Vec<types::Host>,
}

impl GatewayConfig {
    pub const DEFAULT_MAX_FRAME_BYTES: usize = types::MAX_FRAME_BYTES;
    /// Largest MCP request body accepted: the MCP service's own bound (rmcp's limit).
    pub const MAX_BODY_BYTES: usize = mcp::MAX_REQUEST_BODY_BYTES;
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            auth_timeout: Duration::from_secs(5),
            max_connections: None,
            max_unauthenticated: None,
            max_frame_bytes: Self::DEFAULT_MAX_FRAME_BYTES,
            client_queue: 256,
            session_log: 4096,
            send_timeout: Duration::from_secs(30),
            turn_channel: 64,
            body_timeout: Duration::from_secs(10),
            signin_code_lifetime: Duration::from_secs(60),
            secure_cookie: false,
            tls: None,
            allow_hosts: Vec::new(),
        }
    }
}
