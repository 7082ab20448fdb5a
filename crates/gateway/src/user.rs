//! [`UserAgent`]: everything the gateway holds for one user — their token, workspace, database,
//! runtime, pending approvals — and the live state of their sessions.
//!
//! Each user has their own [`MemoryStore`] and their own tool registry built over *that* store, so
//! nothing about one user can reach another's; identity for a turn is then passed explicitly in
//! the turn's [`types::ToolExecutionContext`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, SecondsFormat, Utc};
use memory::{MemoryError, MemoryStore, SessionInfo, SessionKind};
use provider::Provider;
use runtime::{AgentRuntime, ModelLimits, PendingApprovals};
use tools::{ShellExec, ToolRegistry, register_memory_tools};
use types::{RetrievalConfig, RuntimeConfig, SessionId, SessionSummary, UserId, WorkspacePaths};

use crate::session::SessionHub;
use crate::{GatewayError, GatewayToken};

/// The agent settings a standard [`UserAgent`] is built with.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub runtime: RuntimeConfig,
    pub retrieval: RetrievalConfig,
    pub limits: ModelLimits,
}

/// One user served by the gateway.
#[derive(Debug)]
pub struct UserAgent {
    pub(crate) user_id: UserId,
    pub(crate) token: GatewayToken,
    pub(crate) workspace: WorkspacePaths,
    pub(crate) store: MemoryStore,
    pub(crate) runtime: Arc<AgentRuntime>,
    pub(crate) approvals: PendingApprovals,
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
    Failed(MemoryError),
}

impl UserAgent {
    /// A user served by `runtime`. `runtime` must keep its history in `store` and, for approvals,
    /// use `approvals` as its approver (see [`UserAgent::standard`], which does both).
    pub fn new(
        user_id: UserId,
        token: GatewayToken,
        workspace: WorkspacePaths,
        store: MemoryStore,
        runtime: AgentRuntime,
        approvals: PendingApprovals,
    ) -> Self {
        Self {
            user_id,
            token,
            workspace,
            store,
            runtime: Arc::new(runtime),
            approvals,
            live: Mutex::default(),
        }
    }

    /// The standard agent: file tools, the four memory tools over this user's `store` and
    /// `shell_exec` (to the user's shell-vm); history
    /// and recall in `store`, approvals answered by the user's clients.
    pub fn standard(
        user_id: UserId,
        token: GatewayToken,
        workspace: WorkspacePaths,
        store: MemoryStore,
        provider: Arc<dyn Provider>,
        settings: AgentSettings,
    ) -> Result<Self, GatewayError> {
        let mut registry = ToolRegistry::with_file_tools();
        register_memory_tools(
            &mut registry,
            Some(Arc::new(store.clone())),
            &settings.retrieval,
        )
        .map_err(|source| GatewayError::Tools {
            user: user_id.clone(),
            source,
        })?;
        // The shell runs in the user's shell-vm; without one the tool says so and runs nothing.
        registry
            .register(Arc::new(ShellExec))
            .map_err(|source| GatewayError::Tools {
                user: user_id.clone(),
                source,
            })?;
        let approvals = PendingApprovals::default();
        let runtime = AgentRuntime::new(
            provider,
            Arc::new(registry),
            settings.runtime,
            settings.limits,
        )
        .with_memory(store.clone())
        .with_retrieval(settings.retrieval)
        .with_approver(Arc::new(approvals.clone()));
        Ok(Self::new(
            user_id, token, workspace, store, runtime, approvals,
        ))
    }

    pub fn user_id(&self) -> &UserId {
        &self.user_id
    }

    pub fn store(&self) -> &MemoryStore {
        &self.store
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
    ) -> Result<SessionSummary, MemoryError> {
        let id = SessionId::parse(&format!("s-{}", uuid::Uuid::new_v4()))
            .map_err(|e| MemoryError::InvalidInput(e.to_string()))?;
        let info = self.store.create_session(&id, &self.user_id, title).await?;
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
        let Ok(info) = self.store.session_info(session).await else {
            return;
        };
        if info.user_id != self.user_id || info.title.is_some() {
            return;
        }
        if let Some(title) = crate::title::title_from(text)
            && let Err(e) = self.store.set_session_title(session, &title).await
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
        if let Ok(info) = self.store.session_info(session).await {
            if info.user_id != self.user_id {
                return;
            }
            if let Some(title) = &pending.title
                && let Err(e) = self.store.set_session_title(session, title).await
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
        match self.store.session_info(session).await {
            Ok(info) if info.user_id == self.user_id && info.kind == SessionKind::Conversation => {
                Ok(self.summary_of(&info))
            }
            Ok(_) | Err(MemoryError::SessionNotFound(_)) => Err(SessionLookup::NotFound),
            Err(e) => Err(SessionLookup::Failed(e)),
        }
    }

    /// The user's conversations, most recently active first (new, unstored ones first).
    pub(crate) async fn sessions(&self) -> Result<Vec<SessionSummary>, MemoryError> {
        let stored = self.store.list_sessions(&self.user_id).await?;
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
        out.extend(
            stored
                .iter()
                .filter(|s| s.kind == SessionKind::Conversation)
                .map(|s| {
                    let mut summary = self.summary_of(s);
                    if summary.title.is_none() {
                        summary.title = pending
                            .iter()
                            .find(|(id, _)| id == &s.session_id)
                            .and_then(|(_, p)| p.title.clone());
                    }
                    summary
                }),
        );
        Ok(out)
    }

    fn live_bits(&self, session: &SessionId) -> (u64, Option<types::TurnId>) {
        let hub = self.live().hubs.get(session).cloned();
        hub.map(|h| h.live()).unwrap_or((0, None))
    }

    fn summary_of(&self, info: &SessionInfo) -> SessionSummary {
        let (last_seq, active_turn) = self.live_bits(&info.session_id);
        SessionSummary {
            session_id: info.session_id.clone(),
            title: info.title.clone(),
            created_at: rfc3339(info.created_at),
            last_active_at: rfc3339(info.last_active_at),
            messages: info.events,
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

pub(crate) fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}
