//! Text that came from outside — a note, a command's output, a name a client chose — made safe
//! to print on a terminal: every character a terminal could act on is shown as an escape instead
//! of sent. One rule for the `runner` CLI's listings and for the TUI.
//!
//! Unsafe are the C0 controls and DEL (`ESC` starts colour, title, OSC 52 clipboard and
//! clear-screen sequences; `\r` overwrites a line), the C1 controls (U+0080–U+009F; `U+009B` is a
//! one-character CSI on some terminals), the bidirectional embeddings, overrides and isolates
//! (U+202A–U+202E, U+2066–U+2069) and marks (U+200E, U+200F, U+061C), which reorder what is
//! shown, and the line and paragraph separators U+2028 and U+2029. They are written as `\n`,
//! `\r`, `\t`, `\x1b` (C0 and DEL) and `\u{9b}` (the rest).
//!
//! [`escape_line`] escapes all of them, for one-line listings where a newline would make a
//! believable fake row; [`escape_text`] keeps newlines and tabs, for a multi-line body;
//! [`escape_json`] writes the ones `serde_json` leaves raw as `\uXXXX`, so JSON output stays the
//! same value and valid JSON.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as itself.
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{061c}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// `text` on one line: every unsafe character, newlines and tabs included, as an escape.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape_with(text, |_| false)
}

/// `text` with newlines and tabs kept and every other unsafe character as an escape.
pub fn escape_text(text: &str) -> Cow<'_, str> {
    escape_with(text, |c| c == '\n' || c == '\t')
}

/// Serialized JSON with the characters a terminal may act on that `serde_json` leaves raw (DEL
/// and everything above it; `serde_json` escapes C0 itself, and pretty-printed JSON's own
/// newlines stay) written as `\uXXXX`. They can only stand inside strings, so the result is the
/// same JSON value.
pub fn escape_json(json: &str) -> Cow<'_, str> {
    let raw = |c: char| is_unsafe(c) && c >= '\u{7f}';
    if !json.chars().any(raw) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if raw(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The escape [`escape_line`] writes for `c` (`c` itself when it is safe).
pub fn escaped_char(c: char) -> Cow<'static, str> {
    match c {
        '\n' => Cow::Borrowed("\\n"),
        '\r' => Cow::Borrowed("\\r"),
        '\t' => Cow::Borrowed("\\t"),
        c if c < '\u{20}' || c == '\u{7f}' => Cow::Owned(format!("\\x{:02x}", u32::from(c))),
        c if is_unsafe(c) => Cow::Owned(format!("\\u{{{:x}}}", u32::from(c))),
        c => Cow::Owned(c.to_string()),
    }
}

fn escape_with(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) && !keep(c) {
            out.push_str(&escaped_char(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_a_terminal_would_act_on_are_shown_not_sent() {
        let osc52 = "a\u{1b}]52;c;Y3VybCBldmlsIHwgc2g=\u{7}b";
        assert_eq!(escape_line(osc52), "a\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07b");
        assert_eq!(escape_line("x\u{1b}[2J\u{1b}[H"), "x\\x1b[2J\\x1b[H");
        assert_eq!(escape_line("csi\u{9b}2J"), "csi\\u{9b}2J");
        assert_eq!(
            escape_line("abc\u{202e}fed\u{2066}"),
            "abc\\u{202e}fed\\u{2066}"
        );
        assert_eq!(escape_line("row\nfake row\r"), "row\\nfake row\\r");
        assert_eq!(escape_line("del\u{7f}"), "del\\x7f");
        assert_eq!(escape_text("two\nlines\t\u{1b}c"), "two\nlines\t\\x1bc");
        assert!(matches!(escape_line("plain — ünïcode"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_the_same_value() {
        let text = "\u{9b}2J \u{202e} \u{2028}";
        let json = format!("{{\"t\":\"{text}\"}}");
        let escaped = escape_json(&json);
        assert!(!escaped.chars().any(is_unsafe), "{escaped}");
        assert_eq!(escaped, "{\"t\":\"\\u009b2J \\u202e \\u2028\"}");
    }
}
