//! `schedule_cancel {id}`: the schedule never runs again (it leaves the list).

use std::time::Duration;

use async_trait::async_trait;
use memory::ScheduleChange;
use types::{Operation, SafetyTier, ToolExecutionContext};

use super::{
    SCHEDULE_CANCEL_TOOL_NAME, Schedules, access, id_arg, id_schema, schedule_error, schedule_json,
};
use crate::{MemoryAccess, OutputFormat, Tool, ToolError};

#[derive(Debug, Clone)]
pub struct ScheduleCancel {
    schedules: Schedules,
}

impl ScheduleCancel {
    pub fn new(schedules: Schedules) -> Self {
        Self { schedules }
    }
}

#[async_trait]
impl Tool for ScheduleCancel {
    fn name(&self) -> &str {
        SCHEDULE_CANCEL_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Cancel one of the user's schedules for good. Find its id with schedule_list first."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {"id": id_schema("cancel")},
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
        Some(access(Operation::Delete, args))
    }

    async fn execute(
        &self,
        args: &serde_json::Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        let s = &self.schedules;
        let id = id_arg(args)?;
        let done = s
            .store
            .schedules()
            .change(
                &ctx.user_id,
                id,
                ScheduleChange::Cancel,
                None,
                ctx.audit.clone(),
            )
            .await
            .map_err(schedule_error)?;
        s.wake.notify_one();
        Ok(serde_json::json!({"cancelled": schedule_json(&done, s.timezone)}).to_string())
    }
}
