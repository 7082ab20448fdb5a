//! A conversation written out for the user: Markdown to read, JSON Lines to process. Pure
//! functions over the stored messages ([`HistoryEvent`]s, oldest first), shared by every surface
//! that exports a conversation (the TUI's `/export`, the runner's CLI).

use crate::{HistoryEvent, Role};

/// The formats a conversation is exported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Markdown: a heading per message, tool calls and results as quoted lines.
    Markdown,
    /// JSON Lines: one stored message per line, `{"number", "created_at", "message"}`.
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

/// What is known of the conversation besides its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportHeader<'a> {
    pub session_id: &'a str,
    pub title: Option<&'a str>,
}

/// `events` (oldest first) in `format`.
pub fn export_conversation(
    format: ExportFormat,
    header: ExportHeader<'_>,
    events: &[HistoryEvent],
) -> String {
    match format {
        ExportFormat::Markdown => to_markdown(header, events),
        ExportFormat::JsonLines => to_jsonl(events),
    }
}

/// One JSON object per stored message, in order; ends with a newline (empty for no message).
pub fn to_jsonl(events: &[HistoryEvent]) -> String {
    let mut out = String::new();
    for event in events {
        let line = serde_json::json!({
            "number": event.number,
            "created_at": event.created_at,
            "message": event.message,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// The conversation as Markdown: its title, then each message under a `## You` / `## Agent`
/// heading with its time; tool calls and their results as quoted lines under the reply that made
/// them. Text is kept as written (it is the user's and the model's Markdown already).
pub fn to_markdown(header: ExportHeader<'_>, events: &[HistoryEvent]) -> String {
    let title = header.title.unwrap_or("Untitled session");
    let mut out = format!("# {}\n\nSession `{}`\n", one_line(title), header.session_id);
    for event in events {
        let message = &event.message;
        let text = message.content.as_deref().unwrap_or("").trim();
        match message.role {
            Role::System => continue,
            Role::User => section(&mut out, "You", &event.created_at, text),
            Role::Assistant => {
                if !text.is_empty() || message.tool_calls.is_empty() {
                    section(&mut out, "Agent", &event.created_at, text);
                }
                for call in &message.tool_calls {
                    out.push_str(&format!(
                        "\n> tool `{}` {}\n",
                        call.name,
                        quoted(&call.arguments)
                    ));
                }
            }
            Role::Tool => out.push_str(&format!("\n> result: {}\n", quoted(text))),
        }
    }
    out
}

fn section(out: &mut String, who: &str, at: &str, text: &str) {
    out.push_str(&format!("\n## {who} · {at}\n\n{text}\n"));
}

/// A title on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text inside a quote block: each further line quoted too.
fn quoted(text: &str) -> String {
    text.trim().replace('\n', "\n> ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, ToolCall};

    fn event(number: u64, message: Message) -> HistoryEvent {
        HistoryEvent {
            number,
            message,
            created_at: format!("2025-01-01T09:0{number}:00.000Z"),
        }
    }

    fn conversation() -> Vec<HistoryEvent> {
        let mut call = Message::assistant("");
        call.tool_calls = vec![ToolCall {
            id: "call_1".into(),
            name: "memory_save".into(),
            arguments: r#"{"content":"Loves trams"}"#.into(),
        }];
        vec![
            event(1, Message::system("You are helpful.")),
            event(2, Message::user("I love the trams\nin Lisbon")),
            event(3, call),
            event(4, Message::tool_result("call_1", "Saved.\nnote-1")),
            event(5, Message::assistant("Noted!")),
        ]
    }

    #[test]
    fn markdown_has_each_message_in_order() {
        let md = to_markdown(
            ExportHeader {
                session_id: "s-1",
                title: Some("Trip\nplanning"),
            },
            &conversation(),
        );
        assert_eq!(
            md,
            "# Trip planning\n\nSession `s-1`\n\
             \n## You · 2025-01-01T09:02:00.000Z\n\nI love the trams\nin Lisbon\n\
             \n> tool `memory_save` {\"content\":\"Loves trams\"}\n\
             \n> result: Saved.\n> note-1\n\
             \n## Agent · 2025-01-01T09:05:00.000Z\n\nNoted!\n"
        );
    }

    #[test]
    fn jsonl_is_one_parseable_message_per_line() {
        let events = conversation();
        let jsonl = to_jsonl(&events);
        let lines: Vec<&str> = jsonl.lines().collect();
        assert_eq!(lines.len(), events.len());
        for (line, event) in lines.iter().zip(&events) {
            let value: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
            assert_eq!(value["number"], event.number);
            let message: Message = serde_json::from_value(value["message"].clone())
                .unwrap_or_else(|_| Message::user(""));
            assert_eq!(message, event.message);
        }
        assert_eq!(to_jsonl(&[]), "");
    }

    #[test]
    fn formats_by_name() {
        assert_eq!(ExportFormat::parse("MD"), Some(ExportFormat::Markdown));
        assert_eq!(ExportFormat::parse("jsonl"), Some(ExportFormat::JsonLines));
        assert_eq!(ExportFormat::parse("pdf"), None);
    }
}
