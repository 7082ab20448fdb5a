//! Approvals for `Privileged` tool calls when `runtime.approval = "ask"`.
//!
//! The runtime registers the request with the caller's [`Approver`] first, then emits
//! [`crate::TurnEvent::ApprovalRequested`], then awaits the answer — racing the turn's cancellation
//! and `runtime.approval_timeout_secs` (either counts as declined). Registering before emitting
//! means an answer can never arrive before anyone listens for it.
//!
//! An answer of [`ApprovalDecision::ApproveForSession`] records a grant for the (session, tool)
//! pair in the runtime's [`SessionGrants`]: later calls of that tool in that session run without
//! asking. Grants live in memory and end with the agent process.
//!
//! [`PendingApprovals`] is a ready-made approver for servers: keep a clone, and when the client
//! answers, call [`PendingApprovals::answer`] with the turn and call id from the event.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Serialize;
use tokio::sync::oneshot;
use types::{SessionId, TurnId, UserId};

/// A privileged call waiting for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    pub user_id: UserId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    pub call_id: String,
    pub tool: String,
    /// The raw arguments text the model sent.
    pub arguments: String,
    /// Why the call is asked about when its tool alone would not be (see
    /// `TurnEvent::ApprovalRequested`).
    pub reason: Option<String>,
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call.
    Approve,
    /// Run this call and every later call of the same tool in the same session.
    ApproveForSession,
    Decline,
}

/// The (session, tool) pairs the user allowed for the rest of the session. Cheap to clone;
/// clones share state.
#[derive(Debug, Clone, Default)]
pub struct SessionGrants {
    granted: Arc<Mutex<HashSet<(SessionId, String)>>>,
}

impl SessionGrants {
    fn lock(&self) -> MutexGuard<'_, HashSet<(SessionId, String)>> {
        // A plain set: no invariant a panic could break.
        self.granted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Allows `tool` in `session` from now on.
    pub fn grant(&self, session: &SessionId, tool: &str) {
        self.lock().insert((session.clone(), tool.to_owned()));
    }

    /// Whether `tool` was allowed for `session`.
    pub fn allows(&self, session: &SessionId, tool: &str) -> bool {
        self.lock().contains(&(session.clone(), tool.to_owned()))
    }
}

/// The future an [`Approver`] returns.
pub type ApprovalFuture = Pin<Box<dyn Future<Output = ApprovalDecision> + Send>>;

/// Whoever answers approval requests (the gateway, a CLI prompt, a test).
pub trait Approver: Send + Sync + std::fmt::Debug {
    /// Registers `request` at once (synchronously) and returns the future of its answer. Dropping
    /// the future withdraws the request.
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture;
}

type Key = (TurnId, String);

/// Requests waiting for an answer, keyed by turn and call id. Cheap to clone; clones share state.
#[derive(Debug, Clone, Default)]
pub struct PendingApprovals {
    waiting: Arc<Mutex<HashMap<Key, oneshot::Sender<ApprovalDecision>>>>,
}

impl PendingApprovals {
    fn lock(&self) -> MutexGuard<'_, HashMap<Key, oneshot::Sender<ApprovalDecision>>> {
        // A plain map: no invariant a panic could break.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers the request for `call_id` of `turn`. Returns false when no such request is waiting
    /// (already answered, withdrawn, or never made).
    pub fn answer(&self, turn: &TurnId, call_id: &str, decision: ApprovalDecision) -> bool {
        let sender = self.lock().remove(&(turn.clone(), call_id.to_owned()));
        sender.is_some_and(|s| s.send(decision).is_ok())
    }

    /// How many requests are waiting.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }
}

/// Removes the entry when the answer future is dropped (answered, timed out or cancelled).
struct Withdraw {
    pending: PendingApprovals,
    key: Key,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.pending.lock().remove(&self.key);
    }
}

impl Approver for PendingApprovals {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        let (tx, rx) = oneshot::channel();
        let key = (request.turn_id, request.call_id);
        self.lock().insert(key.clone(), tx);
        let guard = Withdraw {
            pending: self.clone(),
            key,
        };
        Box::pin(async move {
            let _guard = guard;
            rx.await.unwrap_or(ApprovalDecision::Decline)
        })
    }
}
