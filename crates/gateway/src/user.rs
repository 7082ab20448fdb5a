//! [`UserAgent`]: everything the gateway holds for one user — their token, workspace, runtime,
//! pending approvals — and the live state of their sessions.
//!
//! The agent itself (the user's store, the tool registry over that store, the runtime) is composed
//! by whoever starts the gateway (`oxydra-vm`); the gateway reads sessions and history only
//! through the runtime. Identity for a turn is passed explicitly in the turn's
//! [`types::ToolExecutionContext`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use runtime::{AgentRuntime, Conversation, PendingApprovals, RuntimeError};
use types::{SessionId, SessionSummary, UserId, WorkspacePaths};

use crate::GatewayToken;
use crate::metrics::MetricsRender;
use crate::session::SessionHub;

/// One user served by the gateway.
#[derive(Debug)]
pub struct UserAgent {
    pub(crate) user_id: UserId,
    pub(crate) token: GatewayToken,
    pub(crate) workspace: WorkspacePaths,
    pub(crate) runtime: Arc<AgentRuntime>,
    pub(crate) approvals: PendingApprovals,
    /// What `GET /metrics` serves for this user (none: an empty page).
    pub(crate) metrics: Option<MetricsRender>,
    /// The user's tools over MCP at `/mcp` (see [`UserAgent::with_mcp`]).
    pub(crate) mcp: Option<mcp::McpHttpService>,
    /// Runs the user's due schedules while the gateway serves (see [`UserAgent::with_scheduler`]).
    pub(crate) scheduler: Option<Arc<runtime::Scheduler>>,
    /// The user's connected clients, for notifications.
    pub(crate) clients: crate::notify::Clients,
    /// The user's own MCP servers, whose state their clients' status shows.
    pub(crate) mcp_status: Option<crate::mcp_status::McpStatus>,
    live: Mutex<Live>,
}

#[derive(Debug, Default)]
struct Live {
    hubs: HashMap<SessionId, Arc<SessionHub>>,
    /// Sessions made by `new_session` that have no stored message yet.
    pending: HashMap<SessionId, Pending>,
}

#[derive(Debug, Clone)]
struct Pending {
    title: Option<String>,
    created_at: DateTime<Utc>,
}

/// Why a session cannot be used by this user.
#[derive(Debug)]
pub(crate) enum SessionLookup {
    /// Not this user's (absent, another user's, or a memory namespace).
    NotFound,
    Failed(RuntimeError),
}

/// Why a stored session could not be created.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CreateError {
    #[error(transparent)]
    Id(#[from] types::IdError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl UserAgent {
    /// A user served by `runtime` (composed with the user's store and tools by the caller). The
    /// user's clients answer its approval requests: `runtime`'s approver is set here.
    pub fn new(
        user_id: UserId,
        token: GatewayToken,
        workspace: WorkspacePaths,
        runtime: AgentRuntime,
    ) -> Self {
        let approvals = PendingApprovals::default();
        let runtime = runtime.with_approver(Arc::new(approvals.clone()));
        Self {
            user_id,
            token,
            workspace,
            runtime: Arc::new(runtime),
            approvals,
            metrics: None,
            mcp: None,
            scheduler: None,
            clients: crate::notify::Clients::default(),
            mcp_status: None,
            live: Mutex::default(),
        }
    }

    /// Serves `render()` (Prometheus text) at `GET /metrics` to a caller with this user's token.
    #[must_use]
    pub fn with_metrics(mut self, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.metrics = Some(MetricsRender(Arc::new(render)));
        self
    }

    /// Serves `server` (built for this user) at `/mcp`, for clients with this user's token,
    /// holding at most `limits.max_sessions` MCP sessions (free memory is given back to the
    /// system after many have closed).
    pub fn with_mcp(mut self, server: mcp::McpServer, mut limits: mcp::McpLimits) -> Self {
        limits.on_closed = Some(Arc::new(crate::trim::soon));
        self.mcp = Some(mcp::http_service_with(server, limits));
        self
    }

    /// Runs `scheduler` (this user's) from [`crate::Gateway::start`] until shutdown: scheduled
    /// runs are turns on their sessions' hubs, and their notifications go to this user's clients.
    #[must_use]
    pub fn with_scheduler(mut self, scheduler: runtime::Scheduler) -> Self {
        self.scheduler = Some(Arc::new(scheduler));
        self
    }

    /// Shows the state of the user's own MCP servers (`clients`, the agent's) in their clients'
    /// status: an `mcp_status` frame on connect and whenever a server goes down or comes back.
    #[must_use]
    pub fn with_mcp_clients(mut self, clients: Arc<mcp::client::McpClients>) -> Self {
        self.mcp_status = Some(crate::mcp_status::McpStatus::new(clients));
        self
    }

    pub fn user_id(&self) -> &UserId {
        &self.user_id
    }

    pub fn runtime(&self) -> &AgentRuntime {
        &self.runtime
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        // Plain maps: no invariant a panic could break.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live hub of `session` (created on first use). Callers check ownership first.
    pub(crate) fn hub(&self, session: &SessionId, log_capacity: usize) -> Arc<SessionHub> {
        let mut live = self.live();
        Arc::clone(
            live.hubs
                .entry(session.clone())
                .or_insert_with(|| Arc::new(SessionHub::new(session.clone(), log_capacity))),
        )
    }

    /// Every hub with a running turn.
    pub(crate) fn active_hubs(&self) -> Vec<Arc<SessionHub>> {
        let hubs: Vec<Arc<SessionHub>> = self.live().hubs.values().cloned().collect();
        hubs.into_iter()
            .filter(|h| h.active_turn().is_some())
            .collect()
    }

    /// Starts a new session (stored with its first message). An untitled empty one that no
    /// client is on is reused, so launches do not pile up empty sessions.
    pub(crate) fn new_session(&self, title: Option<String>) -> Result<SessionId, types::IdError> {
        let mut live = self.live();
        if title.is_none() {
            let unused = live
                .pending
                .iter()
                .filter(|(id, p)| {
                    p.title.is_none() && live.hubs.get(*id).is_none_or(|h| h.is_unused())
                })
                .max_by_key(|(_, p)| p.created_at)
                .map(|(id, _)| id.clone());
            if let Some(id) = unused {
                return Ok(id);
            }
        }
        let id = SessionId::parse(&format!("s-{}", uuid::Uuid::new_v4()))?;
        live.pending.insert(
            id.clone(),
            Pending {
                title,
                created_at: Utc::now(),
            },
        );
        Ok(id)
    }

    /// A new session the user asked for (`new_session`), stored at once with its title so that it
    /// survives a restart even before its first message.
    pub(crate) async fn create_stored_session(
        &self,
        title: Option<&str>,
    ) -> Result<SessionSummary, CreateError> {
        let id = SessionId::parse(&format!("s-{}", uuid::Uuid::new_v4()))?;
        let info = self
            .runtime
            .create_conversation(&self.user_id, &id, title)
            .await?;
        Ok(self.summary_of(&info))
    }

    /// Before a turn whose user message is `text`: an untitled session is titled from it (its
    /// first message). Done before the turn runs, so a client that lists sessions once the turn
    /// ended sees the title.
    pub(crate) async fn name_session(&self, session: &SessionId, text: &str) {
        {
            let mut live = self.live();
            if let Some(pending) = live.pending.get_mut(session) {
                if pending.title.is_none() {
                    pending.title = crate::title::title_from(text);
                }
                return;
            }
        }
        // Only this user's conversations (`conversation` checks the owner).
        let Ok(Some(info)) = self.runtime.conversation(&self.user_id, session).await else {
            return;
        };
        if info.title.is_some() {
            return;
        }
        if let Some(title) = crate::title::title_from(text)
            && let Err(e) = self
                .runtime
                .set_conversation_title(&self.user_id, session, &title)
                .await
        {
            tracing::warn!(error = %e, session = %session, "could not store the session title");
        }
    }

    /// After a turn: a new session now stored gets its title.
    pub(crate) async fn settle_session(&self, session: &SessionId) {
        let pending = self.live().pending.get(session).cloned();
        let Some(pending) = pending else {
            return;
        };
        if let Ok(Some(_)) = self.runtime.conversation(&self.user_id, session).await {
            if let Some(title) = &pending.title
                && let Err(e) = self
                    .runtime
                    .set_conversation_title(&self.user_id, session, title)
                    .await
            {
                tracing::warn!(error = %e, session = %session, "could not store the session title");
                return;
            }
            self.live().pending.remove(session);
        }
    }

    /// The summary of `session` if it is one of this user's conversations.
    pub(crate) async fn lookup(
        &self,
        session: &SessionId,
    ) -> Result<SessionSummary, SessionLookup> {
        let pending = self.live().pending.get(session).cloned();
        if let Some(p) = pending {
            return Ok(self.summary_of_pending(session, &p));
        }
        match self.runtime.conversation(&self.user_id, session).await {
            Ok(Some(info)) => Ok(self.summary_of(&info)),
            Ok(None) => Err(SessionLookup::NotFound),
            Err(e) => Err(SessionLookup::Failed(e)),
        }
    }

    /// The user's conversations, most recently active first (new, unstored ones first).
    pub(crate) async fn sessions(&self) -> Result<Vec<SessionSummary>, RuntimeError> {
        let stored = self.runtime.conversations(&self.user_id).await?;
        let pending: Vec<(SessionId, Pending)> = self
            .live()
            .pending
            .iter()
            .map(|(id, p)| (id.clone(), p.clone()))
            .collect();
        let mut out: Vec<SessionSummary> = pending
            .iter()
            .filter(|(id, _)| !stored.iter().any(|s| &s.session_id == id))
            .map(|(id, p)| self.summary_of_pending(id, p))
            .collect();
        out.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        out.extend(stored.iter().map(|s| {
            let mut summary = self.summary_of(s);
            if summary.title.is_none() {
                summary.title = pending
                    .iter()
                    .find(|(id, _)| id == &s.session_id)
                    .and_then(|(_, p)| p.title.clone());
            }
            summary
        }));
        Ok(out)
    }

    fn live_bits(&self, session: &SessionId) -> (u64, Option<types::TurnId>) {
        let hub = self.live().hubs.get(session).cloned();
        hub.map(|h| h.live()).unwrap_or((0, None))
    }

    fn summary_of(&self, info: &Conversation) -> SessionSummary {
        let (last_seq, active_turn) = self.live_bits(&info.session_id);
        SessionSummary {
            session_id: info.session_id.clone(),
            title: info.title.clone(),
            created_at: rfc3339(info.created_at),
            last_active_at: rfc3339(info.last_active_at),
            messages: info.messages,
            active_turn,
            last_seq,
        }
    }

    fn summary_of_pending(&self, id: &SessionId, p: &Pending) -> SessionSummary {
        let (last_seq, active_turn) = self.live_bits(id);
        SessionSummary {
            session_id: id.clone(),
            title: p.title.clone(),
            created_at: rfc3339(p.created_at),
            last_active_at: rfc3339(p.created_at),
            messages: 0,
            active_turn,
            last_seq,
        }
    }
}

/// Times as the protocol writes them (one formatter, the runtime's).
pub(crate) use runtime::rfc3339;
