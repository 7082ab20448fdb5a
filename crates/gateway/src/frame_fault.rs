//! What is wrong with a client frame whose `type` is known but whose fields do not fit it, said so
//! that a client's author can act on it: the missing field, or the field of the wrong kind with
//! what the protocol's schema ([`crate::protocol_schema`], generated from the types) expects and
//! what was sent. serde cannot say it for most frames: `ClientFrame`'s note requests are its one
//! untagged variant, so a tagged frame that fails to read is reported only as "data did not match
//! any variant of untagged enum ClientFrame".

use std::sync::OnceLock;

use serde_json::Value;

/// The fault of `frame` (a client frame of type `kind` that did not read), or `None` when the
/// schema sees none (then serde's own message is all there is).
pub(crate) fn describe(kind: &str, frame: &Value) -> Option<String> {
    // Built once: a client sending bad frames in a loop does not rebuild it each time.
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    let schema = SCHEMA.get_or_init(crate::protocol_schema);
    let frames = schema.pointer("/$defs/ClientFrame/oneOf")?.as_array()?;
    let of_kind = frames
        .iter()
        .find(|s| s.get("title").and_then(Value::as_str) == Some(kind))?;
    let properties = of_kind.get("properties")?.as_object()?;
    let required: Vec<&str> = of_kind
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for key in &required {
        if frame.get(key).is_none_or(Value::is_null)
            && let Some(property) = properties.get(*key)
        {
            return Some(format!("missing field `{key}`: {}", expected(property)));
        }
    }
    properties.iter().find_map(|(key, property)| {
        let sent = frame.get(key).filter(|v| !v.is_null())?;
        (!fits(property, sent)).then(|| {
            format!(
                "`{key}` must be {}, got {}",
                expected(property),
                shown(sent)
            )
        })
    })
}

fn fits(property: &Value, sent: &Value) -> bool {
    let kind_fits = match property.get("type").and_then(Value::as_str) {
        Some("string") => sent.is_string(),
        Some("boolean") => sent.is_boolean(),
        Some("object") => sent.is_object(),
        Some("array") => sent.is_array(),
        Some("integer") => match property.get("minimum").and_then(Value::as_i64) {
            Some(min) if min >= 0 => sent.as_u64().is_some(),
            _ => sent.as_i64().is_some(),
        },
        _ => true,
    };
    let allowed = property
        .get("enum")
        .and_then(Value::as_array)
        .is_none_or(|allowed| allowed.contains(sent));
    kind_fits && allowed
}

fn expected(property: &Value) -> String {
    if let Some(allowed) = property.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return format!("one of {}", names.join(", "));
    }
    match property.get("type").and_then(Value::as_str) {
        Some("string") => "a string".into(),
        Some("boolean") => "true or false".into(),
        Some("object") => "an object".into(),
        Some("array") => "a list".into(),
        Some("integer") if property.get("minimum").and_then(Value::as_i64) == Some(0) => {
            "a whole number (0 or more)".into()
        }
        Some("integer") => "a whole number".into(),
        _ => "as docs/protocol.md shows".into(),
    }
}

/// `sent`, short: a long string or a structure is not echoed whole.
fn shown(sent: &Value) -> String {
    let text = sent.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(kind: &str, frame: Value, expected: Option<&str>) {
        assert_eq!(describe(kind, &frame).as_deref(), expected, "{frame}");
    }

    #[test]
    fn the_fault_names_the_field_and_what_it_takes() {
        let search = |fields: Value| {
            let mut frame = json!({"type": "search_conversations"});
            for (k, v) in fields.as_object().into_iter().flatten() {
                frame[k] = v.clone();
            }
            frame
        };
        check(
            "search_conversations",
            search(json!({"query": "dog", "limit": -1})),
            Some("`limit` must be a whole number (0 or more), got -1"),
        );
        check(
            "search_conversations",
            search(json!({"query": "dog", "limit": "5"})),
            Some("`limit` must be a whole number (0 or more), got \"5\""),
        );
        check(
            "search_conversations",
            search(json!({"limit": 5})),
            Some("missing field `query`: a string"),
        );
        check(
            "search_conversations",
            search(json!({"query": null, "limit": 5})),
            Some("missing field `query`: a string"),
        );
        check(
            "search_conversations",
            search(json!({"query": ["x".repeat(80)], "limit": 5})),
            Some(&format!(
                "`query` must be a string, got [\"{}…",
                "x".repeat(38)
            )),
        );
        check(
            "send_turn",
            json!({"type": "send_turn", "text": "hi", "client_turn_id": "c1"}),
            Some("missing field `session_id`: a string"),
        );
        // A frame the schema finds nothing wrong with (a value past what a field holds): serde's
        // message stays. (`search_conversations`' limit reads any whole number since.)
        check(
            "search_conversations",
            search(json!({"query": "dog", "limit": 1_u64 << 40})),
            None,
        );
        check("no_such_frame", json!({}), None);
    }
}
