//! [`McpClients`]: every configured server, supervised, and their tools as one [`DynamicTools`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tools::{DynamicTools, Tool};
use types::{McpConfig, UntrustedInput};

use super::launch::Launcher;
use super::slot::{ServerStatus, Slot};
use super::supervise::{Reserved, supervise};

/// The user's MCP servers, kept connected while this value lives (dropping it stops them).
pub struct McpClients {
    /// When connecting began: [`DynamicTools::settled`] waits up to [`McpClients::FIRST_WAIT`]
    /// from here.
    started: tokio::time::Instant,
    slots: Vec<Arc<Slot>>,
    tasks: Vec<JoinHandle<()>>,
    changed: Arc<watch::Sender<u64>>,
}

impl fmt::Debug for McpClients {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClients")
            .field(
                "servers",
                &self.slots.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpClients {
    /// Starts connecting every enabled server of `config` (stdio ones through `launcher`); a
    /// tool whose offered name is in `reserved` (the built-in tools), or reads as another
    /// server's, is refused. Must be called
    /// within a tokio runtime. Returns at once: see [`McpClients::ready`].
    pub fn start(config: &McpConfig, launcher: Arc<dyn Launcher>, reserved: &[String]) -> Self {
        let reserved = Arc::new(Reserved {
            builtins: reserved.iter().cloned().collect(),
            servers: config.servers.keys().cloned().collect(),
        });
        let mut slots = Vec::new();
        let mut tasks = Vec::new();
        let changed = Arc::new(watch::channel(0).0);
        for (name, server) in config.servers.iter().filter(|(_, s)| s.enabled) {
            let (tx, rx) = mpsc::unbounded_channel();
            let slot = Arc::new(Slot::new(
                name,
                server.clone(),
                tx.clone(),
                Arc::clone(&changed),
            ));
            tasks.push(tokio::spawn(supervise(
                Arc::clone(&slot),
                Arc::clone(&launcher),
                rx,
                tx,
                Arc::clone(&reserved),
            )));
            slots.push(slot);
        }
        Self {
            started: tokio::time::Instant::now(),
            slots,
            tasks,
            changed,
        }
    }

    /// How long after [`McpClients::start`] a turn waits for servers still making their first
    /// connection (a slower one joins later: its tools are offered once it is up).
    pub const FIRST_WAIT: Duration = Duration::from_secs(10);

    /// Waits until every server's first connection attempt has finished (up or down), at most
    /// `within`; whether all did.
    pub async fn ready(&self, within: Duration) -> bool {
        let all = futures::future::join_all(self.slots.iter().map(|s| s.settled()));
        tokio::time::timeout(within, all).await.is_ok()
    }

    /// Each server's state, in name order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.slots.iter().map(|s| s.status()).collect()
    }

    /// Changes whenever a server's state or tools change (it counts the changes): a client's
    /// status follows [`McpClients::status`] by waiting on it.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Whether no server is configured (and enabled).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

impl DynamicTools for McpClients {
    fn settled(&self) -> tools::Settling<'_> {
        Box::pin(async move {
            let left = Self::FIRST_WAIT.saturating_sub(self.started.elapsed());
            if !left.is_zero() && !self.ready(left).await {
                tracing::warn!(
                    "some MCP servers are still starting; their tools join when they are up"
                );
            }
        })
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.slots
            .iter()
            .flat_map(|s| s.tools().into_values())
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }

    /// The tool `name` of the first server (in name order, as [`DynamicTools::tools`] lists
    /// them) whose `<server>__` begins it: a server's name may end in `_` (`raw_` offers
    /// `raw___t`), so the first `__` in a name need not end the server's.
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.slots
            .iter()
            .filter(|s| super::schema::reads_as_tool_of(name, &s.name))
            .find_map(|s| s.tools().get(name).map(|t| Arc::clone(t) as Arc<dyn Tool>))
    }

    /// A name of one of the servers' tools, listed no more (the server changed its list since
    /// it answered): its answers are a server's, untrusted as every MCP tool's.
    fn untrusted_unlisted(&self, name: &str) -> Option<UntrustedInput> {
        self.slots
            .iter()
            .any(|s| super::schema::reads_as_tool_of(name, &s.name))
            .then_some(UntrustedInput::Mcp)
    }
}

impl Drop for McpClients {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
