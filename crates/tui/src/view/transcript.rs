//! The transcript as screen lines: user messages, Markdown replies, compact tool lines (with
//! details when shown), approvals and notices; the message `/search open` went to is marked.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::wrap;
use crate::markdown::{self, MdLine, Wrap};
use crate::model::tool_line::{clip, describe, pretty_arguments};
use crate::model::{App, ApprovalChoice, Entry, Level, ToolState};

const DIM: Style = Style::new().add_modifier(Modifier::DIM);
const USER: Style = Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD);
const ERROR: Style = Style::new().fg(Color::Red);
const OK: Style = Style::new().fg(Color::Green);
const ASK: Style = Style::new().fg(Color::Yellow);
const FOUND: Style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);

/// The last lines of the transcript at `width` columns: at least `need` of them when there are
/// that many, laid out from the newest entry back. `complete` is false when older entries were
/// left out.
pub fn tail_lines(app: &App, width: usize, need: usize) -> (Vec<Line<'static>>, bool) {
    let mut blocks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut count = 0;
    for i in (0..app.entries.len()).rev() {
        if count >= need {
            return (blocks.into_iter().rev().flatten().collect(), false);
        }
        let block = entry_block(app, i, width);
        count += block.len();
        blocks.push(block);
    }
    (blocks.into_iter().rev().flatten().collect(), true)
}

/// How many lines the transcript has from entry `index` (its first own line, past the blank
/// line that separates it) to the end, at `width` columns.
pub fn lines_from(app: &App, width: usize, index: usize) -> usize {
    let total: usize = (index..app.entries.len())
        .map(|i| entry_block(app, i, width).len())
        .sum();
    total.saturating_sub(usize::from(separated(app, index)))
}

/// Entry `i` as lines: a blank line before it (not between two tool lines), the mark of the
/// search hit `/search open` went to, then the entry.
fn entry_block(app: &App, i: usize, width: usize) -> Vec<Line<'static>> {
    let mut block = Vec::new();
    if separated(app, i) {
        block.push(Line::default());
    }
    if app.found_entry == Some(i) {
        block.push(Line::from(Span::styled(
            "▶ found by /search".to_owned(),
            FOUND,
        )));
    }
    if let Some(entry) = app.entries.get(i) {
        for md in entry_lines(entry, app.show_details) {
            block.extend(wrap(&md, width));
        }
    }
    block
}

fn separated(app: &App, i: usize) -> bool {
    match (
        i.checked_sub(1).and_then(|p| app.entries.get(p)),
        app.entries.get(i),
    ) {
        (Some(prev), Some(entry)) => !(is_tool(prev) && is_tool(entry)),
        _ => false,
    }
}

fn is_tool(entry: &Entry) -> bool {
    matches!(entry, Entry::Tool { .. } | Entry::Approval { .. })
}

fn entry_lines(entry: &Entry, details: bool) -> Vec<MdLine> {
    match entry {
        Entry::User(text) => user_lines(text),
        Entry::Assistant {
            text, streaming, ..
        } => assistant_lines(text, *streaming),
        Entry::Tool {
            name,
            arguments,
            state,
            ..
        } => tool_lines(name, arguments, state, details),
        Entry::Approval {
            name,
            arguments,
            answer,
            ..
        } => approval_lines(name, arguments, *answer, details),
        Entry::Notice { level, text } => notice_lines(*level, text),
    }
}

fn user_lines(text: &str) -> Vec<MdLine> {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| {
            let mark = if i == 0 { "› " } else { "  " };
            MdLine::prose(
                vec![
                    Span::styled(mark, USER),
                    Span::styled(line.to_owned(), Style::new().add_modifier(Modifier::BOLD)),
                ],
                2,
            )
        })
        .collect()
}

/// The reply as Markdown; a cursor mark while it still streams.
fn assistant_lines(text: &str, streaming: bool) -> Vec<MdLine> {
    let mut lines = markdown::render(text.trim_end_matches('\n'), Style::new());
    if streaming {
        match lines.last_mut() {
            Some(last) => last.line.spans.push(Span::styled("▍", DIM)),
            None => lines.push(MdLine::prose(vec![Span::styled("▍", DIM)], 0)),
        }
    }
    lines
}

/// A privileged call and its answer; its arguments in full while unanswered (or with details).
fn approval_lines(
    name: &str,
    arguments: &str,
    answer: Option<ApprovalChoice>,
    details: bool,
) -> Vec<MdLine> {
    let (mark, style, tail) = match answer {
        None => ("? ", ASK, "  (answer below)".to_owned()),
        Some(ApprovalChoice::Once) => ("✓ ", OK, "  allowed once".to_owned()),
        Some(ApprovalChoice::Session) => ("✓ ", OK, "  allowed for this session".to_owned()),
        Some(ApprovalChoice::Deny) => ("✗ ", ERROR, "  denied".to_owned()),
    };
    let mut lines = vec![MdLine::prose(
        vec![
            Span::styled(format!("  {mark}"), style),
            Span::styled(
                format!("{name} wants to run {}", clip(arguments, 60)),
                style,
            ),
            Span::styled(tail, style.add_modifier(Modifier::BOLD)),
        ],
        4,
    )];
    if details || answer.is_none() {
        lines.extend(detail_lines(&pretty_arguments(arguments)));
    }
    lines
}

fn notice_lines(level: Level, text: &str) -> Vec<MdLine> {
    let (mark, style) = match level {
        Level::Info => ("· ", DIM),
        Level::Error => ("! ", ERROR),
    };
    text.split('\n')
        .enumerate()
        .map(|(i, line)| {
            let mark = if i == 0 { mark } else { "  " };
            MdLine {
                line: Line::from(vec![
                    Span::styled(mark, style),
                    Span::styled(line.to_owned(), style),
                ]),
                hang: 2,
                wrap: Wrap::Words,
            }
        })
        .collect()
}

fn tool_lines(name: &str, arguments: &str, state: &ToolState, details: bool) -> Vec<MdLine> {
    let (mark, style) = match state {
        ToolState::Running => ("⋯ ", DIM),
        ToolState::Finished { ok: true, .. } => ("✓ ", OK),
        ToolState::Finished { ok: false, .. } => ("✗ ", ERROR),
    };
    let text_style = match state {
        ToolState::Finished { ok: false, .. } => ERROR,
        _ => DIM,
    };
    let mut spans = vec![
        Span::styled(format!("  {mark}"), style),
        Span::styled(describe(name, arguments, state), text_style),
    ];
    if let ToolState::Finished {
        duration_ms: Some(ms),
        ..
    } = state
        && details
    {
        spans.push(Span::styled(format!("  {ms} ms"), DIM));
    }
    let mut lines = vec![MdLine::prose(spans, 4)];
    if details {
        lines.push(detail(&format!("{name} arguments:")));
        lines.extend(detail_lines(&pretty_arguments(arguments)));
        if let ToolState::Finished { summary, .. } = state {
            lines.push(detail("result:"));
            lines.extend(detail_lines(summary));
        }
    }
    lines
}

fn detail(text: &str) -> MdLine {
    MdLine::prose(vec![Span::styled(format!("    {text}"), DIM)], 4)
}

fn detail_lines(text: &str) -> Vec<MdLine> {
    text.split('\n')
        .map(|line| MdLine {
            line: Line::from(vec![
                Span::styled("    │ ", DIM),
                Span::styled(line.to_owned(), markdown::CODE),
            ]),
            hang: 6,
            wrap: Wrap::Chars,
        })
        .collect()
}
