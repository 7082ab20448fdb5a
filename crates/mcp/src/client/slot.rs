//! One configured server's place in the client: its state (starting, up, down and why), its
//! live connection's peer and the tools it offers now. Shared by the supervisor (which writes
//! it) and the tools (which read it); its lock is never held across an `.await`.

use std::fmt;
use std::sync::{Arc, RwLock};

use rmcp::service::{Peer, RoleClient};
use tokio::sync::{mpsc, watch};
use types::{McpServerConfig, McpServerState, McpServerView};

use super::progress::Progress;
use super::session::{Event, StderrTail};
use super::tool::Offered;

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Its first connection is being made.
    Starting,
    /// Connected; its tools are offered.
    Up,
    /// Not connected: why, the end of its stderr (for the operator only: it may hold a stack
    /// trace, so the model is told `reason` alone), and how many times it has been restarted. Its
    /// tools (as last listed) answer that it is down while it restarts.
    Down {
        reason: String,
        stderr: Option<String>,
        restarts: u32,
    },
}

/// A tool a server lists that is not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedTool {
    /// Its name on the server.
    pub tool: String,
    pub reason: String,
}

/// What `runner tools`, the checker and the TUI show of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    pub state: ServerState,
    /// The names its tools are offered under, in order.
    pub tools: Vec<String>,
    pub refused: Vec<RefusedTool>,
}

impl ServerStatus {
    /// What a client's status shows of it (the reason it is down as the model is told it).
    pub fn view(&self) -> McpServerView {
        let (state, reason) = match &self.state {
            ServerState::Starting => (McpServerState::Starting, None),
            ServerState::Up => (McpServerState::Up, None),
            ServerState::Down { reason, .. } => (McpServerState::Down, Some(reason.clone())),
        };
        McpServerView {
            name: self.name.clone(),
            state,
            reason,
            tools: u32::try_from(self.tools.len()).unwrap_or(u32::MAX),
        }
    }
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.tools.len();
        let tools = if n == 1 { "tool" } else { "tools" };
        match &self.state {
            ServerState::Starting => write!(f, "{} ({}): starting", self.name, self.transport),
            ServerState::Up => write!(f, "{} ({}): up, {n} {tools}", self.name, self.transport),
            ServerState::Down { reason, stderr, .. } => {
                write!(
                    f,
                    "{} ({}): down (restarting): {reason}",
                    self.name, self.transport
                )?;
                match stderr {
                    Some(stderr) => write!(f, " (stderr: {stderr})"),
                    None => Ok(()),
                }
            }
        }
    }
}

#[derive(Debug)]
struct Inner {
    state: ServerState,
    peer: Option<Peer<RoleClient>>,
    tools: Offered,
    refused: Vec<RefusedTool>,
}

/// One server.
pub(crate) struct Slot {
    pub name: String,
    pub config: McpServerConfig,
    inner: RwLock<Inner>,
    events: mpsc::UnboundedSender<Event>,
    /// Becomes true once the first connection attempt has finished (up or down).
    settled: watch::Sender<bool>,
    pub stderr: StderrTail,
    /// The sinks of its running calls.
    pub progress: Progress,
    /// Counts the changes of every server's state and tools (shared by all the slots).
    changed: Arc<watch::Sender<u64>>,
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Slot {
    pub(crate) fn new(
        name: &str,
        config: McpServerConfig,
        events: mpsc::UnboundedSender<Event>,
        changed: Arc<watch::Sender<u64>>,
    ) -> Self {
        Self {
            name: name.to_owned(),
            config,
            inner: RwLock::new(Inner {
                state: ServerState::Starting,
                peer: None,
                tools: Offered::new(),
                refused: Vec::new(),
            }),
            events,
            settled: watch::channel(false).0,
            stderr: StderrTail::default(),
            progress: Progress::default(),
            changed,
        }
    }

    fn changed(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The live connection's peer, or why there is none.
    pub(crate) fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let inner = self.read();
        match (&inner.peer, &inner.state) {
            (Some(peer), _) => Ok(peer.clone()),
            (None, ServerState::Down { reason, .. }) => Err(reason.clone()),
            (None, _) => Err("it is still starting".to_owned()),
        }
    }

    pub(crate) fn tools(&self) -> Offered {
        self.read().tools.clone()
    }

    pub(crate) fn up(&self, peer: Peer<RoleClient>) {
        let mut inner = self.write();
        inner.state = ServerState::Up;
        inner.peer = Some(peer);
        drop(inner);
        self.changed();
    }

    pub(crate) fn set_tools(&self, tools: Offered, refused: Vec<RefusedTool>) {
        let mut inner = self.write();
        inner.tools = tools;
        inner.refused = refused;
        drop(inner);
        self.changed();
    }

    /// Marks the server down (its tools stay, answering that it is down).
    pub(crate) fn down(&self, reason: String, restarts: u32) {
        let stderr = self.stderr.text();
        let mut inner = self.write();
        inner.state = ServerState::Down {
            reason,
            stderr,
            restarts,
        };
        inner.peer = None;
        drop(inner);
        self.changed();
    }

    /// A call found the connection broken: the supervisor reconnects.
    pub(crate) fn broken(&self, reason: String) {
        let _ = self.events.send(Event::Broken(reason));
    }

    pub(crate) fn settle(&self) {
        self.settled.send_replace(true);
    }

    /// Waits until the first connection attempt has finished.
    pub(crate) async fn settled(&self) {
        let mut rx = self.settled.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    pub(crate) fn status(&self) -> ServerStatus {
        let inner = self.read();
        ServerStatus {
            name: self.name.clone(),
            transport: if self.config.url.is_some() {
                "http"
            } else {
                "stdio"
            },
            state: inner.state.clone(),
            tools: inner.tools.keys().cloned().collect(),
            refused: inner.refused.clone(),
        }
    }
}
