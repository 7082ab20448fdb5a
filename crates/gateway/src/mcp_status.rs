//! The user's own MCP servers in their clients' status: an `mcp_status` frame goes to a client
//! when it connects (when the agent has any server) and to every client of the user when a
//! server goes down, comes back or offers another number of tools. A server that keeps failing
//! to restart for the same reason is not announced again.

use std::sync::{Arc, Mutex, PoisonError};

use mcp::client::McpClients;
use types::{McpServerView, ServerFrame};

use crate::outbound::{Outbound, Outbox};
use crate::user::UserAgent;

/// A user's MCP servers and what their clients were last told of them.
#[derive(Debug)]
pub(crate) struct McpStatus {
    clients: Arc<McpClients>,
    /// Held while a frame is offered, so that a client always ends on the latest state.
    told: Mutex<Vec<McpServerView>>,
}

impl McpStatus {
    pub(crate) fn new(clients: Arc<McpClients>) -> Self {
        Self {
            clients,
            told: Mutex::new(Vec::new()),
        }
    }

    fn now(&self) -> Vec<McpServerView> {
        self.clients.status().iter().map(|s| s.view()).collect()
    }
}

fn frame(servers: Vec<McpServerView>) -> ServerFrame {
    ServerFrame::McpStatus { servers }
}

/// Sends a client that just joined its user's clients the servers' state now.
pub(crate) fn greet(user: &UserAgent, outbox: &Outbox) {
    let Some(status) = &user.mcp_status else {
        return;
    };
    if status.clients.is_empty() {
        return;
    }
    let _told = status.told.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = outbox.offer(Outbound::Frame(frame(status.now())));
}

/// Tells `user`'s clients of every change until the gateway shuts down.
pub(crate) fn start(user: &Arc<UserAgent>, shared: &crate::shared::Shared) {
    let Some(status) = &user.mcp_status else {
        return;
    };
    let mut changes = status.clients.changes();
    let user = Arc::clone(user);
    let stop = shared.shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
            let Some(status) = &user.mcp_status else {
                return;
            };
            let mut told = status.told.lock().unwrap_or_else(PoisonError::into_inner);
            let now = status.now();
            if *told != now {
                user.clients.offer(&frame(now.clone()));
                *told = now;
            }
        }
    });
}
