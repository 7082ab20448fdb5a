//! A conversation written out for people or programs: [`to_markdown`] (a readable transcript)
//! and [`to_jsonl`] (one JSON object per message). Pure functions of the stored messages, so
//! that every surface that has them (`runner sessions export`, the terminal client's `/export`)
//! writes the same file. System prompts are left out: they are the agent's instructions, not
//! the conversation.

use crate::{HistoryEvent, Role, SessionId};

/// The formats a conversation is exported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Markdown ([`to_markdown`]).
    Markdown,
    /// JSON Lines ([`to_jsonl`]).
    JsonLines,
}

impl ExportFormat {
    /// `md`/`markdown` or `jsonl`; anything else is `None`.
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(ExportFormat::Markdown),
            "jsonl" | "json-lines" => Some(ExportFormat::JsonLines),
            _ => None,
        }
    }

    /// The file extension, without its dot.
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Markdown => "md",
            ExportFormat::JsonLines => "jsonl",
        }
    }
}

/// `transcript` in `format`.
pub fn export_conversation(format: ExportFormat, transcript: &Transcript<'_>) -> String {
    match format {
        ExportFormat::Markdown => to_markdown(transcript),
        ExportFormat::JsonLines => to_jsonl(transcript),
    }
}

/// The conversation to write: its id, its title if it has one, and its messages, oldest first.
#[derive(Debug, Clone, Copy)]
pub struct Transcript<'a> {
    pub session_id: &'a SessionId,
    pub title: Option<&'a str>,
    pub events: &'a [HistoryEvent],
}

impl Transcript<'_> {
    fn shown(&self) -> impl Iterator<Item = &HistoryEvent> {
        self.events
            .iter()
            .filter(|e| e.message.role != Role::System)
    }
}

/// The conversation as Markdown: a heading with its title, then one section per message (who
/// said it and when); tool calls as their name and arguments, tool results in code blocks.
pub fn to_markdown(transcript: &Transcript<'_>) -> String {
    let title = transcript
        .title
        .filter(|t| !t.trim().is_empty())
        .unwrap_or("Conversation");
    let mut out = format!(
        "# {}\n\nSession `{}` · {} messages\n",
        one_line(title),
        transcript.session_id,
        transcript.shown().count()
    );
    for event in transcript.shown() {
        let message = &event.message;
        let who = match message.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::Tool => "Tool result",
            Role::System => "System",
        };
        out.push_str(&format!("\n## {who} · {}\n\n", event.created_at));
        let text = message.content.as_deref().unwrap_or("").trim_end();
        match message.role {
            Role::Tool => out.push_str(&fenced(text)),
            _ if !text.is_empty() => {
                out.push_str(text);
                out.push('\n');
            }
            _ => {}
        }
        for call in &message.tool_calls {
            if !out.ends_with("\n\n") {
                out.push('\n');
            }
            out.push_str(&format!(
                "Calls `{}` with:\n\n{}",
                one_line(&call.name),
                fenced(&call.arguments)
            ));
        }
    }
    out
}

/// The conversation as JSON Lines: per message (system prompts left out) one object with its
/// `number`, `created_at`, `role`, `content` and, when present, `tool_calls` and `tool_call_id`.
pub fn to_jsonl(transcript: &Transcript<'_>) -> String {
    let mut out = String::new();
    for event in transcript.shown() {
        let mut line = serde_json::json!({
            "session_id": transcript.session_id,
            "number": event.number,
            "created_at": event.created_at,
        });
        if let (Some(line), Ok(serde_json::Value::Object(message))) =
            (line.as_object_mut(), serde_json::to_value(&event.message))
        {
            line.extend(message);
        }
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// `text` in a code block whose fence is longer than any run of backticks inside it.
fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}text\n{text}\n{fence}\n")
}

/// A title on one line (a heading cannot span lines).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, ToolCall};

    fn event(number: u64, message: Message) -> HistoryEvent {
        HistoryEvent {
            number,
            message,
            created_at: format!("2026-11-28T09:0{number}:00Z"),
        }
    }

    fn conversation() -> Vec<HistoryEvent> {
        vec![
            event(1, Message::system("You are Oxydra.")),
            event(2, Message::user("What is in notes.md?")),
            event(
                3,
                Message::assistant_tool_calls(
                    None,
                    vec![ToolCall {
                        id: "call_1".into(),
                        name: "file_read".into(),
                        arguments: r#"{"path":"notes.md"}"#.into(),
                    }],
                ),
            ),
            event(
                4,
                Message::tool_result("call_1", "```rust\nfn main() {}\n```"),
            ),
            event(5, Message::assistant("It holds a Rust snippet.")),
        ]
    }

    #[test]
    fn markdown_reads_as_a_transcript() {
        let events = conversation();
        let id = SessionId::parse("s-1").unwrap();
        let md = to_markdown(&Transcript {
            session_id: &id,
            title: Some("Notes\nand code"),
            events: &events,
        });
        let expected = "# Notes and code\n\nSession `s-1` · 4 messages\n\
            \n## User · 2026-11-28T09:02:00Z\n\nWhat is in notes.md?\n\
            \n## Assistant · 2026-11-28T09:03:00Z\n\
            \nCalls `file_read` with:\n\n```text\n{\"path\":\"notes.md\"}\n```\n\
            \n## Tool result · 2026-11-28T09:04:00Z\n\n````text\n```rust\nfn main() {}\n```\n````\n\
            \n## Assistant · 2026-11-28T09:05:00Z\n\nIt holds a Rust snippet.\n";
        assert_eq!(md, expected);
    }

    #[test]
    fn jsonl_has_one_object_per_message_without_the_system_prompt() {
        let events = conversation();
        let id = SessionId::parse("s-1").unwrap();
        let text = to_jsonl(&Transcript {
            session_id: &id,
            title: None,
            events: &events,
        });
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[0],
            serde_json::json!({"session_id": "s-1", "number": 2, "role": "user",
                "created_at": "2026-11-28T09:02:00Z", "content": "What is in notes.md?"})
        );
        assert_eq!(lines[1]["tool_calls"][0]["name"], "file_read");
        assert_eq!(lines[2]["tool_call_id"], "call_1");
        let roles: Vec<&str> = lines.iter().map(|l| l["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    }
}
