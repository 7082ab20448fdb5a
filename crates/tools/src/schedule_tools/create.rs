//! `schedule_create {when, instruction, title?}`: the agent will run `instruction` as a turn of
//! its own at `when` (once, or on a recurrence), and notify the user of the result.

use memory::{MAX_WHEN_CHARS, NewSchedule, Origin};
use types::Operation;

use super::{
    SCHEDULE_CREATE_TOOL_NAME, Schedules, access, parse_when, schedule_error, schedule_json,
};
use crate::memory_tools::provenance;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};
use crate::{MemoryAccess, ToolError};
use serde_json::Value;

/// A title from the instruction's first words.
fn title_of(instruction: &str) -> String {
    let words: Vec<&str> = instruction.split_whitespace().take(8).collect();
    let title = words.join(" ");
    match title.chars().count() > 60 {
        true => title.chars().take(60).collect::<String>() + "…",
        false => title,
    }
}

pub(crate) static SPEC: ToolSpec<Schedules> = ToolSpec::new(
    SCHEDULE_CREATE_TOOL_NAME,
    DESCRIPTION,
    create_parameters,
    create_access,
    create,
)
.side_effecting();

const DESCRIPTION: &str = "Schedule something for later: at `when` the agent runs `instruction` as a turn of its \
     own and notifies the user of the result (a reminder, a recurring summary, a check). \
     `when` is an RFC 3339 time, a local time like 2026-12-04 09:00, a delay like `in 20 \
     minutes`, or a recurrence: `every day at 09:00`, `every weekday at 7:30`, `every monday \
     at 8:00`, `every 30 minutes`, or a cron expression like `0 9 * * 1-5`; local times are \
     in the user's time zone. Write the instruction as what to do then (\"Remind the user to \
     stretch.\"), not as the user's request.";

fn create_parameters() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "when": {"type": "string", "maxLength": MAX_WHEN_CHARS, "description": "When to run: RFC 3339 time, `in 20 minutes`, `every day at 09:00`, or a cron expression."},
            "instruction": {"type": "string", "description": "What the agent should do when it runs."},
            "title": {"type": "string", "description": "A short name for the schedule (optional)."}
        },
        "required": ["when", "instruction"],
        "additionalProperties": false
    })
}

fn create_access(args: &Value) -> MemoryAccess {
    access(Operation::Write, args)
}

fn create(call: Call<'_, Schedules>) -> OpFuture<'_> {
    let (state, args, ctx) = (call.state, call.args, call.ctx);
    boxed(async move {
        let text = |name: &str| args.get(name).and_then(serde_json::Value::as_str);
        let when_text = text("when").unwrap_or_default().trim();
        let instruction = text("instruction").unwrap_or_default().trim();
        if when_text.is_empty() {
            return Err(ToolError::invalid(
                "when",
                "a time, a delay or a recurrence",
            ));
        }
        let s = state;
        let min_interval = chrono::Duration::seconds(
            i64::try_from(s.config.min_interval_secs).unwrap_or(i64::MAX / 2_000),
        );
        // The problem is a sentence of its own (`… is in the past: give a time in the
        // future …`), not the `expected` half of "`when` must be …".
        let when = parse_when(when_text, s.now(), s.timezone, min_interval)
            .map_err(|problem| ToolError::execution(format!("Nothing was scheduled: {problem}")))?;
        let title = match text("title").map(str::trim).filter(|t| !t.is_empty()) {
            Some(title) => title.to_owned(),
            None => title_of(instruction),
        };
        let new = NewSchedule {
            title,
            instruction: instruction.to_owned(),
            when_text: when_text.to_owned(),
            recurrence: when.recurrence,
            timezone: s.timezone.name().to_owned(),
            first_run: when.first_run,
            provenance: provenance(ctx, Origin::User),
        };
        let created = s
            .store
            .schedules()
            .create(&ctx.user_id, new, s.config.max_active, ctx.audit.clone())
            .await
            .map_err(schedule_error)?;
        s.wake.notify_one();
        Ok(serde_json::json!({
            "created": schedule_json(&created, s.timezone),
            "message": "Scheduled. The user will be notified of each run's result.",
        })
        .to_string())
    })
}
