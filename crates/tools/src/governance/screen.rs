//! The PII and secret passes: screening a write's free-text arguments (redact in place, or
//! refuse with `PII_DETECTED`), and redacting a result on the way out.

use serde_json::{Value, json};
use types::{PiiAction, SecretAction, SurfacePolicy};

use super::PII_DETECTED;
use super::pii::{self, PiiCounts, PiiKind};
use crate::{OutputFormat, ToolError};

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

/// Scans the free-text arguments of a write. Redacts what the policy says to redact (in place)
/// and returns the counts; or refuses with `PII_DETECTED` (args untouched).
pub(super) fn screen_write(
    policy: &SurfacePolicy,
    fields: &[&str],
    args: &mut Value,
) -> Result<PiiCounts, (ToolError, PiiCounts)> {
    let _span = tracing::info_span!("pii_in").entered();
    let mut found = PiiCounts::new();
    let mut scan = |s: &mut String| {
        for f in pii::find(s) {
            *found.entry(f.kind).or_default() += 1;
        }
    };
    for field in fields {
        if let Some(v) = args.get_mut(*field) {
            pii::each_string(v, &mut scan);
        }
    }
    if found.is_empty() {
        return Ok(found);
    }
    let secrets = found.contains_key(&PiiKind::Secret);
    let personal: Vec<&str> = found
        .keys()
        .filter(|k| **k != PiiKind::Secret)
        .map(|k| k.as_str())
        .collect();
    if secrets && policy.secrets == SecretAction::Reject {
        return Err((
            ToolError::governed(
                PII_DETECTED,
                "this looks like a secret (an API key, token, password or private key): keep \
                 secrets out of memory. Save the note without it (say where the secret is kept, \
                 not what it is); nothing was saved"
                    .into(),
                json!({"redacted_fields": ["secret"]}),
            ),
            found,
        ));
    }
    if !personal.is_empty() && policy.pii == PiiAction::Reject {
        return Err((
            ToolError::governed(
                PII_DETECTED,
                format!(
                    "PII detected in memory operation ({}): this surface does not store personal \
                     data; save the note without it. Nothing was saved",
                    personal.join(", ")
                ),
                json!({"redacted_fields": personal}),
            ),
            found,
        ));
    }
    let redact_secret = secrets;
    let redact_personal = policy.pii == PiiAction::Redact;
    if !redact_secret && !redact_personal {
        return Ok(PiiCounts::new());
    }
    let mut counts = PiiCounts::new();
    let mut apply = |s: &mut String| {
        let (out, c) = pii::redact(s, |kind| {
            if kind == PiiKind::Secret {
                redact_secret
            } else {
                redact_personal
            }
        });
        *s = out;
        for (k, n) in c {
            *counts.entry(k).or_default() += n;
        }
    };
    for field in fields {
        if let Some(v) = args.get_mut(*field) {
            pii::each_string(v, &mut apply);
        }
    }
    Ok(counts)
}

/// Redacts personal data and secrets from a result: inside each JSON string when the output is
/// JSON (so it stays valid), or in the text.
pub(super) fn redact_output(output: &str, format: OutputFormat) -> (String, PiiCounts) {
    if format == OutputFormat::Json
        && let Ok(mut value) = serde_json::from_str::<Value>(output)
    {
        let mut counts = PiiCounts::new();
        pii::each_string(&mut value, &mut |s: &mut String| {
            let (out, c) = pii::redact(s, |_| true);
            if !c.is_empty() {
                *s = out;
                for (k, n) in c {
                    *counts.entry(k).or_default() += n;
                }
            }
        });
        if counts.is_empty() {
            return (output.to_owned(), counts);
        }
        return (value.to_string(), counts);
    }
    pii::redact(output, |_| true)
}
