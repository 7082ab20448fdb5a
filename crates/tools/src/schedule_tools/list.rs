//! `schedule_list`: the user's active and paused schedules, next run first.

use types::Operation;

use super::{SCHEDULE_LIST_TOOL_NAME, Schedules, access, schedule_error, schedule_json};
use crate::MemoryAccess;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};
use serde_json::Value;

pub(crate) static SPEC: ToolSpec<Schedules> = ToolSpec::new(
    SCHEDULE_LIST_TOOL_NAME,
    DESCRIPTION,
    list_parameters,
    list_access,
    list,
);

const DESCRIPTION: &str = "List the user's schedules (active and paused): id, title, instruction, when, next run \
     in the user's time zone, state. Use it to find the id to cancel or pause.";

fn list_parameters() -> Value {
    serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn list_access(args: &Value) -> MemoryAccess {
    access(Operation::Read, args)
}

fn list(call: Call<'_, Schedules>) -> OpFuture<'_> {
    let (state, ctx) = (call.state, call.ctx);
    boxed(async move {
        let s = state;
        let all = s
            .store
            .schedules()
            .list(&ctx.user_id)
            .await
            .map_err(schedule_error)?;
        let items: Vec<serde_json::Value> =
            all.iter().map(|x| schedule_json(x, s.timezone)).collect();
        Ok(serde_json::json!({"schedules": items, "timezone": s.timezone.name()}).to_string())
    })
}
