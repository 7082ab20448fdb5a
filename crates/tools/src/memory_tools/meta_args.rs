//! The optional organising arguments of the memory tools: `category`, `tags`, `expires_in` (a
//! duration like `3d`) or `expires_at` (an RFC 3339 instant), their schema fragments, and how they
//! become the store's [`NoteMetadata`], [`MetadataPatch`] and search filters.

use chrono::{DateTime, Duration, Utc};
use memory::{Category, MAX_TAG_CHARS, MAX_TAGS, MetadataPatch, NoteMetadata};
use serde_json::{Value, json};

use crate::ToolError;

/// Longest expiry accepted from a duration (ten years).
const MAX_EXPIRES_IN_DAYS: i64 = 3650;

pub(crate) fn category_schema() -> Value {
    json!({
        "type": "string",
        "enum": Category::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        "description": "Optional kind of note: fact, pattern (observed behaviour), preference, or capability (your own ability or limitation)."
    })
}

pub(crate) fn tags_schema(description: &str) -> Value {
    json!({
        "type": "array",
        "items": { "type": "string", "minLength": 1, "maxLength": MAX_TAG_CHARS },
        "maxItems": MAX_TAGS,
        "description": description
    })
}

pub(crate) fn expiry_schemas() -> [(&'static str, Value); 2] {
    [
        (
            "expires_in",
            json!({
                "type": "string",
                "description": "Optional: forget the note after this long, e.g. \"3d\", \"12h\", \"2w\" (for things only true for a while)."
            }),
        ),
        (
            "expires_at",
            json!({
                "type": "string",
                "description": "Optional: forget the note at this instant (RFC 3339, e.g. \"2026-12-01T00:00:00Z\"). Use instead of expires_in."
            }),
        ),
    ]
}

/// Adds `category`, `tags`, `expires_in` and `expires_at` (all optional) to a save or update schema.
pub(crate) fn add_organising_properties(schema: &mut Value) {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("category".into(), category_schema());
        props.insert(
            "tags".into(),
            tags_schema("Optional short labels, e.g. [\"travel\", \"project:oxydra\"]."),
        );
        for (name, schema) in expiry_schemas() {
            props.insert(name.into(), schema);
        }
    }
}

fn invalid(field: &str, expected: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments {
        field: field.into(),
        expected: expected.into(),
    }
}

pub(crate) fn category_arg(args: &Value) -> Result<Option<Category>, ToolError> {
    match args.get("category") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| invalid("category", "one of fact, pattern, preference, capability")),
        Some(_) => Err(invalid("category", "a string")),
    }
}

pub(crate) fn tags_arg(args: &Value) -> Result<Option<Vec<String>>, ToolError> {
    let expected =
        format!("a list of at most {MAX_TAGS} short labels (1 to {MAX_TAG_CHARS} characters)");
    match args.get("tags") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => {
            let tags: Option<Vec<String>> = items
                .iter()
                .map(|t| t.as_str().map(|t| t.trim().to_owned()))
                .collect();
            match tags {
                Some(tags)
                    if tags.len() <= MAX_TAGS
                        && tags
                            .iter()
                            .all(|t| !t.is_empty() && t.chars().count() <= MAX_TAG_CHARS) =>
                {
                    Ok(Some(tags))
                }
                _ => Err(invalid("tags", expected)),
            }
        }
        Some(_) => Err(invalid("tags", expected)),
    }
}

/// `3d`, `12h`, `30m`, `45s`, `2w` (a whole number and one unit).
fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let unit = text.chars().last()?;
    let n: i64 = text[..text.len() - unit.len_utf8()].trim().parse().ok()?;
    if n <= 0 {
        return None;
    }
    let d = match unit {
        's' => Duration::try_seconds(n)?,
        'm' => Duration::try_minutes(n)?,
        'h' => Duration::try_hours(n)?,
        'd' => Duration::try_days(n)?,
        'w' => Duration::try_weeks(n)?,
        _ => return None,
    };
    (d <= Duration::days(MAX_EXPIRES_IN_DAYS)).then_some(d)
}

/// The expiry asked for: `None` when neither field is given.
pub(crate) fn expiry_arg(
    args: &Value,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, ToolError> {
    let text = |field: &str| args.get(field).filter(|v| !v.is_null());
    match (text("expires_in"), text("expires_at")) {
        (Some(_), Some(_)) => Err(invalid(
            "expires_in",
            "either expires_in or expires_at, not both",
        )),
        (Some(v), None) => v
            .as_str()
            .and_then(parse_duration)
            .map(|d| Some(now + d))
            .ok_or_else(|| invalid("expires_in", "a positive duration like \"3d\", \"12h\", \"30m\" or \"2w\" (at most 10 years)")),
        (None, Some(v)) => {
            let at = v
                .as_str()
                .and_then(|s| DateTime::parse_from_rfc3339(s.trim()).ok())
                .map(|t| t.with_timezone(&Utc))
                .ok_or_else(|| invalid("expires_at", "an RFC 3339 instant like \"2026-12-01T00:00:00Z\""))?;
            if at <= now {
                return Err(invalid("expires_at", "an instant in the future"));
            }
            Ok(Some(at))
        }
        (None, None) => Ok(None),
    }
}

/// The time-to-live the expiry arguments ask for, in seconds (`None`: no expiry, or one that is
/// not valid — the tool refuses that itself).
pub(crate) fn ttl_arg(args: &Value) -> Option<u64> {
    let now = Utc::now();
    let at = expiry_arg(args, now).ok().flatten()?;
    u64::try_from((at - now).num_seconds())
        .ok()
        .map(|s| s.max(1))
}

/// The metadata of a new note from `memory_save`'s arguments.
pub(crate) fn save_metadata(args: &Value) -> Result<NoteMetadata, ToolError> {
    Ok(NoteMetadata {
        category: category_arg(args)?,
        tags: tags_arg(args)?.unwrap_or_default(),
        expires_at: expiry_arg(args, Utc::now())?,
        ..NoteMetadata::default()
    })
}

/// The metadata changes of `memory_update`'s arguments (fields not given are kept).
pub(crate) fn update_patch(args: &Value) -> Result<MetadataPatch, ToolError> {
    Ok(MetadataPatch {
        category: category_arg(args)?,
        tags: tags_arg(args)?,
        expires_at: expiry_arg(args, Utc::now())?.map(Some),
        ..MetadataPatch::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3d"), Some(Duration::days(3)));
        assert_eq!(parse_duration(" 12h "), Some(Duration::hours(12)));
        assert_eq!(parse_duration("2w"), Some(Duration::weeks(2)));
        for bad in ["", "d", "0d", "-1d", "3y", "1.5h", "99999d"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn arguments() {
        let now = Utc::now();
        let args = json!({ "category": "preference", "tags": ["a", " b "], "expires_in": "1h" });
        assert_eq!(
            category_arg(&args).ok().flatten(),
            Some(Category::Preference)
        );
        assert_eq!(
            tags_arg(&args).ok().flatten(),
            Some(vec!["a".into(), "b".into()])
        );
        assert!(
            expiry_arg(&args, now)
                .ok()
                .flatten()
                .is_some_and(|t| t == now + Duration::hours(1))
        );
        assert!(category_arg(&json!({ "category": "mood" })).is_err());
        assert!(tags_arg(&json!({ "tags": "a" })).is_err());
        assert!(
            expiry_arg(
                &json!({ "expires_in": "1h", "expires_at": "2030-01-01T00:00:00Z" }),
                now
            )
            .is_err()
        );
        assert!(expiry_arg(&json!({ "expires_at": "2000-01-01T00:00:00Z" }), now).is_err());
        assert!(update_patch(&json!({})).is_ok_and(|p| p.is_empty()));
    }
}
