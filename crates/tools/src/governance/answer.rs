//! What a governed operation hands back, as the closing stages treat it: an [`Answer`] can have
//! the personal data in it redacted (for a surface whose `pii_out` is `redact`) and can tell its
//! caller which written fields were redacted on the way in. A tool's text is a [`ToolText`]; any
//! typed value (a note, a page, a report) is an answer through its serde form, so each surface
//! gets its own type back from [`super::Governance::govern`]. What the operation fails with is a
//! [`Failure`]: a refusal of the admission stages becomes one, and its kind is what the audit row
//! and metrics record.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::edit::tell_redacted;
use super::pii::PiiCounts;
use super::screen::{redact_output, redact_value};
use crate::{OutputFormat, ToolError};

/// A governed operation's result, as the closing stages see it.
pub trait Answer: Sized {
    /// The answer with personal data redacted, and how much was.
    ///
    /// # Errors
    /// An answer that cannot be screened is not handed out.
    fn redact_pii(self) -> Result<(Self, PiiCounts), ToolError>;

    /// The answer telling which fields (`field: kind`) were redacted before saving.
    fn tell_redacted(self, fields: &[String]) -> Self;
}

/// A tool's output: text in its format (JSON stays JSON when redacted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolText {
    pub text: String,
    pub format: OutputFormat,
}

impl Answer for ToolText {
    fn redact_pii(self) -> Result<(Self, PiiCounts), ToolError> {
        let (text, counts) = redact_output(&self.text, self.format);
        Ok((Self { text, ..self }, counts))
    }

    fn tell_redacted(self, fields: &[String]) -> Self {
        Self {
            text: tell_redacted(self.text, fields),
            ..self
        }
    }
}

/// A typed answer, redacted through its serde form: every string in it is screened, and a value
/// that does not read back after redaction is refused rather than handed out unscreened.
impl<T: Serialize + DeserializeOwned> Answer for T {
    fn redact_pii(self) -> Result<(Self, PiiCounts), ToolError> {
        let unscreenable = |e| ToolError::execution_with("the answer could not be screened", e);
        let mut value = serde_json::to_value(&self).map_err(unscreenable)?;
        let counts = redact_value(&mut value);
        if counts.is_empty() {
            return Ok((self, counts));
        }
        Ok((serde_json::from_value(value).map_err(unscreenable)?, counts))
    }

    /// An object answer (a JSON value, a report kept as one) gets a `redacted` list; a typed one
    /// has no place for it and stays as it is.
    fn tell_redacted(self, fields: &[String]) -> Self {
        if fields.is_empty() {
            return self;
        }
        let Ok(Value::Object(mut map)) = serde_json::to_value(&self) else {
            return self;
        };
        map.insert("redacted".into(), serde_json::json!(fields));
        serde_json::from_value(Value::Object(map)).unwrap_or(self)
    }
}

/// What a governed operation fails with: a refusal of the pipeline converts into it, and its
/// kind names the failure in the audit row and the metrics.
pub trait Failure: From<ToolError> {
    fn kind(&self) -> &'static str;
}

impl Failure for ToolError {
    fn kind(&self) -> &'static str {
        ToolError::kind(self)
    }
}
