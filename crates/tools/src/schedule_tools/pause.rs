//! `schedule_pause {id, resume?}`: a paused schedule is kept but does not run until resumed; a
//! resumed recurrence runs next at its next time from now, a resumed one-off whose time passed
//! runs at once.

use memory::ScheduleChange;
use types::Operation;

use super::{
    SCHEDULE_PAUSE_TOOL_NAME, Schedules, access, id_arg, id_schema, next_run, schedule_error,
    schedule_json,
};
use crate::MemoryAccess;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};
use serde_json::Value;

pub(crate) static SPEC: ToolSpec<Schedules> = ToolSpec::new(
    SCHEDULE_PAUSE_TOOL_NAME,
    DESCRIPTION,
    pause_parameters,
    pause_access,
    pause,
)
.side_effecting();

const DESCRIPTION: &str = "Pause one of the user's schedules (it is kept but does not run), or resume a paused one \
     with resume: true. Find its id with schedule_list first.";

fn pause_parameters() -> Value {
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

fn pause_access(args: &Value) -> MemoryAccess {
    access(Operation::Write, args)
}

fn pause(call: Call<'_, Schedules>) -> OpFuture<'_> {
    let (state, args, ctx) = (call.state, call.args, call.ctx);
    boxed(async move {
        let s = state;
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
    })
}
