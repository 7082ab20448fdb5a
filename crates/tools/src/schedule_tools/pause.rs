//! `schedule_pause {id, resume?}`: a paused schedule is kept but does not run until resumed; a
//! resumed recurrence runs next at its next time from now, a resumed one-off whose time passed
//! runs at once.

use std::time::Duration;

use async_trait::async_trait;
use memory::ScheduleChange;
use types::{Operation, SafetyTier, ToolExecutionContext};

use super::{
    SCHEDULE_PAUSE_TOOL_NAME, Schedules, access, id_arg, id_schema, next_run, schedule_error,
    schedule_json,
};
use crate::{MemoryAccess, OutputFormat, Tool, ToolError};

#[derive(Debug, Clone)]
pub struct SchedulePause {
    schedules: Schedules,
}

impl SchedulePause {
    pub fn new(schedules: Schedules) -> Self {
        Self { schedules }
    }
}

#[async_trait]
impl Tool for SchedulePause {
    fn name(&self) -> &str {
        SCHEDULE_PAUSE_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Pause one of the user's schedules (it is kept but does not run), or resume a paused one \
         with resume: true. Find its id with schedule_list first."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "id": id_schema("pause or resume"),
                "resume": {"type": "boolean", "description": "true to resume a paused schedule (default: pause)."}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }

    fn output_format(&self) -> OutputFormat {
        OutputFormat::Json
    }

    fn memory_access(&self, args: &serde_json::Value) -> Option<MemoryAccess> {
        Some(access(Operation::Write, args))
    }

    async fn execute(
        &self,
        args: &serde_json::Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        let s = &self.schedules;
        let id = id_arg(args)?;
        let resume = args.get("resume").and_then(serde_json::Value::as_bool) == Some(true);
        let (change, resume_at) = match resume {
            false => (ScheduleChange::Pause, None),
            true => {
                let now = s.now();
                let current = s
                    .store
                    .schedules()
                    .list(&ctx.user_id)
                    .await
                    .map_err(schedule_error)?;
                let next = current.iter().find(|x| x.id == id).and_then(|x| {
                    let recurrence = x.recurrence.as_deref()?;
                    next_run(recurrence, &x.timezone, now)
                });
                (ScheduleChange::Resume, next)
            }
        };
        let done = s
            .store
            .schedules()
            .change(&ctx.user_id, id, change, resume_at, ctx.audit.clone())
            .await
            .map_err(schedule_error)?;
        s.wake.notify_one();
        let key = match resume {
            true => "resumed",
            false => "paused",
        };
        Ok(serde_json::json!({key: schedule_json(&done, s.timezone)}).to_string())
    }
}
