//! The one error type of the crate. Every message is written for the model: short, saying what was
//! wrong and what to do, and free of host paths, SQL and stack traces.

use std::time::Duration;

/// Why a tool call failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The model named a tool that is not registered.
    #[error("unknown tool `{name}`; available tools: {available}")]
    UnknownTool { name: String, available: String },

    /// Two tools with the same name were registered.
    #[error("a tool named `{name}` is already registered")]
    DuplicateTool { name: String },

    /// The arguments were not parseable JSON.
    #[error(
        "arguments are not valid JSON ({reason}); send one JSON object, like {{\"path\": \"shared/notes.md\"}}"
    )]
    InvalidJson { reason: String },

    /// An argument is missing, unknown, or of the wrong type or range.
    #[error("`{field}` must be {expected}")]
    InvalidArguments { field: String, expected: String },

    /// The security policy refused the request; `rule` says which rule, never a host path.
    #[error("{rule}")]
    Denied { rule: String },

    /// The thing asked for does not exist. `what` is workspace-relative.
    #[error("{what} was not found{hint}")]
    NotFound { what: String, hint: String },

    /// The tool did not finish within its time limit.
    #[error("`{tool}` timed out after {after:?}; try a smaller request")]
    Timeout { tool: String, after: Duration },

    /// The call was stopped (timeout or cancellation) after it may have changed something, and it
    /// did not report back in time: it may or may not have happened. `check` says how to find out.
    #[error(
        "`{tool}` was stopped before it reported back, so it may or may not have happened; {check}"
    )]
    OutcomeUnknown { tool: String, check: String },

    /// The turn was cancelled while the tool ran.
    #[error("cancelled")]
    Cancelled,

    /// A governance stage refused the call (permission, rate limit, PII or secret): shown as the
    /// ADR's error object `{"type":"error","error":{"code":…,"message":…,"details":{…}}}`.
    #[error("{}", governed_json(code, message, details))]
    Governed {
        code: &'static str,
        message: String,
        details: serde_json::Value,
    },

    /// The tool ran and failed. `message` is already safe to show.
    #[error("{message}")]
    Execution {
        message: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

fn governed_json(code: &str, message: &str, details: &serde_json::Value) -> String {
    serde_json::json!({
        "type": "error",
        "error": {"code": code, "message": message, "details": details},
    })
    .to_string()
}

impl ToolError {
    /// A governance refusal with the ADR's `code` (`PERMISSION_DENIED`, `PII_DETECTED`,
    /// `RATE_LIMITED`).
    pub fn governed(code: &'static str, message: String, details: serde_json::Value) -> Self {
        Self::Governed {
            code,
            message,
            details,
        }
    }

    pub fn invalid(field: impl Into<String>, expected: impl Into<String>) -> Self {
        Self::InvalidArguments {
            field: field.into(),
            expected: expected.into(),
        }
    }

    pub fn denied(rule: impl Into<String>) -> Self {
        Self::Denied { rule: rule.into() }
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::NotFound {
            what: what.into(),
            hint: String::new(),
        }
    }

    pub fn execution(message: impl Into<String>) -> Self {
        Self::Execution {
            message: message.into(),
            source: None,
        }
    }

    /// An execution failure that keeps its cause for logs (the cause is never shown to the model).
    pub fn execution_with(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Execution {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// A short, stable name of the kind, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::DuplicateTool { .. } => "duplicate_tool",
            Self::InvalidJson { .. } => "invalid_json",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::Denied { .. } => "denied",
            Self::NotFound { .. } => "not_found",
            Self::Timeout { .. } => "timeout",
            Self::OutcomeUnknown { .. } => "outcome_unknown",
            Self::Cancelled => "cancelled",
            Self::Governed { code, .. } => match *code {
                "PERMISSION_DENIED" => "permission_denied",
                "PII_DETECTED" => "pii_detected",
                "RATE_LIMITED" => "rate_limited",
                _ => "governed",
            },
            Self::Execution { .. } => "execution",
        }
    }

    /// True when the same call may succeed if simply tried again.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }
}
