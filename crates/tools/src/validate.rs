//! Checks tool arguments against the subset of JSON Schema our tools use: `type` (object, string,
//! integer, number, boolean, array), `properties`, `required`, `additionalProperties: false`,
//! `items`, `minLength`/`maxLength`, `minimum`/`maximum`, `minItems`/`maxItems` and `enum`.
//!
//! Errors name the field and say what was expected and what was sent, e.g.
//! "`top_k` must be an integer between 1 and 20, got \"five\"". Keywords outside the subset are
//! ignored, so schemas may carry `description` and `default` freely.

use serde_json::{Map, Value};

use crate::ToolError;

/// Validates `args` against `schema`; the first problem found is returned.
pub fn validate_args(schema: &Value, args: &Value) -> Result<(), ToolError> {
    if !args.is_object() {
        return Err(ToolError::invalid(
            "arguments",
            format!("a JSON object, got {}", describe(args)),
        ));
    }
    check(schema, args, "")
}

fn check(schema: &Value, value: &Value, field: &str) -> Result<(), ToolError> {
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    let name = if field.is_empty() { "arguments" } else { field };
    if let Some(kind) = schema.get("type").and_then(Value::as_str)
        && !type_matches(kind, value)
    {
        return Err(mismatch(name, schema, value));
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        return Err(mismatch(name, schema, value));
    }
    match value {
        Value::String(s) => check_string(name, schema, s, value),
        Value::Number(_) => check_number(name, schema, value),
        Value::Array(items) => check_array(name, schema, items, value),
        Value::Object(map) => check_object(field, schema, map),
        Value::Bool(_) | Value::Null => Ok(()),
    }
}

fn check_string(
    name: &str,
    schema: &Map<String, Value>,
    s: &str,
    value: &Value,
) -> Result<(), ToolError> {
    let len = s.chars().count() as u64;
    let min = schema.get("minLength").and_then(Value::as_u64);
    let max = schema.get("maxLength").and_then(Value::as_u64);
    if min.is_some_and(|m| len < m) || max.is_some_and(|m| len > m) {
        return Err(mismatch(name, schema, value));
    }
    Ok(())
}

fn check_number(name: &str, schema: &Map<String, Value>, value: &Value) -> Result<(), ToolError> {
    let n = value.as_f64().unwrap_or(f64::NAN);
    let min = schema.get("minimum").and_then(Value::as_f64);
    let max = schema.get("maximum").and_then(Value::as_f64);
    if min.is_some_and(|m| n.is_nan() || n < m) || max.is_some_and(|m| n.is_nan() || n > m) {
        return Err(mismatch(name, schema, value));
    }
    Ok(())
}

fn check_array(
    name: &str,
    schema: &Map<String, Value>,
    items: &[Value],
    value: &Value,
) -> Result<(), ToolError> {
    let len = items.len() as u64;
    let min = schema.get("minItems").and_then(Value::as_u64);
    let max = schema.get("maxItems").and_then(Value::as_u64);
    if min.is_some_and(|m| len < m) || max.is_some_and(|m| len > m) {
        return Err(mismatch(name, schema, value));
    }
    if let Some(item_schema) = schema.get("items") {
        for (i, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{name}[{i}]"))?;
        }
    }
    Ok(())
}

fn check_object(
    field: &str,
    schema: &Map<String, Value>,
    map: &Map<String, Value>,
) -> Result<(), ToolError> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let join = |key: &str| {
        if field.is_empty() {
            key.to_owned()
        } else {
            format!("{field}.{key}")
        }
    };
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(key) {
                let what = properties
                    .get(key)
                    .map(expectation)
                    .unwrap_or_else(|| "given".into());
                return Err(ToolError::invalid(
                    join(key),
                    format!("given (it is required): {what}"),
                ));
            }
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, value) in map {
        match properties.get(key) {
            Some(prop) => check(prop, value, &join(key))?,
            None if closed => {
                let mut accepted: Vec<&str> = properties.keys().map(String::as_str).collect();
                accepted.sort_unstable();
                let accepted = if accepted.is_empty() {
                    "none".to_owned()
                } else {
                    accepted.join(", ")
                };
                return Err(ToolError::invalid(
                    join(&shorten(key, 40)),
                    format!("left out: it is not an argument of this tool (accepted: {accepted})"),
                ));
            }
            None => {}
        }
    }
    Ok(())
}

fn type_matches(kind: &str, value: &Value) -> bool {
    match kind {
        "object" => value.is_object(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn mismatch(name: &str, schema: &Map<String, Value>, value: &Value) -> ToolError {
    ToolError::invalid(
        name,
        format!("{}, got {}", expectation_of(schema), describe(value)),
    )
}

fn expectation(schema: &Value) -> String {
    schema
        .as_object()
        .map(expectation_of)
        .unwrap_or_else(|| "a value".into())
}

/// "an integer between 1 and 20", "a string of 1 to 200 characters", "one of \"a\", \"b\"".
fn expectation_of(schema: &Map<String, Value>) -> String {
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return format!("one of {}", list.join(", "));
    }
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("value");
    let noun = match kind {
        "object" => "an object",
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "true or false",
        "array" => "an array",
        "null" => "null",
        _ => "a value",
    };
    let range = |lo: &str, hi: &str, unit: &str| -> String {
        let lo = schema
            .get(lo)
            .filter(|v| v.is_number())
            .map(Value::to_string);
        let hi = schema
            .get(hi)
            .filter(|v| v.is_number())
            .map(Value::to_string);
        match (lo, hi) {
            (Some(lo), Some(hi)) if unit.is_empty() => format!(" between {lo} and {hi}"),
            (Some(lo), Some(hi)) => format!(" of {lo} to {hi} {unit}"),
            (Some(lo), None) if unit.is_empty() => format!(" of at least {lo}"),
            (Some(lo), None) => format!(" of at least {lo} {}", one_or_more(&lo, unit)),
            (None, Some(hi)) if unit.is_empty() => format!(" of at most {hi}"),
            (None, Some(hi)) => format!(" of at most {hi} {}", one_or_more(&hi, unit)),
            (None, None) => String::new(),
        }
    };
    let bounds = match kind {
        "string" => range("minLength", "maxLength", "characters"),
        "integer" | "number" => range("minimum", "maximum", ""),
        "array" => range("minItems", "maxItems", "items"),
        _ => String::new(),
    };
    format!("{noun}{bounds}")
}

/// `unit` for `n` of it: "1 character", "2 characters".
fn one_or_more<'a>(n: &str, unit: &'a str) -> &'a str {
    if n == "1" {
        unit.strip_suffix('s').unwrap_or(unit)
    } else {
        unit
    }
}

/// A short rendering of what was sent: strings quoted and cut, other values by kind.
fn describe(value: &Value) -> String {
    match value {
        Value::String(s) if s.chars().count() > 40 => {
            format!("a string of {} characters", s.chars().count())
        }
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(_) => "an object".into(),
    }
}

fn shorten(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_owned();
    }
    let cut: String = s.chars().take(max_chars).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["query"],
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 10},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 20},
                "weight": {"type": "number", "minimum": 0},
                "exact": {"type": "boolean"},
                "mode": {"type": "string", "enum": ["fast", "deep"]},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 3}},
                "filter": {"type": "object", "additionalProperties": false,
                           "properties": {"since": {"type": "integer"}}}
            }
        })
    }

    fn check(args: Value, expected: Result<(), &str>) {
        let got = validate_args(&schema(), &args).map_err(|e| e.to_string());
        assert_eq!(got, expected.map_err(str::to_owned), "args {args}");
    }

    #[test]
    fn accepts_valid_arguments() {
        check(json!({"query": "cats"}), Ok(()));
        check(
            json!({"query": "cats", "top_k": 20, "weight": 0.5, "exact": true, "mode": "deep",
                   "tags": ["a", "b"], "filter": {"since": 3}}),
            Ok(()),
        );
    }

    #[test]
    fn one_is_singular() {
        let of = |schema: Value| expectation_of(schema.as_object().unwrap());
        assert_eq!(
            of(json!({"type": "string", "minLength": 1})),
            "a string of at least 1 character"
        );
        assert_eq!(
            of(json!({"type": "array", "maxItems": 1})),
            "an array of at most 1 item"
        );
        assert_eq!(
            of(json!({"type": "string", "minLength": 2})),
            "a string of at least 2 characters"
        );
    }

    #[test]
    fn names_the_field_and_the_expectation() {
        check(
            json!({"query": "x", "top_k": "five"}),
            Err("`top_k` must be an integer between 1 and 20, got \"five\""),
        );
        check(
            json!({"query": "x", "top_k": 0}),
            Err("`top_k` must be an integer between 1 and 20, got 0"),
        );
        check(
            json!({"query": "x", "top_k": 2.5}),
            Err("`top_k` must be an integer between 1 and 20, got 2.5"),
        );
        check(
            json!({"query": ""}),
            Err("`query` must be a string of 1 to 10 characters, got \"\""),
        );
        check(
            json!({"query": "x", "weight": -1}),
            Err("`weight` must be a number of at least 0, got -1"),
        );
        check(
            json!({"query": "x", "exact": "yes"}),
            Err("`exact` must be true or false, got \"yes\""),
        );
        check(
            json!({"query": "x", "mode": "slow"}),
            Err("`mode` must be one of \"fast\", \"deep\", got \"slow\""),
        );
        check(
            json!({"query": "x", "tags": ["a", "b", "c"]}),
            Err("`tags` must be an array of at most 2 items, got an array of 3 items"),
        );
        check(
            json!({"query": "x", "tags": ["long"]}),
            Err("`tags[0]` must be a string of at most 3 characters, got \"long\""),
        );
        check(
            json!({"query": "x", "filter": {"since": "now"}}),
            Err("`filter.since` must be an integer, got \"now\""),
        );
    }

    #[test]
    fn required_and_unknown_fields() {
        check(
            json!({}),
            Err("`query` must be given (it is required): a string of 1 to 10 characters"),
        );
        check(
            json!({"query": "x", "user_id": "bob"}),
            Err(
                "`user_id` must be left out: it is not an argument of this tool (accepted: exact, filter, mode, query, tags, top_k, weight)",
            ),
        );
        check(
            json!(["query"]),
            Err("`arguments` must be a JSON object, got an array of 1 items"),
        );
    }
}
