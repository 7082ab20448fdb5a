//! Capture over the connection: each capture report of the user's runtime (the changes it made,
//! the proposals it keeps) is pushed to every connected client of that user as
//! `memory_captured`; `list_pending_memories`, `accept_memory` and `reject_memory` let the user
//! decide on the proposals of `mode = "suggest"`. The user is the connection's; a frame never
//! names it, and another user's proposals do not exist here. `search_conversations` searches the
//! user's past conversations (a governed read).

use std::sync::Arc;

use runtime::AgentRuntime;
use tokio::sync::broadcast::error::RecvError;
use types::{ClientFrame, ServerFrame, ToolExecutionContext};

use crate::conn::{Conn, Refusal};
use crate::notes::refusal;
use crate::user::UserAgent;

/// Forwards `user`'s capture reports to their clients until the gateway shuts down.
pub(crate) fn start(user: &Arc<UserAgent>, shared: &crate::shared::Shared) {
    let Some(mut reports) = user.runtime().capture_reports() else {
        return;
    };
    let user = Arc::clone(user);
    let stop = shared.shutdown.clone();
    tokio::spawn(async move {
        loop {
            let received = tokio::select! {
                () = stop.cancelled() => return,
                received = reports.recv() => received,
            };
            match received {
                Ok((owner, report)) if owner == user.user_id => {
                    user.clients.offer(&ServerFrame::MemoryCaptured { report });
                }
                Ok(_) => {}
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "capture reports dropped for slow clients");
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
}

impl Conn {
    /// Answers `list_pending_memories`, `accept_memory` or `reject_memory`.
    pub(crate) async fn pending_memories(
        &self,
        frame: ClientFrame,
    ) -> (Option<String>, Result<Option<ServerFrame>, Refusal>) {
        let kind = match &frame {
            ClientFrame::AcceptMemory { .. } => "accept_memory",
            ClientFrame::RejectMemory { .. } => "reject_memory",
            ClientFrame::SearchConversations { .. } => "search_conversations",
            _ => "list_pending_memories",
        };
        let reference = Some(kind.to_owned());
        let ctx = match self.request_ctx("memory") {
            Ok(ctx) => ctx,
            Err(refusal) => return (reference, Err(refusal)),
        };
        let result = answer(self.user.runtime(), &ctx, frame).await;
        (reference, result.map(Some))
    }
}

async fn answer(
    runtime: &AgentRuntime,
    ctx: &ToolExecutionContext,
    frame: ClientFrame,
) -> Result<ServerFrame, Refusal> {
    Ok(match frame {
        ClientFrame::AcceptMemory { id } => ServerFrame::MemoryAccepted {
            id,
            change: runtime.accept_memory(ctx, id).await.map_err(refusal)?,
        },
        ClientFrame::RejectMemory { id } => {
            runtime.reject_memory(ctx, id).await.map_err(refusal)?;
            ServerFrame::MemoryRejected { id }
        }
        ClientFrame::SearchConversations { query, limit } => {
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            let found = runtime
                .search_conversations(ctx, &query, limit)
                .await
                .map_err(refusal)?;
            ServerFrame::ConversationResults {
                query,
                hits: found.hits,
                time: found.time,
            }
        }
        _ => ServerFrame::PendingMemories {
            memories: runtime.pending_memories(ctx).await.map_err(refusal)?,
        },
    })
}
