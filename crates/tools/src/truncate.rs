//! Caps what a tool hands back to the model, by the output's format (see [`crate::OutputFormat`]).
//!
//! - Text is cut on a UTF-8 (and, when near, a line) boundary, with a marker saying how much was cut.
//! - JSON is never cut inside: [`fit_json`] drops the last items of the largest array (counting them
//!   in an `"omitted"` field) and then shortens the longest strings (each marked), so what the model
//!   gets always parses. A top-level array that has to lose items becomes
//!   `{"results": [...], "omitted": n}`.

use serde_json::{Map, Value};

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

/// `text` bounded to `limit` bytes the way its `format` allows. Output declared JSON that does not
/// parse (a tool bug) is treated as text.
pub(crate) fn fit_output(text: &str, limit: usize, format: crate::OutputFormat) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    match format {
        crate::OutputFormat::Json => match serde_json::from_str::<Value>(text) {
            Ok(value) => fit_json(value, limit),
            Err(_) => truncate_output(text, limit),
        },
        crate::OutputFormat::Text => truncate_output(text, limit),
    }
}

/// Marker appended to a shortened string.
fn cut_marker(bytes: usize) -> String {
    format!(" [... {bytes} more bytes cut]")
}

/// `value` serialized within `limit` bytes, still valid JSON (see the module docs).
pub fn fit_json(value: Value, limit: usize) -> String {
    let text = value.to_string();
    if text.len() <= limit {
        return text;
    }
    let mut object = match value {
        Value::Object(map) => map,
        Value::Array(items) => Map::from_iter([("results".to_owned(), Value::Array(items))]),
        other => Map::from_iter([("result".to_owned(), other)]),
    };
    drop_items(&mut object, limit);
    let mut value = Value::Object(object);
    // Then the longest strings, one at a time, each cut by what is still too much.
    for _ in 0..64 {
        let size = value.to_string().len();
        if size <= limit {
            return value.to_string();
        }
        let Some(longest) = longest_string(&mut value) else {
            break;
        };
        let excess = size - limit;
        let keep = longest.len().saturating_sub(excess + 48);
        let keep = longest.floor_char_boundary(keep);
        let cut = longest.len() - keep;
        longest.truncate(keep);
        longest.push_str(&cut_marker(cut));
    }
    let fallback = serde_json::json!({
        "error": "the result was too large to show; narrow the request",
        "bytes": text.len(),
    });
    fallback.to_string()
}

/// Drops the last items of the object's largest array until the object fits (or the array is
/// empty), adding their number to `"omitted"`.
fn drop_items(object: &mut Map<String, Value>, limit: usize) {
    let Some(field) = object
        .iter()
        .filter_map(|(k, v)| v.as_array().map(|a| (k.clone(), a.len())))
        .filter(|(_, n)| *n > 0)
        .max_by_key(|(_, n)| *n)
        .map(|(k, _)| k)
    else {
        return;
    };
    let already = object.get("omitted").and_then(Value::as_u64).unwrap_or(0);
    let Some(Value::Array(items)) = object.remove(&field) else {
        return;
    };
    let total = items.len();
    let sizes: Vec<usize> = items.iter().map(|i| i.to_string().len() + 1).collect();
    // The object without the array, with room for the field, brackets and the count.
    let mut rest = object.clone();
    rest.insert(field.clone(), Value::Array(Vec::new()));
    rest.insert("omitted".to_owned(), Value::from(already + total as u64));
    let base = Value::Object(rest).to_string().len();
    let mut keep = 0;
    let mut used = base;
    while keep < total && used + sizes[keep] <= limit {
        used += sizes[keep];
        keep += 1;
    }
    let mut items = items;
    items.truncate(keep);
    object.insert(field, Value::Array(items));
    if keep < total {
        object.insert(
            "omitted".to_owned(),
            Value::from(already + (total - keep) as u64),
        );
    }
}

/// The longest string anywhere in `value` (keys excepted).
fn longest_string(value: &mut Value) -> Option<&mut String> {
    match value {
        Value::String(s) => Some(s),
        Value::Array(items) => items
            .iter_mut()
            .filter_map(longest_string)
            .max_by_key(|s| s.len()),
        Value::Object(map) => map
            .values_mut()
            .filter_map(longest_string)
            .max_by_key(|s| s.len()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_stays_valid_and_says_what_was_left_out() {
        let check = |value: Value, limit: usize, expected: Value| {
            let out = fit_json(value.clone(), limit);
            assert!(out.len() <= limit, "{out} over {limit}");
            let parsed: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(parsed, expected, "{value} at {limit}");
        };
        let item = |i: usize| serde_json::json!({"id": i, "text": "x".repeat(40)});
        let items: Vec<Value> = (0..10).map(item).collect();
        check(
            Value::Array(items.clone()),
            1000,
            Value::Array(items.clone()),
        );
        // An object's largest array loses its last items, counted.
        check(
            serde_json::json!({"results": items.clone(), "note": "n"}),
            200,
            serde_json::json!({"results": [item(0), item(1)], "note": "n", "omitted": 8}),
        );
        // A bare array becomes {"results", "omitted"} when it must lose items.
        check(
            Value::Array(items),
            120,
            serde_json::json!({"results": [item(0)], "omitted": 9}),
        );
        // One string too long for any cut of items: shortened, and marked.
        let out = fit_json(serde_json::json!({"text": "é".repeat(500)}), 300);
        let parsed: Value = serde_json::from_str(&out).unwrap();
        let text = parsed["text"].as_str().unwrap();
        assert!(
            out.len() <= 300 && text.starts_with("éé") && text.ends_with("bytes cut]"),
            "{out}"
        );
    }

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
