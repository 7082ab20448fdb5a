//! Keeps one server connected: connect, list its tools, list them again when it says they
//! changed, and when the connection ends restart it with backoff (its tools answer that it is
//! down meanwhile).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::mpsc;

use super::launch::Launcher;
use super::offered_text::{clean_schema, description_of};
use super::schema::{allowed, check_schema, offered_name, reads_as_tool_of, tier_of};
use super::session::{Event, Session, connect};
use super::slot::{RefusedTool, Slot};
use super::tool::{McpTool, Offered};

/// The first wait before a restart; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between restarts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection that lasted this long starts the backoff over.
const STABLE: Duration = Duration::from_secs(60);
/// Most tools one server offers: every offered tool's schema goes with every model request
/// (and OpenAI takes at most 128 tools in one). The rest are refused, named in the status.
pub const MAX_SERVER_TOOLS: usize = 128;
/// Most tools read from one listing, and most pages asked for: a server listing more, or
/// paging on without end, is read no further (it would fill the agent's memory).
const MAX_LISTED: usize = 1024;
const MAX_PAGES: usize = 64;

/// The names a server's tools must not be offered under.
#[derive(Debug, Default)]
pub(crate) struct Reserved {
    /// The built-in tools'.
    pub builtins: BTreeSet<String>,
    /// Every configured server's name.
    pub servers: BTreeSet<String>,
}

impl Reserved {
    /// Why `name`, a tool of `server`, is not offered, if it is not: a built-in's name, or one
    /// that reads as another server's (`raw` + `_t` and `raw_` + `t` are both `raw___t`; it is
    /// left to `raw_`).
    fn clash(&self, server: &str, name: &str) -> Option<String> {
        if self.builtins.contains(name) {
            return Some(format!("`{name}` collides with a built-in tool"));
        }
        self.servers
            .iter()
            .filter(|other| other.len() > server.len())
            .find(|other| reads_as_tool_of(name, other))
            .map(|other| format!("`{name}` reads as a tool of the server `{other}`"))
    }
}

/// Runs until aborted.
pub(crate) async fn supervise(
    slot: Arc<Slot>,
    launcher: Arc<dyn Launcher>,
    mut events: mpsc::UnboundedReceiver<Event>,
    events_tx: mpsc::UnboundedSender<Event>,
    reserved: Arc<Reserved>,
) {
    let mut restarts = 0u32;
    let mut backoff = FIRST_BACKOFF;
    loop {
        while events.try_recv().is_ok() {}
        slot.stderr.clear();
        let began = Instant::now();
        let reason = match connect(
            &slot.name,
            &slot.config,
            launcher.as_ref(),
            events_tx.clone(),
            &slot.stderr,
            slot.progress.clone(),
        )
        .await
        {
            Err(reason) => reason,
            Ok(session) => {
                let peer = session.service.peer().clone();
                match list(&slot, &peer, &reserved).await {
                    Err(reason) => reason,
                    Ok(()) => {
                        slot.up(peer.clone());
                        slot.settle();
                        tracing::info!(server = %slot.name, "MCP server up");
                        watch(&slot, session, peer, &mut events, &reserved).await
                    }
                }
            }
        };
        tracing::warn!(server = %slot.name, %reason, restarts, "MCP server down");
        slot.down(reason, restarts);
        slot.settle();
        if began.elapsed() >= STABLE {
            backoff = FIRST_BACKOFF;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        restarts = restarts.saturating_add(1);
    }
}

/// Serves list changes until the connection ends; why it ended.
async fn watch(
    slot: &Arc<Slot>,
    session: Session,
    peer: Peer<RoleClient>,
    events: &mut mpsc::UnboundedReceiver<Event>,
    reserved: &Reserved,
) -> String {
    let Session { service, _guard } = session;
    let ended = service.waiting();
    tokio::pin!(ended);
    loop {
        tokio::select! {
            quit = &mut ended => {
                tracing::debug!(server = %slot.name, ?quit, "MCP connection ended");
                return "it stopped".to_owned();
            }
            event = events.recv() => match event {
                Some(Event::ListChanged) => {
                    if let Err(reason) = list(slot, &peer, reserved).await {
                        return reason;
                    }
                }
                Some(Event::Broken(reason)) => return reason,
                None => return "the client stopped".to_owned(),
            },
        }
    }
}

/// Lists the server's tools and offers those the configuration allows and that pass the checks.
async fn list(
    slot: &Arc<Slot>,
    peer: &Peer<RoleClient>,
    reserved: &Reserved,
) -> Result<(), String> {
    let timeout = Duration::from_secs(slot.config.timeout_secs);
    let (listed, cut) = match tokio::time::timeout(timeout, list_pages(peer)).await {
        Ok(Ok(listed)) => listed,
        Ok(Err(e)) => return Err(format!("listing its tools failed: {e}")),
        Err(_) => {
            return Err(format!(
                "it did not list its tools within {}s",
                slot.config.timeout_secs
            ));
        }
    };
    let mut offered = Offered::new();
    let mut refused = Vec::new();
    for tool in listed {
        let remote = tool.name.to_string();
        if !allowed(&slot.config, &remote) {
            continue;
        }
        let mut schema = Value::Object((*tool.input_schema).clone());
        let checked = offered_name(&slot.name, &remote).and_then(|name| {
            check_schema(&schema)?;
            if let Some(reason) = reserved.clash(&slot.name, &name) {
                return Err(reason);
            }
            if offered.contains_key(&name) {
                return Err("the server lists it twice".to_owned());
            }
            if offered.len() >= MAX_SERVER_TOOLS {
                return Err(format!(
                    "the server offers more than {MAX_SERVER_TOOLS} tools; name the ones to offer in `tools`"
                ));
            }
            Ok(name)
        });
        let name = match checked {
            Ok(name) => name,
            Err(reason) => {
                tracing::warn!(server = %slot.name, tool = %remote, %reason, "MCP tool not offered");
                refused.push(RefusedTool {
                    tool: remote,
                    reason,
                });
                continue;
            }
        };
        // The server's words go into the model's prompt: cleaned and bounded first.
        clean_schema(&mut schema);
        let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
        let tool = McpTool {
            description: description_of(&slot.name, tool.description.as_deref()),
            tier: tier_of(&slot.config, &remote, read_only),
            timeout,
            schema,
            remote,
            name: name.clone(),
            slot: Arc::downgrade(slot),
        };
        offered.insert(name, Arc::new(tool));
    }
    if cut {
        refused.push(RefusedTool {
            tool: "(the rest)".to_owned(),
            reason: format!(
                "the server lists more than {MAX_LISTED} tools or {MAX_PAGES} pages; the rest were not read"
            ),
        });
    }
    tracing::info!(server = %slot.name, tools = offered.len(), refused = refused.len(), "MCP tools listed");
    slot.set_tools(offered, refused);
    Ok(())
}

/// The server's tools, page by page, at most [`MAX_LISTED`] of them from at most [`MAX_PAGES`]
/// pages; whether the listing was cut there.
async fn list_pages(peer: &Peer<RoleClient>) -> Result<(Vec<Tool>, bool), ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer.list_tools(Some(params)).await?;
        tools.extend(page.tools);
        if tools.len() > MAX_LISTED {
            tools.truncate(MAX_LISTED);
            return Ok((tools, true));
        }
        match page.next_cursor {
            None => return Ok((tools, false)),
            next => cursor = next,
        }
    }
    Ok((tools, true))
}
