//! What a listed server tool must be before it is offered: a name the model can call, a JSON
//! Schema the registry can check arguments against, and a tier from the configuration.

use serde_json::Value;
use types::{McpServerConfig, SafetyTier};

/// Longest name offered to a model (providers cap tool names at 64 characters).
pub const MAX_TOOL_NAME: usize = 64;

/// Largest input schema accepted, serialized (a schema is sent with every model request).
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;

/// Deepest nesting accepted in a schema.
const MAX_DEPTH: usize = 16;

/// The JSON types a schema may name.
const TYPES: [&str; 7] = [
    "object", "string", "integer", "number", "boolean", "array", "null",
];

/// The name the model calls `tool` of `server` by: `<server>__<tool>`, or why there is none.
pub fn offered_name(server: &str, tool: &str) -> Result<String, String> {
    if tool.is_empty()
        || !tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err("its name has characters other than letters, digits, '-' and '_'".into());
    }
    let name = format!("{server}__{tool}");
    if name.len() > MAX_TOOL_NAME {
        return Err(format!(
            "`{name}` is longer than {MAX_TOOL_NAME} characters"
        ));
    }
    Ok(name)
}

/// Whether `name` reads as a tool of `server` (begins `<server>__`, as [`offered_name`] makes
/// them). A server's name may end in `_`, so more than one server's may be read in one name.
pub(crate) fn reads_as_tool_of(name: &str, server: &str) -> bool {
    name.strip_prefix(server)
        .is_some_and(|rest| rest.starts_with("__"))
}

/// Checks that `schema` is an object schema the registry can validate arguments against: a
/// `type: "object"` root, `properties` of schemas, `required` names among them, known types
/// only, at most [`MAX_SCHEMA_BYTES`] and [`MAX_DEPTH`] deep. The problem, in a few words.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    let size = serde_json::to_string(schema).map_or(usize::MAX, |s| s.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its input schema is {size} bytes (at most {MAX_SCHEMA_BYTES})"
        ));
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("its input schema is not `type: \"object\"`".into());
    }
    check_node(schema, "input schema", 0)
}

fn check_node(node: &Value, at: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("its {at} nests deeper than {MAX_DEPTH} levels"));
    }
    // `true`/`false` are schemas too (anything / nothing).
    let Some(map) = node.as_object() else {
        return match node {
            Value::Bool(_) => Ok(()),
            _ => Err(format!("its {at} is not a JSON Schema object")),
        };
    };
    if let Some(kind) = map.get("type") {
        let known = |v: &Value| v.as_str().is_some_and(|t| TYPES.contains(&t));
        let ok = match kind {
            Value::Array(kinds) => !kinds.is_empty() && kinds.iter().all(known),
            other => known(other),
        };
        if !ok {
            return Err(format!("its {at} has an unknown `type` {kind}"));
        }
    }
    let properties = match map.get("properties") {
        None => None,
        Some(Value::Object(props)) => Some(props),
        Some(_) => return Err(format!("its {at} has `properties` that is not an object")),
    };
    for (name, property) in properties.into_iter().flatten() {
        check_node(property, &format!("property `{name}`"), depth + 1)?;
    }
    if let Some(required) = map.get("required") {
        let Some(names) = required.as_array() else {
            return Err(format!("its {at} has `required` that is not a list"));
        };
        for name in names {
            let Some(name) = name.as_str() else {
                return Err(format!(
                    "its {at} has a `required` entry that is not a name"
                ));
            };
            if properties.is_some_and(|p| !p.contains_key(name)) {
                return Err(format!(
                    "its {at} requires `{name}`, which it does not describe"
                ));
            }
        }
    }
    if let Some(items) = map.get("items") {
        check_node(items, &format!("{at} items"), depth + 1)?;
    }
    if let Some(extra) = map.get("additionalProperties") {
        check_node(extra, &format!("{at} additionalProperties"), depth + 1)?;
    }
    Ok(())
}

/// The tier of `tool` (its name on the server): `tool_tiers`, else the server's `tier`, else
/// read-only when the configuration trusts annotations and the tool says it only reads, else
/// privileged (each call needs the user's approval).
pub fn tier_of(config: &McpServerConfig, tool: &str, read_only_hint: Option<bool>) -> SafetyTier {
    if let Some(tier) = config.tool_tiers.get(tool) {
        return *tier;
    }
    if let Some(tier) = config.tier {
        return tier;
    }
    if config.trust_annotations && read_only_hint == Some(true) {
        return SafetyTier::ReadOnly;
    }
    SafetyTier::Privileged
}

/// Whether the configuration offers `tool` (its name on the server): in `tools` when that is
/// set, and never in `exclude`.
pub fn allowed(config: &McpServerConfig, tool: &str) -> bool {
    (config.tools.is_empty() || config.tools.iter().any(|t| t == tool))
        && !config.exclude.iter().any(|t| t == tool)
}
