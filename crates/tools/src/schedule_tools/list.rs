//! `schedule_list`: the user's active and paused schedules, next run first.

use std::time::Duration;

use async_trait::async_trait;
use types::{Operation, SafetyTier, ToolExecutionContext};

use super::{SCHEDULE_LIST_TOOL_NAME, Schedules, access, schedule_error, schedule_json};
use crate::{MemoryAccess, OutputFormat, Tool, ToolError};

#[derive(Debug, Clone)]
pub struct ScheduleList {
    schedules: Schedules,
}

impl ScheduleList {
    pub fn new(schedules: Schedules) -> Self {
        Self { schedules }
    }
}

#[async_trait]
impl Tool for ScheduleList {
    fn name(&self) -> &str {
        SCHEDULE_LIST_TOOL_NAME
    }

    fn description(&self) -> &str {
        "List the user's schedules (active and paused): id, title, instruction, when, next run \
         in the user's time zone, state. Use it to find the id to cancel or pause."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }

    fn output_format(&self) -> OutputFormat {
        OutputFormat::Json
    }

    fn memory_access(&self, args: &serde_json::Value) -> Option<MemoryAccess> {
        Some(access(Operation::Read, args))
    }

    async fn execute(
        &self,
        _args: &serde_json::Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        let s = &self.schedules;
        let all = s
            .store
            .schedules()
            .list(&ctx.user_id)
            .await
            .map_err(schedule_error)?;
        let items: Vec<serde_json::Value> =
            all.iter().map(|x| schedule_json(x, s.timezone)).collect();
        Ok(serde_json::json!({"schedules": items, "timezone": s.timezone.name()}).to_string())
    }
}
