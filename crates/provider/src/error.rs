//! [`ProviderError`]: every way a call to an LLM endpoint can fail, each with what to fix.

use std::time::Duration;

/// A failed provider call. Messages name the setting or environment variable to check and never
/// contain the API key.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The configuration cannot work (bad URL, empty model, ...).
    #[error(transparent)]
    Config(#[from] types::ConfigError),

    /// `provider.api_key_env` names a variable that is not set (or is empty).
    #[error(
        "the API key is missing: set the environment variable `{env_var}` (named by provider.api_key_env)"
    )]
    MissingApiKey { env_var: String },

    /// The key cannot be sent in an HTTP header (control characters, non-ASCII).
    #[error(
        "the API key in environment variable `{env_var}` contains characters not allowed in an HTTP header"
    )]
    InvalidApiKey { env_var: String },

    /// 401 or 403.
    #[error("authentication failed (HTTP {status}): {}; provider said: {detail}", auth_hint(.env_var.as_deref()))]
    Auth {
        status: u16,
        env_var: Option<String>,
        detail: String,
    },

    /// 404: wrong model name or wrong base URL.
    #[error(
        "not found (HTTP 404) at {url}: check provider.model (`{model}`) and provider.base_url; provider said: {detail}"
    )]
    NotFound {
        url: String,
        model: String,
        detail: String,
    },

    /// No connection could be made (refused, DNS failure, reset before a response).
    #[error(
        "cannot reach {base_url} ({reason}): check provider.base_url and that the server is running"
    )]
    Unreachable {
        base_url: String,
        reason: String,
        #[source]
        source: Option<reqwest::Error>,
    },

    /// 429. `retry_after` is the server's `Retry-After`, when it sent one.
    #[error("rate limited (HTTP 429){}: {detail}", retry_after_text(*.retry_after))]
    RateLimited {
        retry_after: Option<Duration>,
        detail: String,
    },

    /// 5xx (and 408): the provider failed; retrying may help.
    #[error("the provider failed (HTTP {status}): {detail}")]
    Server { status: u16, detail: String },

    /// Any other 4xx: the request itself was refused; retrying will not help.
    #[error("the provider rejected the request (HTTP {status}): {detail}")]
    BadRequest { status: u16, detail: String },

    /// No response (or, while streaming, no data) within the allowed time.
    #[error(
        "{phase} from {base_url} within {}s: raise provider.request_timeout_secs or check the server",
        .after.as_secs_f64()
    )]
    Timeout {
        phase: TimeoutPhase,
        base_url: String,
        after: Duration,
    },

    /// The connection dropped, or the stream ended, before the reply was complete.
    #[error("the reply from {base_url} was cut off before it finished: {reason}")]
    Interrupted {
        base_url: String,
        reason: String,
        #[source]
        source: Option<reqwest::Error>,
    },

    /// The provider sent something that is not the expected wire format.
    #[error("the provider sent a response that could not be understood: {detail}")]
    BadResponse { detail: String },

    /// The HTTP client could not be built or the request could not be formed.
    #[error("HTTP client error: {source}")]
    Http {
        #[source]
        source: reqwest::Error,
    },
}

/// What was being waited for when a [`ProviderError::Timeout`] fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// The whole request (non-streaming) or the response headers (streaming).
    Response,
    /// The next chunk of a stream that had already started.
    StreamIdle,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Response => "no response",
            TimeoutPhase::StreamIdle => "the stream went silent: no data",
        })
    }
}

impl ProviderError {
    /// Whether sending the same request again may succeed: rate limits, server errors, connection
    /// failures, timeouts and cut-off replies.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimited { .. }
            | ProviderError::Server { .. }
            | ProviderError::Unreachable { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::Interrupted { .. } => true,
            ProviderError::Config(_)
            | ProviderError::MissingApiKey { .. }
            | ProviderError::InvalidApiKey { .. }
            | ProviderError::Auth { .. }
            | ProviderError::NotFound { .. }
            | ProviderError::BadRequest { .. }
            | ProviderError::BadResponse { .. }
            | ProviderError::Http { .. } => false,
        }
    }

    /// The wait the server asked for, if it sent `Retry-After`.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Why the call failed in a few words, for a status line ("timed out", "HTTP 503"); no
    /// URLs, no provider text.
    pub fn short_reason(&self) -> String {
        match self {
            ProviderError::RateLimited { .. } => "rate limited".into(),
            ProviderError::Server { status, .. } => format!("HTTP {status}"),
            ProviderError::Unreachable { .. } => "cannot reach the provider".into(),
            ProviderError::Timeout { .. } => "timed out".into(),
            ProviderError::Interrupted { .. } => "reply cut off".into(),
            ProviderError::Auth { status, .. } | ProviderError::BadRequest { status, .. } => {
                format!("HTTP {status}")
            }
            ProviderError::NotFound { .. } => "HTTP 404".into(),
            ProviderError::Config(_)
            | ProviderError::MissingApiKey { .. }
            | ProviderError::InvalidApiKey { .. }
            | ProviderError::BadResponse { .. }
            | ProviderError::Http { .. } => "failed".into(),
        }
    }

    pub(crate) fn bad_response(detail: impl Into<String>) -> Self {
        ProviderError::BadResponse {
            detail: detail.into(),
        }
    }
}

fn auth_hint(env_var: Option<&str>) -> String {
    match env_var {
        Some(var) => format!("check the API key in environment variable `{var}`"),
        None => "the endpoint wants an API key: set provider.api_key_env".to_owned(),
    }
}

fn retry_after_text(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!(", retry after {}s", d.as_secs_f64()),
        None => String::new(),
    }
}
