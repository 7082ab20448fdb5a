//! `schedule_list`: the user's active and paused schedules, next run first. A schedule made after
//! untrusted input is listed `"unconfirmed": true`, and a list showing one marks the model's
//! context as a read-back unconfirmed note does: its instruction is text the user never wrote.

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
)
// A list showing a schedule made after untrusted input marks the context as a note does.
.marks_untrusted(crate::memory_tools::shows_unconfirmed);

const DESCRIPTION: &str = "List the user's schedules (active and paused): id, title, instruction, when, next run \
     in the user's time zone, state; `unconfirmed` marks one made after reading untrusted \
     content, whose instruction the user never gave. Use it to find the id to cancel or pause.";

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
        let items: Vec<serde_json::Value> = all
            .iter()
            .map(|x| {
                let mut item = schedule_json(x, s.timezone);
                if super::schedule_untrusted(&x.provenance).is_some() {
                    item["unconfirmed"] = serde_json::json!(true);
                }
                item
            })
            .collect();
        Ok(serde_json::json!({"schedules": items, "timezone": s.timezone.name()}).to_string())
    })
}
