//! Running one turn for a session: a fresh [`ToolExecutionContext`] per turn, the runtime's
//! events carried, numbered, in frames on the session's hub.

use std::sync::Arc;

use tokio::sync::mpsc;
use types::{ServerFrame, ToolExecutionContext, TurnId};

use crate::session::SessionHub;
use crate::user::UserAgent;

/// What [`spawn_turn`] needs.
#[derive(Debug)]
pub(crate) struct TurnRequest {
    pub(crate) user: Arc<UserAgent>,
    pub(crate) hub: Arc<SessionHub>,
    pub(crate) ctx: ToolExecutionContext,
    pub(crate) text: String,
    pub(crate) channel: usize,
}

/// A fresh turn id.
pub(crate) fn new_turn_id() -> Result<TurnId, types::IdError> {
    TurnId::parse(&format!("t-{}", uuid::Uuid::new_v4()))
}

/// Runs the turn in its own task. If that task ends without a terminal event (a panic), the
/// session is told the turn failed, so it never stays busy.
pub(crate) fn spawn_turn(request: TurnRequest) {
    let hub = Arc::clone(&request.hub);
    let turn_id = request.ctx.turn_id.clone();
    tokio::spawn(async move {
        if let Err(e) = tokio::spawn(run(request)).await {
            tracing::error!(error = %e, "turn task ended abnormally");
        }
        hub.end_orphaned(&turn_id);
    });
}

/// Runs the turn to its end on `request.hub`; its outcome.
pub(crate) async fn run(
    request: TurnRequest,
) -> Result<runtime::TurnOutcome, runtime::RuntimeError> {
    let TurnRequest {
        user,
        hub,
        ctx,
        text,
        channel,
    } = request;
    let (tx, mut rx) = mpsc::channel(channel.max(1));
    let session = ctx.session_id.clone();
    let turn = ctx.turn_id.clone();
    let runtime = Arc::clone(&user.runtime);
    user.name_session(&session, &text).await;
    let work = async move {
        let result = runtime.run_turn(&ctx, &text, &tx).await;
        drop(tx);
        result
    };
    let forward = async {
        while let Some(event) = rx.recv().await {
            hub.publish(|seq| ServerFrame::Turn {
                seq,
                session_id: session.clone(),
                turn_id: turn.clone(),
                event,
            });
        }
    };
    let (result, ()) = tokio::join!(work, forward);
    if let Err(e) = &result {
        tracing::info!(error = %e, session = %session, "turn ended with an error");
    }
    user.settle_session(&session).await;
    result
}
