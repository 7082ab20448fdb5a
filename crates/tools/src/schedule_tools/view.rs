//! A schedule as the tools (and every other surface) show it: a [`ScheduleView`], its times in
//! the user's time zone.

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use memory::Schedule;
use types::ScheduleView;

fn local(t: Option<DateTime<Utc>>, tz: Tz) -> Option<String> {
    t.map(|t| {
        t.with_timezone(&tz)
            .to_rfc3339_opts(SecondsFormat::Secs, true)
    })
}

/// `s` as clients see it, times in `tz`.
pub fn schedule_view(s: &Schedule, tz: Tz) -> ScheduleView {
    ScheduleView {
        id: s.id.clone(),
        title: s.title.clone(),
        instruction: s.instruction.clone(),
        when: s.when_text.clone(),
        recurrence: s.recurrence.clone(),
        timezone: s.timezone.clone(),
        next_run: local(s.next_run, tz),
        state: s.state.as_str().to_owned(),
        attempts: s.attempts,
        last_run: local(s.last_run, tz),
        last_outcome: s.last_outcome.clone(),
    }
}

/// [`schedule_view`] as JSON.
pub fn schedule_json(s: &Schedule, tz: Tz) -> serde_json::Value {
    serde_json::to_value(schedule_view(s, tz)).unwrap_or_default()
}
