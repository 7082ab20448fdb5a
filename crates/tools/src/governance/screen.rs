//! The PII and secret passes: screening what a write stores (redact in place, or refuse with
//! `PII_DETECTED`), the result of an edit, the names an audit row keeps, and redacting a result
//! on the way out.
//!
//! The rule is that what is stored is what is screened: every argument of a write except those
//! never stored ([`NOT_STORED`]), with its object keys and numbers; an edit's resulting text,
//! not its fragments. Free text is redacted as the surface's policy says; a name (a path, a
//! namespace, a key) cannot be redacted without naming something else, so a secret in it, or
//! personal data where the surface redacts or refuses it, refuses the write.

use serde_json::{Value, json};
use types::{PiiAction, SecretAction, SurfacePolicy};

use super::PII_DETECTED;
use super::pii::{self, PiiCounts, PiiKind};
use crate::{OutputFormat, ToolError};

/// Longest text an audit row keeps of a caller-chosen name (client, namespace, key, path).
pub(super) const MAX_AUDIT_NAME_CHARS: usize = 128;

/// A caller-chosen name as the audit log may keep it: secrets and personal data redacted,
/// control characters replaced by `?`, at most [`MAX_AUDIT_NAME_CHARS`] characters (`…` marks
/// a cut).
pub(super) fn audit_name(name: &str) -> String {
    let head: String = name.chars().take(4 * MAX_AUDIT_NAME_CHARS).collect();
    let (redacted, _) = pii::redact(&head, |_| true);
    let mut out: String = redacted
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(MAX_AUDIT_NAME_CHARS)
        .collect();
    if out.chars().count() == MAX_AUDIT_NAME_CHARS
        && redacted.chars().count() > MAX_AUDIT_NAME_CHARS
        || head.len() < name.len()
    {
        out.pop();
        out.push('…');
    }
    out
}

pub(super) fn tag_counts(counts: &PiiCounts) -> Vec<(String, u32)> {
    counts
        .iter()
        .map(|(k, n)| (k.as_str().to_owned(), *n))
        .collect()
}

pub(super) fn merge_counts(into: &mut Vec<(String, u32)>, counts: &PiiCounts) {
    for (kind, n) in counts {
        match into.iter_mut().find(|(k, _)| k == kind.as_str()) {
            Some((_, m)) => *m += n,
            None => into.push((kind.as_str().to_owned(), *n)),
        }
    }
}

/// Arguments of a write that are never stored: they name or check what the call acts on (a note
/// id, a version), choose how it runs (a command, a line, a range, a flag, a time-to-live), or
/// are matched against the stored text (`old_str`). Every other argument is stored somewhere
/// (as text, a path, a namespace, a key, a tag, metadata) and is screened.
const NOT_STORED: [&str; 10] = [
    "note_id",
    "version",
    "command",
    "view_range",
    "insert_line",
    "old_str",
    "ttl_seconds",
    "expires_in",
    "source",
    "allow_similar",
];

/// What screening a write found and did.
#[derive(Debug, Default)]
pub(super) struct Screened {
    /// Kind → how many values were redacted.
    pub counts: PiiCounts,
    /// `field: kind` for each field a value was redacted from, sorted: what the caller is told.
    pub fields: Vec<String>,
}

/// What a pass over one argument found: per kind, and whether the argument is free text (which
/// can be redacted) or names something (a path, a namespace, a key: refused instead, since a
/// redacted name would name something else).
struct Found {
    field: String,
    free_text: bool,
    kinds: PiiCounts,
}

/// Applies `f` to every string, object key and number inside `value`, in place: a changed key
/// renames the entry, a changed number becomes a string.
fn each_text(value: &mut Value, f: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(s) => f(s),
        Value::Number(n) => {
            let mut text = n.to_string();
            f(&mut text);
            if text != n.to_string() {
                *value = Value::String(text);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| each_text(v, f)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (mut key, mut v) in entries {
                f(&mut key);
                each_text(&mut v, f);
                map.insert(key, v);
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// Screens every stored argument of a write (see [`NOT_STORED`]), strings, object keys and
/// numbers alike, each on its normalised view. Free-text fields (`text_fields`) are redacted
/// as the policy says; a secret anywhere, or personal data in a name on a surface that does not
/// allow it, refuses the write with `PII_DETECTED` (args untouched).
pub(super) fn screen_write(
    policy: &SurfacePolicy,
    text_fields: &[&str],
    args: &mut Value,
) -> Result<Screened, (ToolError, PiiCounts)> {
    let _span = tracing::info_span!("pii_in").entered();
    let Some(map) = args.as_object_mut() else {
        return Ok(Screened::default());
    };
    let found = find_in_args(map, text_fields);
    if found.is_empty() {
        return Ok(Screened::default());
    }
    refuse_unstorable(policy, &found)?;
    let redact_personal = policy.pii == PiiAction::Redact;
    let select = |kind: PiiKind| kind == PiiKind::Secret || redact_personal;
    let fields = labels(&found, &|f, k| f.free_text && select(k));
    if fields.is_empty() {
        return Ok(Screened::default());
    }
    let mut counts = PiiCounts::new();
    let mut apply = |s: &mut String| {
        let (out, c) = pii::redact(s, select);
        if !c.is_empty() {
            *s = out;
            for (k, n) in c {
                *counts.entry(k).or_default() += n;
            }
        }
    };
    for f in found.iter().filter(|f| f.free_text) {
        if let Some(value) = map.get_mut(&f.field) {
            each_text(value, &mut apply);
        }
    }
    Ok(Screened { counts, fields })
}

/// What each stored argument holds (its name and every text in it), by field.
fn find_in_args(map: &mut serde_json::Map<String, Value>, text_fields: &[&str]) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    for (name, value) in map.iter_mut() {
        if NOT_STORED.contains(&name.as_str()) {
            continue;
        }
        let mut kinds = PiiCounts::new();
        let mut scan = |s: &mut String| {
            for f in pii::find(s) {
                *kinds.entry(f.kind).or_default() += 1;
            }
        };
        let mut key = name.clone();
        scan(&mut key);
        each_text(value, &mut scan);
        if !kinds.is_empty() {
            found.push(Found {
                field: name.clone(),
                free_text: text_fields.contains(&name.as_str()),
                kinds,
            });
        }
    }
    found
}

/// `field: kind` for each kind `pick` keeps, sorted.
fn labels(found: &[Found], pick: &dyn Fn(&Found, PiiKind) -> bool) -> Vec<String> {
    let mut out: Vec<String> = found
        .iter()
        .flat_map(|f| {
            f.kinds
                .keys()
                .filter(|k| pick(f, **k))
                .map(|k| format!("{}: {}", f.field, k.as_str()))
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

/// Refuses a write the policy does not let store what was `found`: a secret (anywhere, or in a
/// name), personal data on a surface that rejects it, personal data in a name.
fn refuse_unstorable(
    policy: &SurfacePolicy,
    found: &[Found],
) -> Result<(), (ToolError, PiiCounts)> {
    let mut all = PiiCounts::new();
    for f in found {
        for (k, n) in &f.kinds {
            *all.entry(*k).or_default() += n;
        }
    }
    let refuse = |message: String, kinds: Vec<&str>, fields: Vec<String>| {
        let error = ToolError::governed(
            PII_DETECTED,
            message,
            json!({"redacted_fields": kinds, "fields": fields}),
        );
        Err((error, all.clone()))
    };
    let secret_in_name = found
        .iter()
        .any(|f| !f.free_text && f.kinds.contains_key(&PiiKind::Secret));
    if all.contains_key(&PiiKind::Secret)
        && (policy.secrets == SecretAction::Reject || secret_in_name)
    {
        return refuse(
            "this looks like a secret (an API key, token, password or private key): keep \
             secrets out of memory. Save the note without it (say where the secret is kept, \
             not what it is); nothing was saved"
                .into(),
            vec!["secret"],
            labels(found, &|_, k| k == PiiKind::Secret),
        );
    }
    let mut kinds: Vec<&str> = all
        .keys()
        .filter(|k| **k != PiiKind::Secret)
        .map(|k| k.as_str())
        .collect();
    kinds.dedup();
    if !kinds.is_empty() && policy.pii == PiiAction::Reject {
        return refuse(
            format!(
                "PII detected in memory operation ({}): this surface does not store personal \
                 data; save the note without it. Nothing was saved",
                kinds.join(", ")
            ),
            kinds,
            labels(found, &|_, k| k != PiiKind::Secret),
        );
    }
    let in_names = labels(found, &|f, k| !f.free_text && k != PiiKind::Secret);
    if !in_names.is_empty() && policy.pii == PiiAction::Redact {
        return refuse(
            format!(
                "personal data in a name ({}): a path, namespace, key or category cannot be \
                 redacted without naming something else; choose a name without it. Nothing \
                 was saved",
                in_names.join(", ")
            ),
            kinds,
            in_names,
        );
    }
    Ok(())
}

/// Screens the text an edit will store (the file after a `str_replace` or `insert`), as a
/// free-text field `field` of a write under `policy`: redacted in place (the labels of what was
/// redacted are returned) or refused with `PII_DETECTED`.
pub(super) fn screen_text(
    policy: &SurfacePolicy,
    field: &str,
    text: &mut String,
) -> Result<Screened, ToolError> {
    let mut args = json!({ field: std::mem::take(text) });
    let result = screen_write(policy, &[field], &mut args);
    if let Some(Value::String(screened)) = args.get_mut(field) {
        *text = std::mem::take(screened);
    }
    result.map_err(|(error, _)| error)
}

/// Redacts personal data and secrets from a result: inside each JSON string when the output is
/// JSON (so it stays valid), or in the text.
pub(super) fn redact_output(output: &str, format: OutputFormat) -> (String, PiiCounts) {
    if format == OutputFormat::Json
        && let Ok(mut value) = serde_json::from_str::<Value>(output)
    {
        let counts = redact_value(&mut value);
        if counts.is_empty() {
            return (output.to_owned(), counts);
        }
        return (value.to_string(), counts);
    }
    pii::redact(output, |_| true)
}

/// Every string of `value` with its personal data redacted; how much was.
pub(super) fn redact_value(value: &mut Value) -> PiiCounts {
    let mut counts = PiiCounts::new();
    pii::each_string(value, &mut |s: &mut String| {
        let (out, c) = pii::redact(s, |_| true);
        if !c.is_empty() {
            *s = out;
            for (k, n) in c {
                *counts.entry(k).or_default() += n;
            }
        }
    });
    counts
}
