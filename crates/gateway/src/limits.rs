//! Connection limits: how many sockets the gateway holds, and for how long a socket may stay
//! unauthenticated.
//!
//! Every accepted TCP connection gets a [`Ticket`] and counts against `max_connections`; until
//! its `hello` is accepted it also counts against `max_unauthenticated` and must complete the
//! HTTP upgrade and the `hello` before its deadline (`auth_timeout` after the TCP accept, plus a
//! grace second for the `auth_timeout` error frame to go out). The deadline is enforced in the
//! socket itself ([`Guarded`]), so a half-open socket that never sends an HTTP request is closed
//! as surely as one that upgrades and then stays silent.
//!
//! When the unauthenticated slots are full, a new connection evicts the *oldest* unauthenticated
//! one rather than being refused: a flood of idle sockets cannot keep a legitimate client from
//! starting its handshake. When all slots are full (authenticated clients included), new
//! connections are closed at once. The difference between the two caps is reserved for
//! authenticated clients, and both are derived from the file-descriptor limit unless configured.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::serve::Listener;
use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Sleep;

use crate::GatewayConfig;

/// File descriptors kept for everything that is not a client connection (database, logs, the
/// model provider's connections, the runtime).
pub const RESERVED_FDS: usize = 256;
/// Connections allowed when derived from the descriptor limit, at most (containers often allow
/// a million descriptors; at about 18 KiB per idle connection memory is the bound there).
const MAX_DERIVED_CONNECTIONS: usize = 32_768;
/// Unauthenticated connections allowed when derived from the descriptor limit, at most.
const MAX_DERIVED_UNAUTHENTICATED: usize = 1024;
/// Time after `auth_timeout` before the socket itself is closed (the `auth_timeout` error frame
/// is sent first, when the client got as far as the WebSocket).
const DEADLINE_GRACE: Duration = Duration::from_secs(1);

/// Connection counters, for operators and tests ([`crate::RunningGateway::connections`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Connections open now (authenticated or not).
    pub open: usize,
    /// Connections open now that have not completed `hello`.
    pub unauthenticated: usize,
    /// Connections accepted since start (refused ones excluded).
    pub accepted: u64,
    /// Connections closed at once because every slot was taken.
    pub refused: u64,
    /// Unauthenticated connections closed to make room for a newer one.
    pub evicted: u64,
    /// Unauthenticated connections closed at their handshake deadline.
    pub timed_out: u64,
    /// The configured caps.
    pub max_connections: usize,
    pub max_unauthenticated: usize,
}

/// The resolved caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caps {
    pub(crate) total: usize,
    pub(crate) unauthenticated: usize,
}

impl Caps {
    /// `config`'s caps, the missing ones derived from `fd_limit` (the soft `RLIMIT_NOFILE`).
    pub(crate) fn resolve(config: &GatewayConfig, fd_limit: u64) -> Self {
        let fds = usize::try_from(fd_limit).unwrap_or(usize::MAX);
        let total = config
            .max_connections
            .unwrap_or_else(|| {
                fds.saturating_sub(RESERVED_FDS)
                    .clamp(16, MAX_DERIVED_CONNECTIONS)
            })
            .max(2);
        let unauthenticated = config
            .max_unauthenticated
            .unwrap_or_else(|| (total / 4).clamp(1, MAX_DERIVED_UNAUTHENTICATED))
            .clamp(1, total - 1);
        Self {
            total,
            unauthenticated,
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit when allowed; returns the soft limit now in
/// force.
pub(crate) fn raise_fd_limit() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let current = limit.current.unwrap_or(u64::MAX);
    if let Some(hard) = limit.maximum
        && hard > current
    {
        let raised = rustix::process::Rlimit {
            current: Some(hard),
            maximum: Some(hard),
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => {
                tracing::info!(from = current, to = hard, "raised the open-file limit");
                return hard;
            }
            Err(e) => tracing::warn!(error = %e, "could not raise the open-file limit"),
        }
    }
    current
}

#[derive(Debug)]
struct Table {
    next_id: u64,
    open: usize,
    /// Most connections open at once since the last trim.
    peak: usize,
    /// Unauthenticated connections, oldest first.
    pending: BTreeMap<u64, Arc<Ticket>>,
    stats: ConnectionStats,
}

/// The gateway's connection bookkeeping.
#[derive(Debug)]
pub(crate) struct Limits {
    caps: Caps,
    deadline: Duration,
    table: Mutex<Table>,
    stats: watch::Sender<ConnectionStats>,
}

impl Limits {
    pub(crate) fn new(caps: Caps, auth_timeout: Duration) -> Arc<Self> {
        let stats = ConnectionStats {
            max_connections: caps.total,
            max_unauthenticated: caps.unauthenticated,
            ..ConnectionStats::default()
        };
        Arc::new(Self {
            caps,
            deadline: auth_timeout + DEADLINE_GRACE,
            table: Mutex::new(Table {
                next_id: 1,
                open: 0,
                peak: 0,
                pending: BTreeMap::new(),
                stats,
            }),
            stats: watch::Sender::new(stats),
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // Every update leaves the table consistent before anything can panic.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<ConnectionStats> {
        self.stats.subscribe()
    }

    /// Admits a new connection (evicting the oldest unauthenticated one when those slots are
    /// full), or `None` when every slot is taken.
    fn admit(&self) -> Option<Arc<Ticket>> {
        let mut table = self.table();
        if table.open >= self.caps.total {
            table.stats.refused += 1;
            self.publish(&mut table);
            return None;
        }
        if table.pending.len() >= self.caps.unauthenticated
            && let Some((_, oldest)) = table.pending.pop_first()
        {
            oldest.set(State::Evicted);
            table.stats.evicted += 1;
        }
        let id = table.next_id;
        table.next_id += 1;
        let ticket = Arc::new(Ticket {
            id,
            accepted_at: tokio::time::Instant::now(),
            state: AtomicU8::new(State::Pending as u8),
            waker: AtomicWaker::new(),
        });
        table.open += 1;
        table.peak = table.peak.max(table.open);
        table.pending.insert(id, Arc::clone(&ticket));
        table.stats.accepted += 1;
        self.publish(&mut table);
        Some(ticket)
    }

    /// `ticket`'s `hello` was accepted: it no longer counts as unauthenticated.
    pub(crate) fn authenticated(&self, ticket: &Ticket) {
        let mut table = self.table();
        if table.pending.remove(&ticket.id).is_some() {
            ticket.set(State::Authenticated);
            self.publish(&mut table);
        }
    }

    fn timed_out(&self, ticket: &Ticket) {
        let mut table = self.table();
        if table.pending.remove(&ticket.id).is_some() {
            table.stats.timed_out += 1;
            self.publish(&mut table);
        }
    }

    fn release(&self, ticket: &Ticket) {
        let mut table = self.table();
        table.pending.remove(&ticket.id);
        table.open = table.open.saturating_sub(1);
        self.publish(&mut table);
        // After a flood has mostly drained, give its memory back.
        if table.peak >= crate::trim::FLOOD && table.open < table.peak / 4 {
            table.peak = table.open;
            drop(table);
            crate::trim::soon();
        }
    }

    fn publish(&self, table: &mut Table) {
        table.stats.open = table.open;
        table.stats.unauthenticated = table.pending.len();
        self.stats.send_replace(table.stats);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum State {
    Pending = 0,
    Authenticated = 1,
    Evicted = 2,
}

/// One admitted connection's place in the [`Limits`].
#[derive(Debug)]
pub(crate) struct Ticket {
    id: u64,
    accepted_at: tokio::time::Instant,
    state: AtomicU8,
    /// The connection's reader, woken when the connection is evicted.
    waker: AtomicWaker,
}

impl Ticket {
    fn state(&self) -> State {
        match self.state.load(Ordering::Acquire) {
            0 => State::Pending,
            1 => State::Authenticated,
            _ => State::Evicted,
        }
    }

    fn set(&self, state: State) {
        self.state.store(state as u8, Ordering::Release);
        self.waker.wake();
    }
}

/// The gateway's listener: accepts, applies the caps and wraps each socket in a [`Guarded`].
#[derive(Debug)]
pub(crate) struct LimitedListener {
    inner: TcpListener,
    limits: Arc<Limits>,
}

impl LimitedListener {
    pub(crate) fn new(inner: TcpListener, limits: Arc<Limits>) -> Self {
        Self { inner, limits }
    }
}

impl Listener for LimitedListener {
    type Io = Guarded;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (tcp, addr) = Listener::accept(&mut self.inner).await;
            let Some(ticket) = self.limits.admit() else {
                tracing::debug!(%addr, "connection refused: every slot is taken");
                drop(tcp);
                continue;
            };
            // Small frames, sent one at a time: no Nagle delay.
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "could not set TCP_NODELAY");
            }
            let deadline = Box::pin(tokio::time::sleep(self.limits.deadline));
            let io = Guarded {
                tcp,
                ticket,
                deadline,
                limits: Arc::clone(&self.limits),
            };
            return (io, addr);
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// What a request handler learns about its connection (`ConnectInfo<Admission>`).
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    pub(crate) ticket: Arc<Ticket>,
    pub(crate) limits: Arc<Limits>,
}

impl Admission {
    /// When the `hello` must have arrived: `auth_timeout` after the TCP accept.
    pub(crate) fn hello_deadline(&self, auth_timeout: Duration) -> tokio::time::Instant {
        self.ticket.accepted_at + auth_timeout
    }

    /// Marks the connection authenticated.
    pub(crate) fn authenticated(&self) {
        self.limits.authenticated(&self.ticket);
    }
}

impl Guarded {
    /// What the connection's handlers learn about it (`tls` serves it as connect info).
    pub(crate) fn admission(&self) -> Admission {
        Admission {
            ticket: Arc::clone(&self.ticket),
            limits: Arc::clone(&self.limits),
        }
    }
}

/// An admitted socket: reads fail once it is evicted, or when its deadline passes before it
/// authenticated. Dropping it frees its slot.
#[derive(Debug)]
pub(crate) struct Guarded {
    tcp: TcpStream,
    ticket: Arc<Ticket>,
    deadline: Pin<Box<Sleep>>,
    limits: Arc<Limits>,
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.limits.release(&self.ticket);
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.ticket.state() == State::Pending {
            // Registered before the state is read again below, so an eviction is never missed.
            this.ticket.waker.register(cx.waker());
        }
        match this.ticket.state() {
            State::Authenticated => {}
            State::Evicted => {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "closed to make room for a newer connection",
                )));
            }
            State::Pending => {
                if this.deadline.as_mut().poll(cx).is_ready() {
                    this.limits.timed_out(&this.ticket);
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no authenticated hello before the deadline",
                    )));
                }
            }
        }
        Pin::new(&mut this.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(total: Option<usize>, unauth: Option<usize>, fds: u64) -> Caps {
        let config = GatewayConfig {
            max_connections: total,
            max_unauthenticated: unauth,
            ..GatewayConfig::default()
        };
        Caps::resolve(&config, fds)
    }

    #[test]
    fn caps_follow_the_descriptor_limit_unless_configured() {
        let c = |total, unauthenticated| Caps {
            total,
            unauthenticated,
        };
        assert_eq!(caps(None, None, 1024), c(768, 192));
        assert_eq!(caps(None, None, 20_000), c(19_744, 1024));
        assert_eq!(caps(None, None, 100), c(16, 4));
        assert_eq!(caps(None, None, 1 << 20), c(32_768, 1024));
        assert_eq!(caps(Some(100), None, 20_000), c(100, 25));
        assert_eq!(caps(Some(100), Some(500), 20_000), c(100, 99));
        assert_eq!(caps(None, Some(10), 1024), c(768, 10));
    }

    #[test]
    fn the_open_file_limit_is_raised_to_the_hard_limit() {
        use rustix::process::{Resource, getrlimit};
        let now = raise_fd_limit();
        let limit = getrlimit(Resource::Nofile);
        assert_eq!(limit.current, Some(now));
        // (An unlimited hard limit cannot be set as the soft one; it is left as it was.)
        assert_eq!(limit.current, limit.maximum.or(limit.current));
    }

    #[test]
    fn the_oldest_unauthenticated_connection_makes_room() {
        let limits = Limits::new(
            Caps {
                total: 4,
                unauthenticated: 2,
            },
            Duration::from_secs(5),
        );
        let a = limits.admit().unwrap();
        let b = limits.admit().unwrap();
        limits.authenticated(&a);
        let c = limits.admit().unwrap();
        let d = limits.admit().unwrap();
        // b was the oldest unauthenticated one.
        assert_eq!(b.state(), State::Evicted);
        assert_eq!(c.state(), State::Pending);
        // Four are open (b still holds its slot until its socket is dropped): full.
        assert!(limits.admit().is_none());
        limits.release(&b);
        let e = limits.admit().unwrap();
        assert_eq!(c.state(), State::Evicted);
        let stats = *limits.subscribe().borrow();
        assert_eq!(
            (
                stats.open,
                stats.unauthenticated,
                stats.evicted,
                stats.refused
            ),
            (4, 2, 2, 1)
        );
        assert_eq!(
            (a.state(), d.state(), e.state()),
            (State::Authenticated, State::Pending, State::Pending)
        );
    }
}
