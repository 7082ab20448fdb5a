//! The status bar: connection, session, model, what the turn is doing, the MCP servers that
//! are down. Every part is escaped (`types::terminal`): the running tool's name is whatever the
//! model called, and none of it reaches the terminal as a control sequence.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use types::terminal;

use crate::model::{App, ConnState, TurnState};

const BAR: Style = Style::new().bg(Color::DarkGray).fg(Color::White);

/// The status bar line; `scrolled` when the transcript is drawn scrolled up.
pub fn line(app: &App, width: usize, scrolled: bool) -> Line<'static> {
    let (dot, conn, conn_style) = match &app.conn {
        ConnState::Online => ("●", "connected".to_owned(), BAR.fg(Color::LightGreen)),
        ConnState::Connecting { attempt: 1 } => {
            ("○", "connecting…".to_owned(), BAR.fg(Color::Yellow))
        }
        ConnState::Connecting { attempt } => (
            "○",
            format!("connecting… (attempt {attempt})"),
            BAR.fg(Color::Yellow),
        ),
        ConnState::Offline { retry_in, .. } => (
            "○",
            format!("offline, retrying in {}s", retry_in.as_secs_f32().ceil()),
            BAR.fg(Color::Yellow),
        ),
        ConnState::Failed { .. } => ("✗", "not connected".to_owned(), BAR.fg(Color::LightRed)),
    };
    let mut parts = vec![format!("{dot} {conn}")];
    parts.push(session_label(app));
    if let Some(model) = &app.model {
        parts.push(model.clone());
    }
    parts.push(turn_label(app));
    let down = app.mcp_down();
    if !down.is_empty() {
        parts.push(format!("⚠ MCP down: {}", down.join(", ")));
    }
    let left = format!(" {}", terminal::escape_line(&parts.join("  │  ")));
    let right = if scrolled {
        "↑ scrolled · PageDown ".to_owned()
    } else if app.show_details {
        "details on · Ctrl+T ".to_owned()
    } else {
        "/help ".to_owned()
    };
    // The hint on the right goes first when space is short; then the left side is cut.
    let right = if left.chars().count() + right.chars().count() < width {
        right
    } else {
        String::new()
    };
    let left: String = left.chars().take(width).collect();
    let conn_len = (dot.chars().count() + 2 + conn.chars().count()).min(left.chars().count());
    let gap = width.saturating_sub(left.chars().count() + right.chars().count());
    let (head, rest): (String, String) = (
        left.chars().take(conn_len).collect(),
        left.chars().skip(conn_len).collect(),
    );
    Line::from(vec![
        Span::styled(head, conn_style),
        Span::styled(rest, BAR),
        Span::styled(" ".repeat(gap), BAR),
        Span::styled(right, BAR.add_modifier(Modifier::DIM)),
    ])
}

fn session_label(app: &App) -> String {
    match &app.session {
        None => "no session yet".into(),
        Some(s) => match s.title.as_deref().map(str::trim) {
            Some(t) if !t.is_empty() => {
                crate::model::tool_line::clip(&types::terminal::escape_line(t), 32)
            }
            _ => format!(
                "session {}",
                crate::model::tool_line::clip(s.session_id.as_str(), 12)
            ),
        },
    }
}

fn turn_label(app: &App) -> String {
    match &app.turn {
        TurnState::Idle => match crate::model::spend_status(app) {
            Some(spend) => format!("ready · {spend}"),
            None => "ready".into(),
        },
        TurnState::Sending => "sending…".into(),
        TurnState::Thinking => "thinking…".into(),
        TurnState::Retrying {
            attempt,
            max_attempts,
            reason,
        } => format!("retrying {attempt}/{max_attempts} ({reason})…"),
        TurnState::Writing => "writing…".into(),
        TurnState::Tool(name) => format!("running {name}…"),
        TurnState::Approval => "waiting for your answer".into(),
        TurnState::Cancelling => "stopping…".into(),
    }
}
