//! What a user's MCP server says about its tools, made fit for the model's prompt. A tool's
//! description and every `description` and `title` in its input schema are another program's
//! words, sent with every model request: each is stripped of what a reader does not see or what
//! reorders what is seen (C0 controls but newline and tab, DEL, C1 controls, bidirectional
//! embeddings, overrides, isolates and marks, the line and paragraph separators, zero-width and
//! other default-ignorable characters, variation selectors and the tag characters that spell
//! invisible ASCII), and cut to a bound. A tool's description starts with the server it came
//! from, where no cut can remove it and no text of the server's can stand before it.

use serde_json::Value;

/// Longest tool description offered, its label included (it is sent with every model request).
pub const MAX_DESCRIPTION: usize = 1024;

/// Longest `description` or `title` kept in a tool's input schema.
pub const MAX_SCHEMA_TEXT: usize = 256;

/// Marks a cut text.
const CUT: &str = "…";

/// Whether `c` is dropped from a server's text: the terminal's unsafe characters (C0 but `\n`
/// and `\t`, DEL, C1, bidirectional controls and marks, U+2028/9) and Unicode's
/// default-ignorable code points (soft hyphen, zero-width and joiners, word joiner and invisible
/// operators, variation selectors, BOM, Hangul fillers, interlinear annotations, tag characters).
fn hidden(c: char) -> bool {
    (types::terminal::is_unsafe(c) && c != '\n' && c != '\t')
        || matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{206F}'
            | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}')
}

/// `text` without hidden characters, trimmed, and at most `max` bytes (cut on a character
/// boundary, ending in `…` when cut).
pub fn clean(text: &str, max: usize) -> String {
    let mut out: String = text.chars().filter(|c| !hidden(*c)).collect();
    let trimmed = out.trim();
    if trimmed.len() != out.len() {
        out = trimmed.to_owned();
    }
    if out.len() > max {
        let mut at = max.saturating_sub(CUT.len());
        while !out.is_char_boundary(at) {
            at -= 1;
        }
        out.truncate(at);
        out.push_str(CUT);
    }
    out
}

/// The description offered for a tool of `server`: `[MCP server `<server>`] ` and what the
/// server said, cleaned, the whole at most [`MAX_DESCRIPTION`] bytes.
pub fn description_of(server: &str, description: Option<&str>) -> String {
    let label = format!("[MCP server `{server}`] ");
    let text = clean(
        description.unwrap_or_default(),
        MAX_DESCRIPTION.saturating_sub(label.len()),
    );
    if text.is_empty() {
        format!("A tool of the MCP server `{server}`.")
    } else {
        label + &text
    }
}

/// `schema` with every `description` and `title` that is text cleaned and cut to
/// [`MAX_SCHEMA_TEXT`] bytes, at any depth (properties, items, definitions, combinators).
pub fn clean_schema(schema: &mut Value) {
    let mut stack = vec![schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    match value {
                        Value::String(text) if key == "description" || key == "title" => {
                            *text = clean(text, MAX_SCHEMA_TEXT);
                        }
                        Value::Object(_) | Value::Array(_) => stack.push(value),
                        _ => {}
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}
