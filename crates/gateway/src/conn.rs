//! One authenticated connection: its current session, and the answer to each client frame.

use std::sync::Arc;

use axum::extract::ws::WebSocket;
use futures::StreamExt;
use runtime::ApprovalDecision;
use types::ClientFrame::{ChangeSchedule, ListSchedules};
use types::{
    ApprovalScope, CancellationToken, ClientFrame, ErrorCode, NoteRequest, ServerFrame, SessionId,
    SessionSummary, ToolExecutionContext,
};

use crate::frames::{Incoming, read_frame};
use crate::handshake::{Hello, drain, handshake};
use crate::limits::Admission;
use crate::outbound::{Outbox, start_writer};
use crate::session::SessionHub;
use crate::shared::Shared;
use crate::turn::{TurnRequest, new_turn_id, spawn_turn};
use crate::user::{SessionLookup, UserAgent};
use crate::web_auth::WebSession;

mod history;
mod models;

/// Longest `client_turn_id` and session title accepted, in bytes.
const MAX_LABEL_BYTES: usize = 200;
/// Most messages one `get_history` returns.
pub const MAX_HISTORY_PAGE: u32 = 200;

/// Serves one WebSocket from upgrade to close.
pub(crate) async fn serve(
    socket: WebSocket,
    shared: Arc<Shared>,
    admission: Admission,
    web: Option<WebSession>,
) {
    let id = shared.next_conn_id();
    let (mut sink, mut stream) = socket.split();
    let deadline = admission.hello_deadline(shared.config.auth_timeout);
    let Some(hello) = handshake(&shared, &mut sink, &mut stream, deadline, web.as_ref()).await
    else {
        drain(&mut stream).await;
        return;
    };
    admission.authenticated();
    let outbox = start_writer(
        id,
        sink,
        shared.config.client_queue,
        shared.config.send_timeout,
    );
    let Hello {
        user,
        session_id,
        last_seq,
    } = hello;
    let mut conn = Conn {
        shared: Arc::clone(&shared),
        user,
        outbox,
        hub: None,
        signed_out: web.map(|w| w.ended),
    };
    if conn.attach_first(session_id, last_seq).await {
        let _joined = crate::notify::join(&conn.user, &conn.outbox).await;
        crate::mcp_status::greet(&conn.user, &conn.outbox);
        conn.run(&mut stream).await;
    }
    conn.detach();
    conn.outbox.close().await;
    drain(&mut stream).await;
}

pub(crate) struct Conn {
    shared: Arc<Shared>,
    pub(crate) user: Arc<UserAgent>,
    outbox: Outbox,
    /// The current session.
    pub(crate) hub: Option<Arc<SessionHub>>,
    /// For a connection signed in by a browser session: cancelled when that session signs out.
    signed_out: Option<CancellationToken>,
}

/// A refusal to send back: code, message.
pub(crate) type Refusal = (ErrorCode, String);

impl Conn {
    /// Attaches the session named in `hello` (or a new one) and sends `hello_ok`.
    async fn attach_first(&mut self, session: Option<SessionId>, last_seq: Option<u64>) -> bool {
        let summary = match session {
            Some(id) => self.lookup(&id).await,
            None => self.create(None),
        };
        match summary {
            Ok(summary) => {
                let hello_ok = ServerFrame::HelloOk {
                    user_id: self.user.user_id.clone(),
                    session: summary.clone(),
                    protocol_version: types::PROTOCOL_VERSION,
                    model: Some(self.user.runtime().model().to_owned()),
                };
                if !self.outbox.send(hello_ok).await {
                    return false;
                }
                self.attach(&summary.session_id, last_seq).await;
                true
            }
            Err((code, message)) => {
                self.reply_error(code, message, Some("hello".into())).await;
                false
            }
        }
    }

    async fn run(&mut self, stream: &mut futures::stream::SplitStream<WebSocket>) {
        loop {
            let incoming = tokio::select! {
                incoming = read_frame(stream, &self.shared.config) => incoming,
                () = self.shared.shutdown.cancelled() => return,
                () = crate::web_auth::ended(self.signed_out.as_ref()) => return,
            };
            match incoming {
                Incoming::Gone => return,
                Incoming::Bad(frame) => {
                    let fatal = matches!(
                        frame,
                        ServerFrame::Error {
                            code: ErrorCode::FrameTooLarge,
                            ..
                        }
                    );
                    if !self.outbox.send(frame).await || fatal {
                        return;
                    }
                }
                Incoming::Frame(frame) => {
                    if !self.handle(frame).await {
                        return;
                    }
                }
            }
        }
    }

    /// Answers one frame; false when the connection is gone.
    async fn handle(&mut self, frame: ClientFrame) -> bool {
        let (reference, result) = match frame {
            ClientFrame::Hello { .. } => (
                Some("hello".to_owned()),
                Err((
                    ErrorCode::HelloExpected,
                    "already authenticated: hello is sent once".to_owned(),
                )),
            ),
            ClientFrame::SendTurn {
                session_id,
                text,
                client_turn_id,
            } => (
                Some(client_turn_id.clone()),
                self.send_turn(&session_id, text, &client_turn_id).await,
            ),
            ClientFrame::CancelTurn { session_id } => {
                (Some("cancel_turn".into()), self.cancel_turn(&session_id))
            }
            ClientFrame::NewSession { title } => {
                (Some("new_session".into()), self.new_session(title).await)
            }
            ClientFrame::ListSessions => (Some("list_sessions".into()), self.list().await),
            ClientFrame::SwitchSession {
                session_id,
                last_seq,
            } => (
                Some("switch_session".into()),
                self.switch(&session_id, last_seq).await,
            ),
            ClientFrame::GetHistory {
                session_id,
                before,
                limit,
            } => (
                Some("get_history".into()),
                self.history(&session_id, before, limit).await,
            ),
            ClientFrame::Approve {
                call_id,
                approved,
                scope,
            } => (
                Some(call_id.clone()),
                self.approve(&call_id, approved, scope),
            ),
            ClientFrame::Resync {
                session_id,
                after_seq,
            } => (Some("resync".into()), self.resync(&session_id, after_seq)),
            ClientFrame::Ping => (None, Ok(Some(ServerFrame::Pong))),
            ClientFrame::Note(request) => self.notes(request).await,
            s @ (ListSchedules | ChangeSchedule { .. }) => self.schedules(s).await,
            m @ (ClientFrame::ListModels { .. }
            | ClientFrame::SetModel { .. }
            | ClientFrame::GetUsage { .. }) => self.models(m).await,
            c @ (ClientFrame::ListPendingMemories
            | ClientFrame::AcceptMemory { .. }
            | ClientFrame::RejectMemory { .. }
            | ClientFrame::SearchConversations { .. }) => self.pending_memories(c).await,
        };
        match result {
            Ok(Some(frame)) => self.outbox.send(frame).await,
            Ok(None) => true,
            Err((code, message)) => self.reply_error(code, message, reference).await,
        }
    }

    /// A note request for this connection's user, with its frame type as the error's `ref`.
    async fn notes(
        &self,
        request: NoteRequest,
    ) -> (Option<String>, Result<Option<ServerFrame>, Refusal>) {
        let kind = Some(request.kind().to_owned());
        let ctx = match self.request_ctx("note") {
            Ok(ctx) => ctx,
            Err(refusal) => return (kind, Err(refusal)),
        };
        let result = crate::notes::answer(self.user.runtime(), &ctx, request).await;
        (kind, result.map(Some))
    }

    /// The context of a user's own request of `what` (a note, schedule or memory frame) on this
    /// connection: the gateway surface, the session the connection is on, a fresh turn id.
    pub(crate) fn request_ctx(&self, what: &str) -> Result<ToolExecutionContext, Refusal> {
        let (session_id, turn_id) = match (&self.hub, new_turn_id()) {
            (Some(hub), Ok(turn)) => (hub.id().clone(), turn),
            _ => return Err(internal(format!("no session for a {what} request"))),
        };
        Ok(ToolExecutionContext {
            surface: types::CallSurface::new(types::Surface::Gateway),
            ..ToolExecutionContext::new(
                self.user.user_id.clone(),
                session_id,
                turn_id,
                self.user.workspace.clone(),
            )
        })
    }

    async fn reply_error(
        &self,
        code: ErrorCode,
        message: String,
        reference: Option<String>,
    ) -> bool {
        self.outbox
            .send(ServerFrame::error(code, message, reference))
            .await
    }

    fn current(&self, session: &SessionId) -> Result<Arc<SessionHub>, Refusal> {
        match &self.hub {
            Some(hub) if hub.id() == session => Ok(Arc::clone(hub)),
            Some(hub) => Err((
                ErrorCode::WrongSession,
                format!(
                    "this connection is on session {}: switch_session to {session} first",
                    hub.id()
                ),
            )),
            None => Err((
                ErrorCode::WrongSession,
                "no session: send new_session".into(),
            )),
        }
    }

    async fn send_turn(
        &mut self,
        session: &SessionId,
        text: String,
        client_turn_id: &str,
    ) -> Result<Option<ServerFrame>, Refusal> {
        let hub = self.current(session)?;
        if text.trim().is_empty() {
            return Err((
                ErrorCode::InvalidRequest,
                "the message is empty: type something to send".into(),
            ));
        }
        if client_turn_id.len() > MAX_LABEL_BYTES {
            return Err((
                ErrorCode::InvalidRequest,
                format!("client_turn_id is limited to {MAX_LABEL_BYTES} bytes"),
            ));
        }
        let turn_id = new_turn_id().map_err(internal)?;
        let Some(started) = hub.start_turn(&turn_id, client_turn_id) else {
            return Err((
                ErrorCode::TurnInProgress,
                "this session is already running a turn: wait for it to end or cancel_turn".into(),
            ));
        };
        let ctx = ToolExecutionContext {
            cancellation: started.cancel,
            surface: types::CallSurface::new(types::Surface::Agent),
            ..ToolExecutionContext::new(
                self.user.user_id.clone(),
                session.clone(),
                turn_id,
                self.user.workspace.clone(),
            )
        };
        spawn_turn(TurnRequest {
            user: Arc::clone(&self.user),
            hub,
            ctx,
            text,
            channel: self.shared.config.turn_channel,
        });
        Ok(None)
    }

    fn cancel_turn(&self, session: &SessionId) -> Result<Option<ServerFrame>, Refusal> {
        let hub = self.current(session)?;
        if hub.cancel() {
            Ok(None)
        } else {
            Err((
                ErrorCode::NoActiveTurn,
                "no turn is running in this session".into(),
            ))
        }
    }

    async fn new_session(&mut self, title: Option<String>) -> Result<Option<ServerFrame>, Refusal> {
        let title = title.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        if title
            .as_ref()
            .is_some_and(|t| t.len() > MAX_LABEL_BYTES || t.chars().any(char::is_control))
        {
            return Err((
                ErrorCode::InvalidRequest,
                format!("a title is one line of at most {MAX_LABEL_BYTES} bytes"),
            ));
        }
        let session = self
            .user
            .create_stored_session(title.as_deref())
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "creating a session failed");
                (
                    ErrorCode::Internal,
                    "could not create the session; try again".to_owned(),
                )
            })?;
        self.attach(&session.session_id, None).await;
        Ok(Some(ServerFrame::SessionCreated { session }))
    }

    fn create(&self, title: Option<String>) -> Result<SessionSummary, Refusal> {
        let id = self.user.new_session(title.clone()).map_err(internal)?;
        let now = crate::user::rfc3339(chrono::Utc::now());
        Ok(SessionSummary {
            session_id: id,
            title,
            created_at: now.clone(),
            last_active_at: now,
            messages: 0,
            active_turn: None,
            last_seq: 0,
        })
    }

    async fn list(&self) -> Result<Option<ServerFrame>, Refusal> {
        let sessions = self.user.sessions().await.map_err(|e| {
            tracing::warn!(error = %e, "listing sessions failed");
            (
                ErrorCode::Internal,
                "could not read the session list; try again".to_owned(),
            )
        })?;
        Ok(Some(ServerFrame::SessionList { sessions }))
    }

    async fn lookup(&self, session: &SessionId) -> Result<SessionSummary, Refusal> {
        self.user.lookup(session).await.map_err(|e| match e {
            SessionLookup::NotFound => (
                ErrorCode::SessionNotFound,
                format!("no session {session} for this user: list_sessions shows yours"),
            ),
            SessionLookup::Failed(e) => {
                tracing::warn!(error = %e, "reading a session failed");
                (
                    ErrorCode::Internal,
                    "could not read the session; try again".to_owned(),
                )
            }
        })
    }

    async fn switch(
        &mut self,
        session: &SessionId,
        last_seq: Option<u64>,
    ) -> Result<Option<ServerFrame>, Refusal> {
        let summary = self.lookup(session).await?;
        if !self
            .outbox
            .send(ServerFrame::SessionSwitched { session: summary })
            .await
        {
            return Ok(None);
        }
        self.attach(session, last_seq).await;
        Ok(None)
    }

    /// Makes `session` current, replaying what the client missed after `last_seq`.
    async fn attach(&mut self, session: &SessionId, last_seq: Option<u64>) {
        self.detach();
        let hub = self.user.hub(session, self.shared.config.session_log);
        // An `events_expired` notice, if any, is queued ahead of the replay.
        hub.subscribe(&self.outbox, last_seq, None);
        self.hub = Some(hub);
    }

    fn detach(&mut self) {
        if let Some(hub) = self.hub.take() {
            hub.unsubscribe(self.outbox.id());
        }
    }

    fn resync(
        &mut self,
        session: &SessionId,
        after_seq: u64,
    ) -> Result<Option<ServerFrame>, Refusal> {
        let hub = self.current(session)?;
        // An `events_expired` notice, if any, is queued ahead of the replay.
        hub.subscribe(&self.outbox, Some(after_seq), Some("resync"));
        Ok(None)
    }

    fn approve(
        &self,
        call_id: &str,
        approved: bool,
        scope: Option<ApprovalScope>,
    ) -> Result<Option<ServerFrame>, Refusal> {
        let decision = match (approved, scope) {
            (false, _) => ApprovalDecision::Decline,
            (true, None | Some(ApprovalScope::Once)) => ApprovalDecision::Approve,
            (true, Some(ApprovalScope::Session)) => ApprovalDecision::ApproveForSession,
        };
        let answered = self.user.active_hubs().iter().any(|hub| {
            hub.active_turn()
                .is_some_and(|turn| self.user.approvals.answer(&turn, call_id, decision))
        });
        if answered {
            Ok(None)
        } else {
            Err((
                ErrorCode::ApprovalNotFound,
                format!("no call {call_id} is waiting for approval"),
            ))
        }
    }
}

fn internal(e: impl std::fmt::Display) -> Refusal {
    tracing::error!(error = %e, "internal error");
    (ErrorCode::Internal, "internal error; try again".into())
}
