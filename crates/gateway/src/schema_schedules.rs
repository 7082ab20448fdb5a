//! Example schedule and notification frames for the protocol schema (see `schema`).

use types::{ClientFrame, NotificationView, ScheduleAction, ScheduleView, ServerFrame};

use crate::schema::both;

const ID: &str = "sch-5c1e8d4a4b6f9c2d1a2b3c4d5e6f7a8b";

fn schedule(full: bool) -> ScheduleView {
    ScheduleView {
        id: ID.into(),
        title: "Summary of yesterday".into(),
        instruction: "Summarise what I saved yesterday.".into(),
        when: "every day at 09:00".into(),
        recurrence: full.then(|| "0 9 * * *".to_owned()),
        timezone: "Europe/Paris".into(),
        next_run: full.then(|| "2026-11-29T09:00:00+01:00".to_owned()),
        state: "active".into(),
        attempts: 0,
        last_run: full.then(|| "2026-11-28T09:00:04+01:00".to_owned()),
        last_outcome: full.then(|| "ok".to_owned()),
    }
}

pub(crate) fn client_examples() -> Vec<(ClientFrame, ClientFrame)> {
    vec![
        both(ClientFrame::ListSchedules),
        both(ClientFrame::ChangeSchedule {
            schedule_id: ID.into(),
            action: ScheduleAction::Pause,
        }),
    ]
}

pub(crate) fn server_examples() -> Vec<(ServerFrame, ServerFrame)> {
    let notification = NotificationView {
        id: 42,
        schedule_id: ID.into(),
        session_id: format!("schedule-{ID}"),
        title: "Stretch".into(),
        text: "Time to stretch: stand up and roll your shoulders.".into(),
        status: "ok".into(),
        late: false,
        due_at: "2026-11-28T09:02:00+01:00".into(),
        at: "2026-11-28T09:02:03+01:00".into(),
        unread: true,
    };
    vec![
        (
            ServerFrame::Schedules {
                schedules: vec![schedule(true)],
                timezone: "Europe/Paris".into(),
            },
            ServerFrame::Schedules {
                schedules: vec![schedule(false)],
                timezone: "Europe/Paris".into(),
            },
        ),
        both(ServerFrame::Notification { notification }),
    ]
}
