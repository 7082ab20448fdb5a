//! `schedule_cancel {id}`: the schedule never runs again (it leaves the list).

use memory::ScheduleChange;
use types::Operation;

use super::{
    SCHEDULE_CANCEL_TOOL_NAME, Schedules, access, id_arg, id_schema, schedule_error, schedule_json,
};
use crate::MemoryAccess;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};
use serde_json::Value;

pub(crate) static SPEC: ToolSpec<Schedules> = ToolSpec::new(
    SCHEDULE_CANCEL_TOOL_NAME,
    DESCRIPTION,
    cancel_parameters,
    cancel_access,
    cancel,
)
.side_effecting();

const DESCRIPTION: &str =
    "Cancel one of the user's schedules for good. Find its id with schedule_list first.";

fn cancel_parameters() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {"id": id_schema("cancel")},
        "required": ["id"],
        "additionalProperties": false
    })
}

fn cancel_access(args: &Value) -> MemoryAccess {
    access(Operation::Delete, args)
}

fn cancel(call: Call<'_, Schedules>) -> OpFuture<'_> {
    let (state, args, ctx) = (call.state, call.args, call.ctx);
    boxed(async move {
        let s = state;
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
    })
}
