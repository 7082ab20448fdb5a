//! [`McpLimits`] and the session manager that applies them: a cap on one user's live MCP
//! sessions over streamable HTTP (a new `initialize` past the cap closes the least recently used
//! session), a short idle time, and memory given back once many sessions have closed.
//!
//! rmcp's in-memory manager keeps every session until its idle time passes (five minutes by
//! default) and has no cap, so a client holding the token could open sessions until the process
//! ran out of memory. Each session is a task with its channels; closing one frees them, but
//! glibc's allocator keeps freed memory in its arenas, so after many sessions the process stays
//! as large as at its peak. After [`TRIM_AFTER`] closes, once at most a quarter of the cap is
//! left open, [`McpLimits::on_closed`] is called (the gateway asks the allocator to return free
//! memory there).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionManager};

/// Closed sessions after which free memory is worth giving back.
pub const TRIM_AFTER: usize = 64;

/// How many MCP sessions one user may hold over HTTP and for how long an idle one is kept.
#[derive(Clone)]
pub struct McpLimits {
    /// Live sessions at once; a new one past it closes the least recently used.
    pub max_sessions: usize,
    /// A session with no request for this long is closed (its client must `initialize` again).
    pub idle: Duration,
    /// Called (off the request path) once many sessions have closed: e.g. to give free memory
    /// back to the system.
    pub on_closed: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl McpLimits {
    pub const DEFAULT_MAX_SESSIONS: usize = 32;
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(120);
}

impl Default for McpLimits {
    fn default() -> Self {
        Self {
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            idle: Self::DEFAULT_IDLE,
            on_closed: None,
        }
    }
}

impl std::fmt::Debug for McpLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpLimits")
            .field("max_sessions", &self.max_sessions)
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

/// rmcp's in-memory session manager, capped and with a last-use time per session.
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    limits: McpLimits,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Last request of each live session.
    used: HashMap<SessionId, Instant>,
    /// Sessions closed since `on_closed` was last called.
    closed: usize,
}

impl CappedSessions {
    pub(crate) fn new(limits: McpLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle);
        // A session that never completes `initialize` goes as soon as an idle one does.
        inner.session_config.init_timeout = Some(limits.idle);
        Self {
            inner,
            limits,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Plain maps and a counter: no invariant a panic could break.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(&self, id: &SessionId) {
        if let Some(at) = self.state().used.get_mut(id) {
            *at = Instant::now();
        }
    }

    /// The least recently used sessions to close so that one more fits under the cap.
    fn over_cap(&self) -> Vec<SessionId> {
        let state = self.state();
        let room = self.limits.max_sessions.max(1) - 1;
        let excess = state.used.len().saturating_sub(room);
        let mut by_age: Vec<(&SessionId, &Instant)> = state.used.iter().collect();
        by_age.sort_by_key(|(_, at)| **at);
        by_age
            .into_iter()
            .take(excess)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Records that `id` closed; calls `on_closed` when enough have and few remain.
    fn forget(&self, id: &SessionId) {
        let call = {
            let mut state = self.state();
            if state.used.remove(id).is_some() {
                state.closed += 1;
            }
            let few_left = state.used.len() <= self.limits.max_sessions / 4;
            let call = state.closed >= TRIM_AFTER && few_left;
            if call {
                state.closed = 0;
            }
            call
        };
        if call && let Some(hook) = &self.limits.on_closed {
            hook();
        }
    }

    /// Live sessions now.
    pub(crate) fn live(&self) -> usize {
        self.state().used.len()
    }
}

impl SessionManager for CappedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        for old in self.over_cap() {
            tracing::info!(
                max_sessions = self.limits.max_sessions,
                "MCP session cap reached: closing the least recently used session"
            );
            self.close_session(&old).await?;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.state().used.insert(id.clone(), Instant::now());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.forget(id);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}
