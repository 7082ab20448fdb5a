//! What is stored is what is screened, for edits: an edit (`str_replace`, `insert` of the
//! `memory` tool) computes the text it stores inside the tool, so the governed call in progress
//! hands its surface policy down ([`WRITE_POLICY`]) and the tool screens the result with
//! [`screen_edit`]; and a redacted write's answer says what was redacted ([`tell_redacted`]).

use serde_json::{Value, json};
use types::{AuditTag, SurfacePolicy};

use super::screen::{merge_counts, screen_text};
use crate::ToolError;

tokio::task_local! {
    /// The surface policy of the governed write in progress, set by [`Governance::govern`]
    /// around the tool, for an edit that screens the text it computes ([`screen_edit`]).
    pub(super) static WRITE_POLICY: SurfacePolicy;
}

/// Screens the text an edit is about to store (a `/memories` file after `str_replace` or
/// `insert`): the result, not the fragments, so a secret completed from clean pieces is caught.
/// Under the policy of the governed call in progress (the agent's defaults outside one).
/// Returns what was redacted (`field: kind`, its counts added to the write's audit `tag`), or
/// the `PII_DETECTED` refusal.
pub(crate) fn screen_edit(
    field: &str,
    text: &mut String,
    tag: Option<&mut AuditTag>,
) -> Result<Vec<String>, ToolError> {
    let policy = WRITE_POLICY
        .try_with(|p| *p)
        .unwrap_or_else(|_| types::SurfacesConfig::default().policy(types::Surface::Agent));
    let screened = screen_text(&policy, field, text)?;
    if let Some(tag) = tag {
        merge_counts(&mut tag.redactions, &screened.counts);
    }
    Ok(screened.fields)
}

/// Says in a write's answer which fields had values redacted: a `redacted` list in a JSON
/// object, a closing line in text.
pub(crate) fn tell_redacted(output: String, redacted: &[String]) -> String {
    if redacted.is_empty() {
        return output;
    }
    if let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(&output) {
        map.insert("redacted".into(), json!(redacted));
        return Value::Object(map).to_string();
    }
    format!("{output}\nRedacted before saving: {}.", redacted.join(", "))
}
