//! Building a [`Provider`] from `[provider]` config: API key, HTTP client, timeouts, retries.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use types::{ProviderConfig, ProviderKind};

use crate::anthropic::{ANTHROPIC_VERSION, AnthropicProvider};
use crate::openai::{OpenAiProvider, TokenField};
use crate::retry::RetryPolicy;
use crate::transport::Transport;
use crate::{Provider, ProviderError};

/// An API key. Its `Debug` output is redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// Settings that are not part of `agent.toml`: tuned by tests, or supplied by the process that
/// builds the provider.
#[derive(Debug, Clone)]
pub struct ProviderOptions {
    /// The key to send. `None` reads the environment variable named by `provider.api_key_env`.
    pub api_key: Option<ApiKey>,
    /// First backoff step; doubled on each retry, jittered over `[d/2, d)`.
    pub retry_base_delay: Duration,
    pub retry_max_delay: Duration,
    /// A `Retry-After` longer than this is not waited for: the error is returned instead.
    pub max_retry_after: Duration,
    /// TCP/TLS connect limit (never above `request_timeout_secs`).
    pub connect_timeout: Duration,
    /// Longest silence between stream chunks; `None` uses `request_timeout_secs`.
    pub stream_idle_timeout: Option<Duration>,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        Self {
            api_key: None,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            stream_idle_timeout: None,
        }
    }
}

/// The provider `config` describes, with the API key from its environment variable.
pub fn from_config(config: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    from_config_with(config, ProviderOptions::default())
}

/// Like [`from_config`], with explicit [`ProviderOptions`].
pub fn from_config_with(
    config: &ProviderConfig,
    options: ProviderOptions,
) -> Result<Arc<dyn Provider>, ProviderError> {
    config.validate()?;
    let env_var = config.api_key_env.clone();
    let key = api_key(options.api_key, env_var.as_deref())?;
    let base_url = config.base_url.trim_end_matches('/').to_owned();
    let request_timeout = Duration::from_secs(config.request_timeout_secs);
    let invalid_key = || ProviderError::InvalidApiKey {
        env_var: env_var.clone().unwrap_or_default(),
    };
    let (endpoint, headers) = match config.kind {
        ProviderKind::Openai => {
            openai_request(&base_url, key.as_deref()).ok_or_else(invalid_key)?
        }
        ProviderKind::Anthropic => {
            anthropic_request(config, &base_url, key.as_deref()).map_err(|e| match e {
                HeaderError::Key => invalid_key(),
                HeaderError::Config(e) => e.into(),
            })?
        }
    };

    // The same check the HTTP client makes at the first request, made at start instead.
    if let Err(e) = reqwest::Url::parse(&endpoint) {
        return Err(types::ConfigError::new(
            "provider.base_url",
            format!("is not a valid URL ({e})"),
        )
        .into());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(options.connect_timeout.min(request_timeout))
        .user_agent(concat!("oxydra/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|source| ProviderError::Http { source })?;
    let transport = Transport {
        client,
        endpoint,
        base_url: base_url.clone(),
        model: config.model.clone(),
        headers,
        secret: key,
        env_var,
        retry: RetryPolicy {
            max_retries: config.max_retries,
            base_delay: options.retry_base_delay,
            max_delay: options.retry_max_delay,
            max_retry_after: options.max_retry_after,
        },
        request_timeout,
        idle_timeout: options.stream_idle_timeout.unwrap_or(request_timeout),
    };
    Ok(match config.kind {
        ProviderKind::Openai => Arc::new(OpenAiProvider::new(
            transport,
            TokenField::for_base_url(&base_url),
        )),
        ProviderKind::Anthropic => {
            Arc::new(AnthropicProvider::new(transport, config.native_memory_tool))
        }
    })
}

/// The key given, or the one in `env_var` (which must then hold one); `None` without either.
fn api_key(given: Option<ApiKey>, env_var: Option<&str>) -> Result<Option<String>, ProviderError> {
    match (given, env_var) {
        (Some(ApiKey(key)), _) => Ok(Some(key)),
        (None, Some(var)) => match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_owned())),
            _ => Err(ProviderError::MissingApiKey {
                env_var: var.to_owned(),
            }),
        },
        (None, None) => Ok(None),
    }
}

/// A header value that is never logged.
fn secret_header(text: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(text).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// Chat Completions: the endpoint and the bearer key; `None` when the key cannot be a header.
fn openai_request(base_url: &str, key: Option<&str>) -> Option<(String, HeaderMap)> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            secret_header(&format!("Bearer {key}"))?,
        );
    }
    Some((format!("{base_url}/chat/completions"), headers))
}

/// Why Anthropic's headers could not be made.
enum HeaderError {
    /// The key cannot be a header value.
    Key,
    Config(types::ConfigError),
}

/// Messages: the endpoint, the key, the API version and the beta names of the native memory tool.
fn anthropic_request(
    config: &ProviderConfig,
    base_url: &str,
    key: Option<&str>,
) -> Result<(String, HeaderMap), HeaderError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key {
        headers.insert(
            HeaderName::from_static("x-api-key"),
            secret_header(key).ok_or(HeaderError::Key)?,
        );
    }
    headers.insert(
        HeaderName::from_static("anthropic-version"),
        HeaderValue::from_static(ANTHROPIC_VERSION),
    );
    if config.native_memory_tool && !config.anthropic_beta.is_empty() {
        // Validated as plain names by `ProviderConfig::validate`.
        let beta = HeaderValue::from_str(&config.anthropic_beta.join(",")).map_err(|_| {
            HeaderError::Config(types::ConfigError::new(
                "provider.anthropic_beta",
                "holds a character not allowed in a header",
            ))
        })?;
        headers.insert(HeaderName::from_static("anthropic-beta"), beta);
    }
    Ok((format!("{base_url}/v1/messages"), headers))
}
