//! Rendering the model with ratatui: transcript, status bar, input. Pure functions of
//! [`App`](crate::model::App); the layout facts the model needs (page height, how far the
//! transcript can scroll) come back in [`Drawn`].
//!
//! - `transcript` — entries as lines
//! - `wrap` — breaking styled lines to the width
//! - `status` — the status bar
//! - `input` — the input box and its cursor

mod input;
mod status;
mod transcript;
mod wrap;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position};
use ratatui::text::Text;
use ratatui::widgets::Paragraph;

use crate::model::App;

/// What a draw learned about the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drawn {
    /// Rows of the transcript area.
    pub page: usize,
    /// How many lines the transcript can scroll up.
    pub max_scroll: usize,
    /// How far it was scrolled up: the model's scroll, or, when it asked to reveal the search
    /// hit it went to, as far as puts that hit's first line at the top.
    pub scroll: usize,
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, app: &App) -> Drawn {
    let area = frame.area();
    let width = usize::from(area.width);
    let input = input::layout(app, width);
    let input_rows = u16::try_from(input.rows.len().max(1)).unwrap_or(1);
    let [body, bar, entry] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(input_rows),
    ])
    .areas(area);

    let page = usize::from(body.height);
    let wanted = match app.found_entry {
        Some(i) if app.reveal_found => transcript::lines_from(app, width, i).saturating_sub(page),
        _ => app.scroll,
    };
    let need = page + wanted;
    let (lines, complete) = transcript::tail_lines(app, width, need);
    let total = lines.len();
    let mut max_scroll = total.saturating_sub(page);
    if !complete {
        max_scroll += page;
    }
    let scroll = wanted.min(max_scroll);
    let end = total.saturating_sub(scroll);
    let start = end.saturating_sub(page);
    let visible: Vec<_> = lines.into_iter().skip(start).take(end - start).collect();
    frame.render_widget(Paragraph::new(Text::from(visible)), body);

    frame.render_widget(Paragraph::new(status::line(app, width, scroll > 0)), bar);
    frame.render_widget(Paragraph::new(Text::from(input.rows)), entry);
    if let Some((row, col)) = input.cursor {
        let x = entry.x
            + u16::try_from(col)
                .unwrap_or(u16::MAX)
                .min(entry.width.saturating_sub(1));
        let y = entry.y + u16::try_from(row).unwrap_or(0);
        frame.set_cursor_position(Position::new(x, y));
    }
    Drawn {
        page,
        max_scroll,
        scroll,
    }
}
