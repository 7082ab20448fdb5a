//! Markdown to styled lines: headings, emphasis, inline code, links, lists, quotes, rules and
//! fenced code blocks. Line-based, so half-streamed text renders sensibly; an unclosed `**` or
//! `` ` `` shows as typed until its closing marker arrives.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// How a line is broken when it is wider than the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrap {
    /// At spaces (prose).
    Words,
    /// Anywhere (code).
    Chars,
}

/// One source line, styled: `hang` is the indent of its wrapped continuation lines.
#[derive(Debug, Clone, PartialEq)]
pub struct MdLine {
    pub line: Line<'static>,
    pub hang: usize,
    pub wrap: Wrap,
}

impl MdLine {
    pub fn prose(spans: Vec<Span<'static>>, hang: usize) -> Self {
        Self {
            line: Line::from(spans),
            hang,
            wrap: Wrap::Words,
        }
    }
}

pub const CODE: Style = Style::new().fg(Color::Cyan);
const DIM: Style = Style::new().add_modifier(Modifier::DIM);

/// Renders `text` as Markdown, one [`MdLine`] per source line (fence lines excepted).
pub fn render(text: &str, base: Style) -> Vec<MdLine> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for raw in text.split('\n') {
        let line = raw.trim_end_matches('\r');
        let trimmed = line.trim_start();
        if let Some(marker) = &fence {
            if trimmed.starts_with(marker.as_str()) && trimmed.trim_matches(['`', '~']).is_empty() {
                fence = None;
            } else {
                out.push(MdLine {
                    line: Line::from(vec![
                        Span::styled("▏ ", DIM),
                        Span::styled(line.to_owned(), CODE),
                    ]),
                    hang: 2,
                    wrap: Wrap::Chars,
                });
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let marker: String = trimmed
                .chars()
                .take_while(|c| *c == '`' || *c == '~')
                .collect();
            fence = Some(marker);
            continue;
        }
        out.push(block_line(line, base));
    }
    out
}

fn block_line(line: &str, base: Style) -> MdLine {
    let trimmed = line.trim_start();
    let indent = line.chars().count() - trimmed.chars().count();
    if trimmed.is_empty() {
        return MdLine::prose(Vec::new(), 0);
    }
    if let Some((level, title)) = heading(trimmed) {
        let mut style = base.add_modifier(Modifier::BOLD);
        if level == 1 {
            style = style.add_modifier(Modifier::UNDERLINED);
        }
        return MdLine::prose(inline(title, style), 0);
    }
    if is_rule(trimmed) {
        return MdLine::prose(vec![Span::styled("─".repeat(24), DIM)], 0);
    }
    if let Some(rest) = trimmed.strip_prefix('>') {
        let mut spans = vec![Span::styled("│ ", DIM)];
        spans.extend(inline(
            rest.trim_start(),
            base.add_modifier(Modifier::ITALIC),
        ));
        return MdLine::prose(spans, 2);
    }
    if let Some(marker) = list_marker(trimmed) {
        let rest = &trimmed[marker.len()..];
        let shown = if marker.starts_with(['-', '*', '+']) {
            "• ".to_owned()
        } else {
            marker.to_owned()
        };
        let pad = " ".repeat(indent);
        let hang = indent + shown.chars().count();
        let mut spans = vec![Span::raw(pad), Span::styled(shown, DIM)];
        spans.extend(inline(rest, base));
        return MdLine::prose(spans, hang);
    }
    MdLine::prose(inline(line, base), indent)
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    let rest = &line[level..];
    ((1..=6).contains(&level) && (rest.is_empty() || rest.starts_with(' ')))
        .then(|| (level, rest.trim()))
}

fn is_rule(line: &str) -> bool {
    let t: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|m| t.chars().all(|c| c.to_string() == *m))
}

/// `- `, `* `, `+ `, `1. ` or `1) ` at the start of `line`.
fn list_marker(line: &str) -> Option<&str> {
    if ["- ", "* ", "+ "].iter().any(|m| line.starts_with(m)) {
        return line.get(..2);
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let after = line.get(digits..)?;
    (digits > 0 && digits < 10 && (after.starts_with(". ") || after.starts_with(") ")))
        .then(|| line.get(..digits + 2))
        .flatten()
}

/// Inline spans: `code`, **bold**, __bold__, *italic*, _italic_, [text](url).
pub fn inline(text: &str, base: Style) -> Vec<Span<'static>> {
    let chars: Vec<char> = text.chars().collect();
    let mut spans = Vec::new();
    let mut buf = String::new();
    let mut i = 0;
    let flush = |buf: &mut String, spans: &mut Vec<Span<'static>>| {
        if !buf.is_empty() {
            spans.push(Span::styled(std::mem::take(buf), base));
        }
    };
    while i < chars.len() {
        if let Some((styled, next)) = marked(&chars, i, base) {
            flush(&mut buf, &mut spans);
            spans.extend(styled);
            i = next;
            continue;
        }
        buf.push(chars[i]);
        i += 1;
    }
    flush(&mut buf, &mut spans);
    spans
}

/// The styled spans of a marked-up run starting at `i`, and the index after it.
fn marked(chars: &[char], i: usize, base: Style) -> Option<(Vec<Span<'static>>, usize)> {
    let c = chars[i];
    if c == '`' {
        let end = find(chars, i + 1, &['`'])?;
        return Some((
            vec![Span::styled(collect(&chars[i + 1..end]), CODE)],
            end + 1,
        ));
    }
    if (c == '*' || c == '_') && chars.get(i + 1) == Some(&c) {
        let end = find(chars, i + 2, &[c, c]).filter(|end| *end > i + 2)?;
        let inner = collect(&chars[i + 2..end]);
        return Some((inline(&inner, base.add_modifier(Modifier::BOLD)), end + 2));
    }
    if (c == '*' || c == '_') && opens(chars, i) {
        let end = closing(chars, i)?;
        let inner = collect(&chars[i + 1..end]);
        return Some((inline(&inner, base.add_modifier(Modifier::ITALIC)), end + 1));
    }
    if c == '[' {
        let (label_end, url_end) = link(chars, i)?;
        let label = collect(&chars[i + 1..label_end]);
        let url = collect(&chars[label_end + 2..url_end]);
        let mut spans = inline(&label, base.add_modifier(Modifier::UNDERLINED));
        if url != label {
            spans.push(Span::styled(format!(" ({url})"), DIM));
        }
        return Some((spans, url_end + 1));
    }
    None
}

fn collect(chars: &[char]) -> String {
    chars.iter().collect()
}

/// The index of the next occurrence of `pat` at or after `from`.
fn find(chars: &[char], from: usize, pat: &[char]) -> Option<usize> {
    (from..chars.len()).find(|&j| chars[j..].starts_with(pat))
}

/// A single `*`/`_` opens emphasis when followed by a non-space and (for `_`) not inside a word.
fn opens(chars: &[char], i: usize) -> bool {
    let next_ok = chars.get(i + 1).is_some_and(|n| !n.is_whitespace());
    let prev_ok = chars[i] == '*' || i == 0 || !chars[i - 1].is_alphanumeric();
    next_ok && prev_ok
}

fn closing(chars: &[char], i: usize) -> Option<usize> {
    let c = chars[i];
    (i + 2..chars.len()).find(|&j| {
        chars[j] == c
            && !chars[j - 1].is_whitespace()
            && chars.get(j + 1) != Some(&c)
            && (c == '*' || chars.get(j + 1).is_none_or(|n| !n.is_alphanumeric()))
    })
}

/// `[label](url)` starting at `i`: the indices of `]` and `)`.
fn link(chars: &[char], i: usize) -> Option<(usize, usize)> {
    let label_end = find(chars, i + 1, &[']'])?;
    if chars.get(label_end + 1) != Some(&'(') || label_end == i + 1 {
        return None;
    }
    let url_end = find(chars, label_end + 2, &[')'])?;
    let url = &chars[label_end + 2..url_end];
    (!url.is_empty() && !url.iter().any(|c| c.is_whitespace())).then_some((label_end, url_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders spans as text with markers: `*bold*`, `/italic/`, `` `code` ``, `_underline_`.
    fn marked(line: &Line<'_>) -> String {
        line.spans
            .iter()
            .map(|s| {
                let t = s.content.to_string();
                let m = s.style.add_modifier;
                if s.style.fg == Some(Color::Cyan) {
                    format!("`{t}`")
                } else if m.contains(Modifier::BOLD) {
                    format!("*{t}*")
                } else if m.contains(Modifier::ITALIC) {
                    format!("/{t}/")
                } else if m.contains(Modifier::UNDERLINED) {
                    format!("_{t}_")
                } else {
                    t
                }
            })
            .collect()
    }

    fn check(md: &str, expected: &[&str]) {
        let got: Vec<String> = render(md, Style::new())
            .iter()
            .map(|l| marked(&l.line))
            .collect();
        assert_eq!(got, expected, "{md:?}");
    }

    #[test]
    fn inline_styles() {
        check("plain text", &["plain text"]);
        check("a **bold** b", &["a *bold* b"]);
        check("an *italic* and _it_", &["an /italic/ and /it/"]);
        check("snake_case_name stays", &["snake_case_name stays"]);
        check("run `cargo test` now", &["run `cargo test` now"]);
        check("unclosed **bold", &["unclosed **bold"]);
        check("2 * 3 * 4", &["2 * 3 * 4"]);
        check("see [docs](http://x.y)", &["see _docs_ (http://x.y)"]);
    }

    #[test]
    fn blocks() {
        check("# Title\n## Sub", &["*Title*", "*Sub*"]);
        check(
            "- one\n  * two\n3. three",
            &["• one", "  • two", "3. three"],
        );
        check("> quoted", &["│ /quoted/"]);
        check("---", &["────────────────────────"]);
        check(
            "```rust\nlet x = *y*;\n```\nafter",
            &["▏ `let x = *y*;`", "after"],
        );
        check("```\nstill streaming", &["▏ `still streaming`"]);
    }

    #[test]
    fn hangs() {
        let lines = render("  - item\n1. x\ncode", Style::new());
        let hangs: Vec<usize> = lines.iter().map(|l| l.hang).collect();
        assert_eq!(hangs, vec![4, 3, 0]);
    }
}
