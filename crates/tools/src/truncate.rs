//! Caps what a tool hands back to the model, cutting on a UTF-8 boundary and saying how much was
//! cut.

/// Default cap on a tool's output: 16 KiB.
pub const DEFAULT_OUTPUT_LIMIT: usize = 16 * 1024;

/// `text` if it fits in `limit` bytes; otherwise its longest prefix that fits (ending on a char
/// boundary, and on a line boundary when one is near) followed by a marker line such as
/// `[... 1234 more bytes cut: narrow the request, e.g. start_line/end_line or a subdirectory]`.
pub fn truncate_output(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut cut = text.floor_char_boundary(limit);
    // Prefer ending on a whole line if that loses little.
    if let Some(nl) = text[..cut].rfind('\n')
        && cut - nl < 256
    {
        cut = nl + 1;
    }
    let mut out = text[..cut].to_owned();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[... {} more bytes cut: narrow the request, e.g. start_line/end_line or a subdirectory]",
        text.len() - cut
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, limit: usize, expected: &str) {
        assert_eq!(
            truncate_output(text, limit),
            expected,
            "{text:?} at {limit}"
        );
    }

    #[test]
    fn cuts_on_char_and_line_boundaries() {
        check("short", 16, "short");
        check("exactly!", 8, "exactly!");
        check(
            "héllo wörld",
            2,
            "h\n[... 12 more bytes cut: narrow the request, e.g. start_line/end_line or a subdirectory]",
        );
        check(
            "line one\nline two\n",
            12,
            "line one\n[... 9 more bytes cut: narrow the request, e.g. start_line/end_line or a subdirectory]",
        );
        check(
            "日本語",
            4,
            "日\n[... 6 more bytes cut: narrow the request, e.g. start_line/end_line or a subdirectory]",
        );
    }
}
