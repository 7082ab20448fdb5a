//! What the transcript holds: the entries shown, oldest first, and how stored history becomes
//! entries.

use types::{HistoryEvent, Role, TurnId};

use super::approval::ApprovalChoice;
use super::tool_line::ToolState;

/// One thing shown in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A message the user sent.
    User(String),
    /// Assistant text; `streaming` while deltas may still arrive.
    Assistant {
        turn: Option<TurnId>,
        text: String,
        streaming: bool,
    },
    /// A tool call, compact unless details are shown.
    Tool {
        call_id: String,
        name: String,
        arguments: String,
        state: ToolState,
    },
    /// A call waiting for (or answered with) the user's approval.
    Approval {
        call_id: String,
        name: String,
        arguments: String,
        answer: Option<ApprovalChoice>,
    },
    /// A note from the client itself: information, or an error in plain words.
    Notice { level: Level, text: String },
}

/// How a notice is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Error,
}

impl Entry {
    pub fn info(text: impl Into<String>) -> Self {
        Entry::Notice {
            level: Level::Info,
            text: text.into(),
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Entry::Notice {
            level: Level::Error,
            text: text.into(),
        }
    }
}

/// Stored messages as entries: user and assistant text, and each tool call with the first line
/// of its result. System messages are not shown.
pub fn from_history(events: &[HistoryEvent]) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    for event in events {
        let message = &event.message;
        let text = message.content.as_deref().unwrap_or("").trim();
        match message.role {
            Role::System => {}
            Role::User => entries.push(Entry::User(text.to_owned())),
            Role::Assistant => {
                if !text.is_empty() {
                    entries.push(Entry::Assistant {
                        turn: None,
                        text: text.to_owned(),
                        streaming: false,
                    });
                }
                entries.extend(message.tool_calls.iter().map(|call| Entry::Tool {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    state: ToolState::Running,
                }));
            }
            Role::Tool => {
                let Some(id) = message.tool_call_id.as_deref() else {
                    continue;
                };
                let first = text.lines().next().unwrap_or("").to_owned();
                let found = entries.iter_mut().rev().find_map(|e| match e {
                    Entry::Tool { call_id, state, .. } if call_id == id => Some(state),
                    _ => None,
                });
                if let Some(state) = found {
                    *state = ToolState::Finished {
                        ok: !first.starts_with("error:"),
                        summary: first,
                        duration_ms: None,
                    };
                }
            }
        }
    }
    // A call whose result was never stored did not finish.
    for entry in &mut entries {
        if let Entry::Tool { state, .. } = entry
            && *state == ToolState::Running
        {
            *state = ToolState::Finished {
                ok: false,
                summary: "no result was stored".into(),
                duration_ms: None,
            };
        }
    }
    entries
}
