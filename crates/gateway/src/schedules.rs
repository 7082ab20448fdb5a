//! The user's schedules from a client: `list_schedules` and `change_schedule` (cancel, pause,
//! resume), both answered with `schedules` (the list as it now is). Each runs through the
//! runtime's governed schedule operations as the gateway surface; the user is the
//! connection's.

use runtime::{AgentRuntime, RuntimeError};
use types::{ClientFrame, ErrorCode, ServerFrame, ToolExecutionContext};

use crate::conn::{Conn, Refusal};
use crate::turn::new_turn_id;

impl Conn {
    /// Answers `list_schedules` or `change_schedule`: (reference, result).
    pub(crate) async fn schedules(
        &self,
        frame: ClientFrame,
    ) -> (Option<String>, Result<Option<ServerFrame>, Refusal>) {
        let reference = Some("schedules".to_owned());
        let (session_id, turn_id) = match (&self.hub, new_turn_id()) {
            (Some(hub), Ok(turn)) => (hub.id().clone(), turn),
            _ => {
                let no_session = "no session for a schedule request".to_owned();
                return (reference, Err((ErrorCode::Internal, no_session)));
            }
        };
        let ctx = ToolExecutionContext {
            surface: types::CallSurface::new(types::Surface::Gateway),
            ..ToolExecutionContext::new(
                self.user.user_id.clone(),
                session_id,
                turn_id,
                self.user.workspace.clone(),
            )
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
