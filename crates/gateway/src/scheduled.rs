//! The gateway as the [`runtime::RunHost`] of a user's scheduler: a scheduled run's turn runs
//! on its session's hub like any other (numbered events, replay, cancellation at shutdown), and
//! its notification goes to every connected client of the user.

use std::sync::Arc;

use async_trait::async_trait;
use runtime::{RunHost, TurnStatus};
use types::{NotificationView, ToolExecutionContext};

use crate::turn::{TurnRequest, run};
use crate::user::UserAgent;

/// One user's runs.
pub(crate) struct GatewayRuns {
    pub(crate) user: Arc<UserAgent>,
    pub(crate) log_capacity: usize,
    pub(crate) channel: usize,
}

#[async_trait]
impl RunHost for GatewayRuns {
    async fn run_turn(&self, ctx: ToolExecutionContext, input: String) -> Result<String, String> {
        let hub = self.user.hub(&ctx.session_id, self.log_capacity);
        let turn_id = ctx.turn_id.clone();
        let Some(started) = hub.start_turn(&turn_id, "schedule") else {
            return Err("the schedule's session is busy with another turn".into());
        };
        let ctx = ToolExecutionContext {
            cancellation: started.cancel,
            ..ctx
        };
        let outcome = run(TurnRequest {
            user: Arc::clone(&self.user),
            hub: Arc::clone(&hub),
            ctx,
            text: input,
            channel: self.channel,
        })
        .await;
        hub.end_orphaned(&turn_id);
        match outcome {
            Ok(o) if o.status == TurnStatus::Cancelled => Err("the run was cancelled".into()),
            Ok(o) => Ok(o.message),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn notify(&self, notice: NotificationView) -> bool {
        self.user.clients.push(&notice)
    }
}

/// Starts `user`'s scheduler, if it has one, until the gateway shuts down.
pub(crate) fn start(user: &Arc<UserAgent>, shared: &crate::shared::Shared) {
    let Some(scheduler) = &user.scheduler else {
        return;
    };
    let host = Arc::new(GatewayRuns {
        user: Arc::clone(user),
        log_capacity: shared.config.session_log,
        channel: shared.config.turn_channel,
    });
    tokio::spawn(Arc::clone(scheduler).run(host, shared.shutdown.clone()));
}
