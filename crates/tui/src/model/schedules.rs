//! Schedules in the TUI: a scheduled run's `notification` is shown in the transcript whatever
//! session is open (marked when it ran late, failed, or arrived while the user was away), and
//! `/schedules` lists the user's schedules, `/schedules cancel|pause|resume <n>` changes one
//! (`n` from the last list).

use types::{ClientFrame, NotificationView, ScheduleAction, ScheduleView, ServerFrame};

use super::App;
use super::transcript::Entry;

/// What `/schedules` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedulesCommand {
    List,
    Change { action: ScheduleAction, n: usize },
}

/// Parses the argument of `/schedules`.
pub fn parse_schedules(arg: &str) -> Result<SchedulesCommand, String> {
    let usage = "use /schedules, or /schedules cancel|pause|resume <n> (n from the list)";
    let words: Vec<&str> = arg.split_whitespace().collect();
    let action = match words.first().copied() {
        None => return Ok(SchedulesCommand::List),
        Some("cancel") => ScheduleAction::Cancel,
        Some("pause") => ScheduleAction::Pause,
        Some("resume") => ScheduleAction::Resume,
        Some(_) => return Err(usage.to_owned()),
    };
    match words.get(1).and_then(|n| n.parse::<usize>().ok()) {
        Some(n) if n >= 1 && words.len() == 2 => Ok(SchedulesCommand::Change { action, n }),
        _ => Err(usage.to_owned()),
    }
}

/// The transcript line of a notification.
pub fn notification_line(n: &NotificationView) -> String {
    let mut marks = Vec::new();
    if n.status != "ok" {
        marks.push("failed");
    }
    if n.late {
        marks.push("late");
    }
    if n.unread {
        marks.push("while you were away");
    }
    let marks = match marks.is_empty() {
        true => String::new(),
        false => format!(" ({})", marks.join(", ")),
    };
    format!("⏰ {}{marks}: {}", n.title, n.text)
}

fn schedule_line(i: usize, s: &ScheduleView) -> String {
    let next = s.next_run.as_deref().unwrap_or("—");
    format!(
        "{}. {} — {} — next {next} [{}]",
        i + 1,
        s.title,
        s.when,
        s.state
    )
}

impl App {
    /// Shows a `notification` or `schedules` frame.
    pub(crate) fn on_schedule_frame(&mut self, frame: ServerFrame) -> Vec<ClientFrame> {
        match frame {
            ServerFrame::Notification { notification } => {
                let line = notification_line(&notification);
                match notification.status.as_str() {
                    "ok" => self.push(Entry::info(line)),
                    _ => self.push(Entry::error(line)),
                }
            }
            ServerFrame::Schedules {
                schedules,
                timezone,
            } => {
                let mut text = format!("Your schedules (times in {timezone}):");
                if schedules.is_empty() {
                    text = "You have no schedules. Ask the agent, e.g. \"remind me in 20 minutes \
                            to stretch\"."
                        .to_owned();
                }
                for (i, s) in schedules.iter().enumerate() {
                    text.push('\n');
                    text.push_str(&schedule_line(i, s));
                }
                self.schedule_ids = schedules.into_iter().map(|s| s.id).collect();
                self.push(Entry::info(text));
            }
            _ => {}
        }
        Vec::new()
    }

    /// The frame `/schedules …` sends.
    pub(crate) fn schedules_command(&mut self, command: SchedulesCommand) -> Vec<ClientFrame> {
        match command {
            SchedulesCommand::List => vec![ClientFrame::ListSchedules],
            SchedulesCommand::Change { action, n } => match self.schedule_ids.get(n - 1) {
                Some(id) => vec![ClientFrame::ChangeSchedule {
                    schedule_id: id.clone(),
                    action,
                }],
                None => {
                    self.push(Entry::error(format!(
                        "There is no schedule {n}: list them with /schedules first."
                    )));
                    Vec::new()
                }
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn schedules_arguments() {
        let check = |arg: &str, expected: Result<SchedulesCommand, ()>| {
            assert_eq!(parse_schedules(arg).map_err(drop), expected, "{arg}");
        };
        check("", Ok(SchedulesCommand::List));
        let change = |action, n| Ok(SchedulesCommand::Change { action, n });
        check("cancel 2", change(ScheduleAction::Cancel, 2));
        check("pause 1", change(ScheduleAction::Pause, 1));
        check("resume 3", change(ScheduleAction::Resume, 3));
        check("cancel", Err(()));
        check("cancel 0", Err(()));
        check("delete 1", Err(()));
    }

    #[test]
    fn a_notification_says_how_it_ran() {
        let mut n = NotificationView {
            id: 1,
            schedule_id: "sch-1".into(),
            session_id: "schedule-sch-1".into(),
            title: "Stretch".into(),
            text: "Time to stretch!".into(),
            status: "ok".into(),
            late: false,
            due_at: String::new(),
            at: String::new(),
            unread: false,
        };
        assert_eq!(notification_line(&n), "⏰ Stretch: Time to stretch!");
        n.late = true;
        n.unread = true;
        assert_eq!(
            notification_line(&n),
            "⏰ Stretch (late, while you were away): Time to stretch!"
        );
    }
}
