//! A server's `tools/call` result as the model reads it: text as is, structured content as JSON,
//! images and audio as a short note, resources as links (an embedded text resource with its
//! text). The registry then bounds it like every tool's output.

use serde_json::Value;

/// The text of `result` (a `CallToolResult` as JSON), and whether the server marked it an error.
pub fn render(result: &Value) -> (String, bool) {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(block)
        .collect();
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
        && !repeats(&parts, structured)
    {
        parts.push(structured.to_string());
    }
    if parts.is_empty() {
        parts.push("(the tool returned nothing)".to_owned());
    }
    (parts.join("\n"), is_error)
}

/// Whether the text `parts` already say `structured`: servers send structured content as text too
/// (the spec asks them to), and the Python SDK wraps a plain result as `{"result": …}`.
fn repeats(parts: &[String], structured: &Value) -> bool {
    let wrapped = structured
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("result"));
    parts.iter().any(|p| {
        let parsed = serde_json::from_str::<Value>(p).ok();
        parsed.as_ref() == Some(structured)
            || wrapped.is_some_and(|w| w.as_str() == Some(p.as_str()) || parsed.as_ref() == Some(w))
    })
}

fn block(block: &Value) -> Option<String> {
    let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("type") {
        "text" => Some(text("text").to_owned()),
        kind @ ("image" | "audio") => Some(format!(
            "[{kind}: {}, {} — not shown]",
            or(text("mimeType"), "unknown type"),
            size_of_base64(text("data"))
        )),
        "resource_link" => Some(format!("[resource: {}]", link(block))),
        "resource" => {
            let resource = block.get("resource")?;
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
            match resource.get("text").and_then(Value::as_str) {
                Some(body) => Some(format!("[resource {uri}]\n{body}")),
                None => Some(format!(
                    "[resource {uri}: {}, {} — not shown]",
                    or(
                        resource
                            .get("mimeType")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                        "binary"
                    ),
                    size_of_base64(
                        resource
                            .get("blob")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                    )
                )),
            }
        }
        other => Some(format!("[{} content — not shown]", or(other, "unknown"))),
    }
}

fn link(block: &Value) -> String {
    let uri = block.get("uri").and_then(Value::as_str).unwrap_or("?");
    match block.get("name").and_then(Value::as_str) {
        Some(name) if name != uri => format!("{name} <{uri}>"),
        _ => format!("<{uri}>"),
    }
}

fn or<'a>(s: &'a str, fallback: &'a str) -> &'a str {
    if s.is_empty() { fallback } else { s }
}

/// The decoded size of base64 `data`, for people.
fn size_of_base64(data: &str) -> String {
    let bytes = data.len() / 4 * 3;
    if bytes >= 1024 {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}
