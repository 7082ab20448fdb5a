//! The texts of the `memory` tool, string for string as Anthropic's reference implementation of
//! `memory_20250818` words them, and the pure edits behind `str_replace` and `insert`.

use std::fmt::Write;

use memory::PathEntry;

/// Lines shown around an edit in the snippet after `str_replace`.
const SNIPPET_LINES: usize = 4;

/// A size as the reference shows it: `0B`, `512B`, `1.5K`, `4.0K`, `2.0M`.
pub fn human_size(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    // Precision is irrelevant past a few digits: f64 holds every size a note can have.
    #[allow(clippy::cast_precision_loss, reason = "sizes are far below 2^52")]
    let mut size = bytes as f64 / 1024.0;
    for unit in ["K", "M", "G"] {
        if size < 1024.0 {
            return format!("{size:.1}{unit}");
        }
        size /= 1024.0;
    }
    format!("{size:.1}T")
}

pub fn not_found(path: &str) -> String {
    format!("The path {path} does not exist. Please provide a valid path.")
}

/// `{n:>6}\t{line}` for each line, numbered from `first`.
fn numbered<'a>(out: &mut String, lines: impl Iterator<Item = &'a str>, first: usize) {
    for (i, line) in lines.enumerate() {
        let _ = write!(out, "\n{:>6}\t{line}", first + i);
    }
}

/// The view of a file, whole or from line `start` (1-based) to `end` (inclusive).
pub fn file_view(path: &str, content: &str, start: usize, end: usize) -> String {
    let mut out = format!("Here's the content of {path} with line numbers:");
    let lines = content
        .lines()
        .skip(start.saturating_sub(1))
        .take(end + 1 - start.max(1));
    numbered(&mut out, lines, start.max(1));
    out
}

/// The view of directory `dir` (canonical) shown as `shown`: the directory and what lies up to
/// two levels below it, hidden names left out, each with its size.
pub fn directory_view(shown: &str, dir: &str, files: &[PathEntry]) -> String {
    let mut sizes: Vec<(String, u64)> = vec![(dir.to_owned(), 0)];
    for file in files {
        let Some(rel) = file.path.get(dir.len() + 1..) else {
            continue;
        };
        let names: Vec<&str> = rel.split('/').collect();
        if names.iter().any(|n| n.starts_with('.')) {
            continue;
        }
        if let Some(total) = sizes.first_mut() {
            total.1 += file.bytes;
        }
        for depth in 1..=names.len().min(2) {
            let path = format!("{dir}/{}", names[..depth].join("/"));
            match sizes.iter_mut().find(|(p, _)| *p == path) {
                Some(entry) => entry.1 += file.bytes,
                None => sizes.push((path, file.bytes)),
            }
        }
    }
    sizes[1..].sort();
    let mut out = format!(
        "Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:"
    );
    for (path, bytes) in &sizes {
        let _ = write!(out, "\n{}\t{path}", human_size(*bytes));
    }
    out
}

/// Why a `view_range` cannot be shown, or the 1-based inclusive range it means.
pub fn view_range(range: &[i64], line_count: usize) -> Result<(usize, usize), String> {
    let bad = |why: &str| format!("Invalid `view_range`: {range:?}. {why}");
    let [start, end] = range else {
        return Err(bad("It should be two integers [start, end]."));
    };
    let max = line_count.max(1);
    let start = usize::try_from(*start)
        .ok()
        .filter(|s| (1..=max).contains(s));
    let Some(start) = start else {
        return Err(bad(&format!(
            "Its first element should be within the range of lines of the file: [1, {max}]."
        )));
    };
    let end = match *end {
        -1 => line_count.max(start),
        e => match usize::try_from(e) {
            Ok(e) if e >= start && e <= line_count.max(start) => e,
            _ => {
                return Err(bad(&format!(
                    "Its second element should be -1 or within [{start}, {}].",
                    line_count.max(start)
                )));
            }
        },
    };
    Ok((start, end))
}

/// The text after replacing the one occurrence of `old` with `new`, and the snippet to show;
/// or the reference's refusal when `old` occurs zero or several times.
pub fn str_replace(
    path: &str,
    content: &str,
    old: &str,
    new: &str,
) -> Result<(String, String), String> {
    let starts: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    let line_of = |offset: usize| content[..offset].matches('\n').count() + 1;
    match starts.as_slice() {
        [] => Err(format!(
            "No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
        )),
        [at] => {
            let replaced = format!("{}{new}{}", &content[..*at], &content[at + old.len()..]);
            let first = line_of(*at);
            let from = first.saturating_sub(SNIPPET_LINES).max(1);
            let to = first + new.matches('\n').count() + SNIPPET_LINES;
            let mut out = "The memory file has been edited.".to_owned();
            numbered(
                &mut out,
                replaced.lines().skip(from - 1).take(to + 1 - from),
                from,
            );
            Ok((replaced, out))
        }
        many => {
            let mut lines: Vec<usize> = many.iter().map(|i| line_of(*i)).collect();
            lines.dedup();
            let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
            Err(format!(
                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: [{}]. Please ensure it is unique",
                lines.join(", ")
            ))
        }
    }
}

/// The text with `text` inserted after line `line` (0: at the top), or the reference's refusal.
///
/// The rest of the file is kept byte for byte: the inserted lines end as the file's lines do
/// (CRLF when its first line ending is one), and a file without a final newline does not gain
/// one. An empty file takes `text` as given.
pub fn insert(content: &str, line: i64, text: &str) -> Result<String, String> {
    let count = content.lines().count();
    let at = usize::try_from(line).ok().filter(|l| *l <= count);
    let Some(at) = at else {
        return Err(format!(
            "Invalid `insert_line` parameter: {line}. It should be within the range [0, {count}]."
        ));
    };
    if content.is_empty() {
        return Ok(text.to_owned());
    }
    let eol = match content.find('\n') {
        Some(i) if content[..i].ends_with('\r') => "\r\n",
        _ => "\n",
    };
    let block: Vec<&str> = text.lines().collect();
    if block.is_empty() {
        return Ok(content.to_owned());
    }
    let block = block.join(eol);
    // Where line `at + 1` starts: after the `at`-th line ending, or the end of the text when its
    // last line has none.
    let offset = match at {
        0 => 0,
        _ => content
            .match_indices('\n')
            .nth(at - 1)
            .map_or(content.len(), |(i, _)| i + 1),
    };
    let (before, after) = content.split_at(offset);
    Ok(if before.ends_with('\n') || before.is_empty() {
        format!("{before}{block}{eol}{after}")
    } else {
        format!("{before}{eol}{block}{after}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `insert(content, line, text)` gives `expected`.
    fn check_insert(content: &str, line: i64, text: &str, expected: &str) {
        assert_eq!(
            insert(content, line, text).as_deref(),
            Ok(expected),
            "inserting {text:?} after line {line} of {content:?}"
        );
    }

    #[test]
    fn insert_keeps_the_files_line_endings() {
        check_insert("a\nb\n", 1, "x", "a\nx\nb\n");
        check_insert("a\r\nb\r\n", 1, "x", "a\r\nx\r\nb\r\n");
        check_insert("a\r\nb\r\n", 0, "x\ny", "x\r\ny\r\na\r\nb\r\n");
        check_insert("a\r\nb\r\n", 2, "x\r\ny\n", "a\r\nb\r\nx\r\ny\r\n");
        check_insert("a\nb\n", 2, "x\r\ny", "a\nb\nx\ny\n");
        // A file of mixed endings keeps each of its own; the inserted lines take the first one.
        check_insert("a\r\nb\nc\n", 2, "x", "a\r\nb\nx\r\nc\n");
    }

    #[test]
    fn insert_adds_no_final_newline_the_file_did_not_have() {
        check_insert("a\nb", 2, "x", "a\nb\nx");
        check_insert("a\r\nb", 2, "x", "a\r\nb\r\nx");
        check_insert("a\nb", 1, "x", "a\nx\nb");
        check_insert("a\nb", 0, "x", "x\na\nb");
        check_insert("a\nb\n", 2, "x", "a\nb\nx\n");
        // An empty file takes the text as given.
        check_insert("", 0, "x", "x");
        check_insert("", 0, "x\n", "x\n");
    }

    #[test]
    fn sizes() {
        let shown: Vec<String> = [0, 512, 1536, 4096, 3 * 1024 * 1024]
            .into_iter()
            .map(human_size)
            .collect();
        assert_eq!(shown, ["0B", "512B", "1.5K", "4.0K", "3.0M"]);
    }
}
