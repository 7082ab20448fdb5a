//! The input box: the editor's text wrapped to the screen with a `› ` prompt, and where the
//! cursor goes; or the approval question while one is waiting.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use crate::model::tool_line::clip;
use crate::model::{App, ApprovalChoice, ConnState, PendingApproval};

/// At most this many input rows are shown; the view follows the cursor.
pub const MAX_ROWS: usize = 8;
const PROMPT: &str = "› ";

/// The input's screen rows, and the cursor as (row, column) within them.
#[derive(Debug, Clone, PartialEq)]
pub struct InputView {
    pub rows: Vec<Line<'static>>,
    pub cursor: Option<(usize, usize)>,
}

/// Lays the input out at `width` columns.
pub fn layout(app: &App, width: usize) -> InputView {
    if let Some(approval) = &app.approval {
        return approval_prompt(approval, width);
    }
    let text_width = width.saturating_sub(PROMPT.chars().count()).max(1);
    let (cur_row, cur_col) = app.editor.cursor();
    let mut rows: Vec<String> = Vec::new();
    let mut cursor = (0, 0);
    for (r, line) in app.editor.lines().iter().enumerate() {
        let mut row = String::new();
        let mut used = 0;
        for (c_index, c) in line.chars().enumerate() {
            if r == cur_row && c_index == cur_col {
                cursor = (rows.len(), used);
            }
            let w = c.width().unwrap_or(0);
            if used + w > text_width && used > 0 {
                rows.push(std::mem::take(&mut row));
                used = 0;
                if r == cur_row && c_index == cur_col {
                    cursor = (rows.len(), 0);
                }
            }
            row.push(c);
            used += w;
        }
        if r == cur_row && cur_col >= line.chars().count() {
            if used >= text_width {
                rows.push(std::mem::take(&mut row));
                used = 0;
            }
            cursor = (rows.len(), used);
        }
        rows.push(row);
    }
    let placeholder = app.editor.is_empty();
    let first = rows.len().saturating_sub(MAX_ROWS).min(cursor.0);
    let shown: Vec<Line<'static>> = rows
        .iter()
        .enumerate()
        .skip(first)
        .take(MAX_ROWS)
        .map(|(i, text)| {
            let prompt = if i == 0 { PROMPT } else { "  " };
            let mut spans = vec![Span::styled(
                prompt,
                Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD),
            )];
            if placeholder {
                spans.push(Span::styled(
                    placeholder_text(app),
                    Style::new().add_modifier(Modifier::DIM),
                ));
            } else {
                spans.push(Span::raw(text.clone()));
            }
            Line::from(spans)
        })
        .collect();
    InputView {
        rows: shown,
        cursor: Some((cursor.0 - first, cursor.1 + PROMPT.chars().count())),
    }
}

fn placeholder_text(app: &App) -> &'static str {
    match app.conn {
        ConnState::Online if app.turn.is_active() => "Esc stops the reply",
        ConnState::Online => "Message your agent",
        ConnState::Failed { .. } => "Not connected: check the token and user, then restart",
        _ => "Waiting for the connection…",
    }
}

/// The focused approval prompt: what wants to run, the three answers, how to choose.
fn approval_prompt(approval: &PendingApproval, width: usize) -> InputView {
    let ask = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
    let mut rows = vec![Line::from(Span::styled(
        format!(
            "? Allow {} {}?",
            types::terminal::escape_line(&approval.name),
            clip(
                &types::terminal::escape_line(&approval.arguments),
                width.saturating_sub(16).max(8)
            )
        ),
        ask,
    ))];
    // Why this call is asked about (a memory delete after untrusted input): wrapped, at most
    // three rows, escaped like every other text the TUI draws.
    if let Some(reason) = &approval.reason {
        let line = crate::markdown::MdLine::prose(
            vec![Span::styled(
                format!("  {reason}"),
                Style::new().fg(Color::Yellow),
            )],
            2,
        );
        rows.extend(crate::view::wrap::wrap(&line, width).into_iter().take(3));
    }
    for (i, choice) in ApprovalChoice::ALL.into_iter().enumerate() {
        let label = match choice {
            ApprovalChoice::Once => "Allow once (y)".to_owned(),
            ApprovalChoice::Session => format!(
                "Allow {} for this session (a)",
                types::terminal::escape_line(&approval.name)
            ),
            ApprovalChoice::Deny => "Deny (n)".to_owned(),
        };
        let selected = approval.choice == Some(choice);
        let (mark, style) = if selected {
            (
                "› ",
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )
        } else {
            ("  ", Style::new())
        };
        rows.push(Line::from(Span::styled(
            format!("{mark}{}. {label}", i + 1),
            style,
        )));
    }
    let help = if approval.hint {
        Span::styled(
            "  Choose first: 1, 2 or 3 (or y, a, n), then Enter. Esc denies.",
            Style::new().fg(Color::LightRed),
        )
    } else {
        Span::styled(
            "  Up/Down or 1-3 choose · Enter confirms · Esc denies",
            Style::new().add_modifier(Modifier::DIM),
        )
    };
    rows.push(Line::from(help));
    InputView { rows, cursor: None }
}
