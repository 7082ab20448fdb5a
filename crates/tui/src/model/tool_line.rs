//! One calm line per tool call, from its name, arguments and result summary: "saved note
//! note-3f2a…", "searched memory for "Lisbon": 3 results", "shell: exit 0 (ls -la)".

/// Where a tool call is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolState {
    Running,
    Finished {
        ok: bool,
        summary: String,
        duration_ms: Option<u64>,
    },
}

/// The compact description of a call.
pub fn describe(name: &str, arguments: &str, state: &ToolState) -> String {
    let args = CallArgs(serde_json::from_str(arguments).unwrap_or_default());
    match state {
        ToolState::Running => running(name, &args),
        ToolState::Finished {
            ok: false, summary, ..
        } => {
            let why = summary.strip_prefix("error:").unwrap_or(summary).trim();
            if why.is_empty() {
                format!("{} failed", label(name))
            } else {
                format!("{} failed: {why}", label(name))
            }
        }
        ToolState::Finished { summary, .. } => finished(name, summary, &args),
    }
}

fn running(name: &str, args: &CallArgs) -> String {
    let arg = |key| args.get(key);
    match name {
        "memory_save" => "saving a note…".into(),
        "memory_search" => match arg("query") {
            Some(q) => format!("searching memory for \"{}\"…", clip(q, 40)),
            None => "searching memory…".into(),
        },
        "memory_update" => "updating a note…".into(),
        "memory_delete" => "deleting a note…".into(),
        "shell_exec" => match arg("command") {
            Some(c) => format!("shell: {}…", clip(c, 50)),
            None => "shell…".into(),
        },
        _ => match arg("path") {
            Some(p) => format!("{} {}…", label(name), clip(p, 50)),
            None => format!("{}…", label(name)),
        },
    }
}

fn finished(name: &str, summary: &str, args: &CallArgs) -> String {
    let arg = |key| args.get(key);
    let note = note_id(summary).map(|id| short_note(&id));
    match name {
        "memory_save" => format!("saved note {}", note.unwrap_or_default())
            .trim_end()
            .into(),
        "memory_update" => format!("updated note {}", note.unwrap_or_default())
            .trim_end()
            .into(),
        "memory_delete" => format!("deleted note {}", note.unwrap_or_default())
            .trim_end()
            .into(),
        "memory_search" => {
            let what = match arg("query") {
                Some(q) => format!("searched memory for \"{}\"", clip(q, 40)),
                None => "searched memory".into(),
            };
            match result_count(summary) {
                Some(0) => format!("{what}: nothing found"),
                Some(1) => format!("{what}: 1 result"),
                Some(n) => format!("{what}: {n} results"),
                None => format!("{what}: found notes"),
            }
        }
        "shell_exec" => {
            let outcome = match summary.strip_prefix("exit code ") {
                Some(code) => format!("exit {code}"),
                None => summary.to_owned(),
            };
            match arg("command") {
                Some(c) => format!("shell: {outcome} ({})", clip(c, 50)),
                None => format!("shell: {outcome}"),
            }
        }
        _ => {
            let target = arg("path")
                .map(|p| format!(" {}", clip(p, 50)))
                .unwrap_or_default();
            if summary.is_empty() {
                format!("{}{target}", label(name))
            } else {
                format!("{}{target}: {}", label(name), clip(summary, 60))
            }
        }
    }
}

/// A call's arguments, when they are a JSON object.
struct CallArgs(serde_json::Value);

impl CallArgs {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(serde_json::Value::as_str)
    }
}

/// `file_read` → `file read`.
fn label(name: &str) -> String {
    name.replace('_', " ")
}

/// The `note_id` in a result summary (which may be cut short).
fn note_id(summary: &str) -> Option<String> {
    let start = summary.find("note-")?;
    let id: String = summary[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    (id.len() > "note-".len()).then_some(id)
}

/// `note-0b1c2d3e-…` → `note-0b1c2d3e…`
fn short_note(id: &str) -> String {
    clip(id, 13)
}

/// How many results a search summary holds: known when the summary is a whole JSON array.
fn result_count(summary: &str) -> Option<usize> {
    let summary = summary.trim();
    if summary == "[]" || summary == "no results" {
        return Some(0);
    }
    if let Some(n) = summary
        .strip_suffix(" results")
        .or_else(|| summary.strip_suffix(" result"))
    {
        return n.parse().ok();
    }
    match serde_json::from_str::<serde_json::Value>(summary) {
        Ok(serde_json::Value::Array(items)) => Some(items.len()),
        _ => None,
    }
}

/// At most `max` characters, with `…` when cut; newlines become spaces.
pub fn clip(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The arguments, pretty-printed when they are JSON.
pub fn pretty_arguments(arguments: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|_| arguments.to_owned()),
        Err(_) => arguments.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(ok: bool, summary: &str) -> ToolState {
        ToolState::Finished {
            ok,
            summary: summary.into(),
            duration_ms: Some(3),
        }
    }

    fn check(name: &str, args: &str, state: ToolState, expected: &str) {
        assert_eq!(describe(name, args, &state), expected);
    }

    #[test]
    fn lines() {
        check("memory_save", "{}", ToolState::Running, "saving a note…");
        check(
            "memory_save",
            r#"{"content":"x"}"#,
            done(
                true,
                r#"{"message":"Saved. Use this note_id with memory_update or","note_id":"note-0b1c2d3e-aaaa-bbbb-cccc-ddddeeeeffff"}"#,
            ),
            "saved note note-0b1c2d3…",
        );
        check(
            "memory_search",
            r#"{"query":"Lisbon"}"#,
            ToolState::Running,
            "searching memory for \"Lisbon\"…",
        );
        check(
            "memory_search",
            r#"{"query":"Lisbon"}"#,
            done(true, r#"[{"text":"a"},{"text":"b"},{"text":"c"}]"#),
            "searched memory for \"Lisbon\": 3 results",
        );
        check(
            "memory_search",
            r#"{"query":"x"}"#,
            done(true, "[]"),
            "searched memory for \"x\": nothing found",
        );
        check(
            "memory_search",
            r#"{"query":"x"}"#,
            done(
                true,
                r#"[{"created_at":"2025","note_id":"note-1","score":0.5,"te…"#,
            ),
            "searched memory for \"x\": found notes",
        );
        // The runtime's summary of a search result.
        for (summary, expected) in [
            ("4 results", "searched memory for \"x\": 4 results"),
            ("1 result", "searched memory for \"x\": 1 result"),
            ("no results", "searched memory for \"x\": nothing found"),
        ] {
            check(
                "memory_search",
                r#"{"query":"x"}"#,
                done(true, summary),
                expected,
            );
        }
        check(
            "shell_exec",
            r#"{"command":"ls -la"}"#,
            done(true, "exit code 0"),
            "shell: exit 0 (ls -la)",
        );
        check(
            "memory_delete",
            "{}",
            done(false, "error: no note note-9 for this user: search first"),
            "memory delete failed: no note note-9 for this user: search first",
        );
        check(
            "file_read",
            r#"{"path":"shared/a.txt"}"#,
            done(true, "hello"),
            "file read shared/a.txt: hello",
        );
        check("mystery", "not json", done(true, ""), "mystery");
    }

    #[test]
    fn clip_counts_characters() {
        assert_eq!(clip("héllo wörld", 6), "héllo…");
        assert_eq!(clip("a\nb", 6), "a b");
    }
}
