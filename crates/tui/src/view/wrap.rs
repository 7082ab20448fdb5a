//! Breaking styled lines to the screen width (by display width, not bytes), with a hanging
//! indent for continuation lines. Every character a terminal could act on (escape sequences,
//! `\r`, C1 controls, bidi overrides) is shown as its escape (`\x1b`, `\u{202e}`) by
//! [`types::terminal`], so nothing from a note or a command's output reaches the terminal raw.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use types::terminal;
use unicode_width::UnicodeWidthChar;

use crate::markdown::{MdLine, Wrap};

/// The screen lines of `line` at `width` columns.
pub fn wrap(line: &MdLine, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let hang = if line.hang * 2 < width { line.hang } else { 0 };
    let mut cells: Vec<(char, Style)> = Vec::new();
    for span in &line.line.spans {
        let style = line.line.style.patch(span.style);
        for c in span.content.chars() {
            match c {
                '\t' => cells.push((' ', style)),
                // Shown, never sent: a note or a command's output cannot drive the terminal.
                c if terminal::is_unsafe(c) => {
                    cells.extend(terminal::escaped_char(c).chars().map(|e| (e, style)));
                }
                c => cells.push((c, style)),
            }
        }
    }
    if cells.is_empty() {
        return vec![Line::default()];
    }
    let mut rows: Vec<Vec<(char, Style)>> = Vec::new();
    let mut row: Vec<(char, Style)> = Vec::new();
    let mut used = 0;
    let mut i = 0;
    while i < cells.len() {
        let limit = if rows.is_empty() { width } else { width - hang };
        // The next unit: a word with its trailing spaces, or one character for code.
        let end = match line.wrap {
            Wrap::Chars => i + 1,
            Wrap::Words => word_end(&cells, i),
        };
        let unit = &cells[i..end];
        let unit_width: usize = unit.iter().map(|(c, _)| char_width(*c)).sum();
        let text_width: usize = unit
            .iter()
            .filter(|(c, _)| *c != ' ')
            .map(|(c, _)| char_width(*c))
            .sum();
        if used + text_width <= limit || (used == 0 && unit_width <= limit) {
            row.extend_from_slice(unit);
            used += unit_width;
            i = end;
        } else if used == 0 {
            // A word longer than the line: break it.
            let mut take = 0;
            let mut w = 0;
            while i + take < end && w + char_width(cells[i + take].0) <= limit {
                w += char_width(cells[i + take].0);
                take += 1;
            }
            let take = take.max(1);
            row.extend_from_slice(&cells[i..i + take]);
            i += take;
            rows.push(std::mem::take(&mut row));
            used = 0;
        } else {
            rows.push(std::mem::take(&mut row));
            used = 0;
        }
    }
    if !row.is_empty() {
        rows.push(row);
    }
    rows.into_iter()
        .enumerate()
        .map(|(n, mut cells)| {
            while cells.last().is_some_and(|(c, _)| *c == ' ') && cells.len() > 1 {
                cells.pop();
            }
            let mut spans = Vec::new();
            if n > 0 && hang > 0 {
                spans.push(Span::raw(" ".repeat(hang)));
            }
            spans.extend(merge(&cells));
            Line::from(spans)
        })
        .collect()
}

/// The end of the word starting at `i`, including the spaces after it.
fn word_end(cells: &[(char, Style)], i: usize) -> usize {
    let mut j = i;
    while j < cells.len() && cells[j].0 != ' ' {
        j += 1;
    }
    while j < cells.len() && cells[j].0 == ' ' {
        j += 1;
    }
    j.max(i + 1)
}

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

fn merge(cells: &[(char, Style)]) -> Vec<Span<'static>> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut current: Option<Style> = None;
    for (c, style) in cells {
        if current != Some(*style) {
            if let Some(prev) = current
                && !text.is_empty()
            {
                spans.push(Span::styled(std::mem::take(&mut text), prev));
            }
            current = Some(*style);
        }
        text.push(*c);
    }
    if let Some(style) = current
        && !text.is_empty()
    {
        spans.push(Span::styled(text, style));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::render;

    fn check(md: &str, width: usize, expected: &[&str]) {
        let got: Vec<String> = render(md, Style::new())
            .iter()
            .flat_map(|l| wrap(l, width))
            .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect())
            .collect();
        assert_eq!(got, expected, "{md:?} at {width}");
    }

    #[test]
    fn wraps() {
        check("one two three", 7, &["one two", "three"]);
        check("- alpha beta gamma", 12, &["• alpha beta", "  gamma"]);
        check("abcdefghij", 4, &["abcd", "efgh", "ij"]);
        check("```\nabcdef\n```", 5, &["▏ abc", "  def"]);
        check("日本語のテキスト", 6, &["日本語", "のテキ", "スト"]);
        check("", 5, &[""]);
        check("word", 0, &["w", "o", "r", "d"]);
    }
}
