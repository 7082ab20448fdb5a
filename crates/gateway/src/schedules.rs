//! The user's schedules from a client: `list_schedules` and `change_schedule` (cancel, pause,
//! resume), both answered with `schedules` (the list as it now is). Each runs through the
//! runtime's governed schedule operations as the gateway surface; the user is the
//! connection's.

use runtime::{AgentRuntime, RuntimeError};
use types::{ClientFrame, ErrorCode, ServerFrame, ToolExecutionContext};

use crate::conn::{Conn, Refusal};

impl Conn {
    /// Answers `list_schedules` or `change_schedule`: (reference, result).
    pub(crate) async fn schedules(
        &self,
        frame: ClientFrame,
    ) -> (Option<String>, Result<Option<ServerFrame>, Refusal>) {
        let reference = Some("schedules".to_owned());
        let ctx = match self.request_ctx("schedule") {
            Ok(ctx) => ctx,
            Err(refusal) => return (reference, Err(refusal)),
        };
        let result = answer(self.user.runtime(), &ctx, frame).await;
        (reference, result.map(Some))
    }
}

/// The answer to a schedule frame.
async fn answer(
    runtime: &AgentRuntime,
    ctx: &ToolExecutionContext,
    frame: ClientFrame,
) -> Result<ServerFrame, Refusal> {
    if let ClientFrame::ChangeSchedule {
        schedule_id,
        action,
    } = frame
    {
        runtime
            .change_schedule(ctx, &schedule_id, action)
            .await
            .map_err(refusal)?;
    }
    let (schedules, timezone) = runtime.list_schedules(ctx).await.map_err(refusal)?;
    Ok(ServerFrame::Schedules {
        schedules,
        timezone,
    })
}

fn refusal(e: RuntimeError) -> Refusal {
    match e {
        RuntimeError::ScheduleRefused(message) => (ErrorCode::InvalidRequest, message),
        e => {
            tracing::warn!(error = %e, "a schedule request failed");
            (
                ErrorCode::Internal,
                "could not reach your schedules; try again".to_owned(),
            )
        }
    }
}
