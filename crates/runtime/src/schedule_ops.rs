//! The user's own control of their schedules from a client (the gateway's `list_schedules` and
//! `change_schedule`, the TUI's `/schedules`): each runs the schedule tool of the same operation
//! through the registry, so it is governed (permission, rate limit, audit) as the caller's
//! surface, and the user is the caller's context's.

use serde_json::{Value, json};
use tools::{SCHEDULE_CANCEL_TOOL_NAME, SCHEDULE_LIST_TOOL_NAME, SCHEDULE_PAUSE_TOOL_NAME};
use types::{ScheduleAction, ScheduleView, ToolExecutionContext};

use crate::RuntimeError;
use crate::runtime::AgentRuntime;

impl AgentRuntime {
    /// The caller's active and paused schedules, and the time zone their times are in.
    pub async fn list_schedules(
        &self,
        ctx: &ToolExecutionContext,
    ) -> Result<(Vec<ScheduleView>, String), RuntimeError> {
        let out = self
            .schedule_tool(ctx, SCHEDULE_LIST_TOOL_NAME, json!({}))
            .await?;
        let schedules = serde_json::from_value(out["schedules"].clone())
            .map_err(|_| RuntimeError::ScheduleRefused("the schedules could not be read".into()))?;
        let timezone = out["timezone"].as_str().unwrap_or("UTC").to_owned();
        Ok((schedules, timezone))
    }

    /// Cancels, pauses or resumes the caller's schedule `id`.
    pub async fn change_schedule(
        &self,
        ctx: &ToolExecutionContext,
        id: &str,
        action: ScheduleAction,
    ) -> Result<(), RuntimeError> {
        let (tool, args) = match action {
            ScheduleAction::Cancel => (SCHEDULE_CANCEL_TOOL_NAME, json!({"id": id})),
            ScheduleAction::Pause => (SCHEDULE_PAUSE_TOOL_NAME, json!({"id": id})),
            ScheduleAction::Resume => (SCHEDULE_PAUSE_TOOL_NAME, json!({"id": id, "resume": true})),
        };
        self.schedule_tool(ctx, tool, args).await.map(drop)
    }

    async fn schedule_tool(
        &self,
        ctx: &ToolExecutionContext,
        tool: &str,
        args: Value,
    ) -> Result<Value, RuntimeError> {
        if self.tools.get(tool).is_none() {
            return Err(RuntimeError::ScheduleRefused(
                "schedules are not enabled for this agent ([schedules] enabled, [memory] enabled)"
                    .into(),
            ));
        }
        let out = self.tools.execute(tool, &args.to_string(), ctx).await;
        let value: Value = serde_json::from_str(&out.output).unwrap_or(Value::Null);
        if !out.ok {
            // The tool's own words (a governed refusal is an object with a message).
            let message = value["error"]["message"]
                .as_str()
                .map_or(out.output.clone(), str::to_owned);
            return Err(RuntimeError::ScheduleRefused(message));
        }
        Ok(value)
    }
}
