//! `[provider]`: which LLM endpoint the agent talks to.

use serde::{Deserialize, Serialize};

use super::{ConfigError, memory::validate_env_name};

/// The wire format of the endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server).
    #[default]
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

/// `[provider]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// e.g. `https://api.openai.com/v1`, `https://openrouter.ai/api/v1`, `http://127.0.0.1:11434/v1`,
    /// `https://api.anthropic.com`.
    pub base_url: String,
    pub model: String,
    /// Environment variable holding the API key. `""` means no key (local servers without auth);
    /// leaving the setting out keeps the default, `OPENAI_API_KEY`.
    #[serde(deserialize_with = "empty_as_none")]
    pub api_key_env: Option<String>,
    /// Seconds before a request is abandoned (streaming: the wait for the response, and the
    /// longest silence between chunks). A timed-out request is retried once.
    pub request_timeout_secs: u64,
    /// Retries on 429, 5xx and connection errors.
    pub max_retries: u32,
    /// The model's context window in tokens.
    pub context_window: u32,
    /// Upper bound on tokens generated per call.
    pub max_output_tokens: u32,
}

/// `""` → `None`, so a TOML file can say "no key" even though the default names one.
fn empty_as_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value: Option<String> = Option::deserialize(d)?;
    Ok(value.filter(|v| !v.is_empty()))
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            kind: ProviderKind::Openai,
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o-mini".into(),
            api_key_env: Some("OPENAI_API_KEY".into()),
            request_timeout_secs: 60,
            max_retries: 3,
            context_window: 128_000,
            max_output_tokens: 4096,
        }
    }
}

impl ProviderConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(ConfigError::new(
                "provider.base_url",
                "must start with http:// or https://",
            ));
        }
        if self.model.trim().is_empty() {
            return Err(ConfigError::new(
                "provider.model",
                "must name a model, e.g. gpt-4o-mini",
            ));
        }
        if let Some(var) = &self.api_key_env {
            validate_env_name("provider.api_key_env", var)?;
        }
        if self.request_timeout_secs == 0 {
            return Err(ConfigError::new(
                "provider.request_timeout_secs",
                "must be at least 1",
            ));
        }
        if self.context_window < 1024 {
            return Err(ConfigError::new(
                "provider.context_window",
                "must be at least 1024 tokens",
            ));
        }
        if self.max_output_tokens == 0 || self.max_output_tokens >= self.context_window {
            return Err(ConfigError::new(
                "provider.max_output_tokens",
                "must be at least 1 and below context_window",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_api_key_env_means_no_key() {
        let parse = |json: &str| {
            serde_json::from_str::<ProviderConfig>(json)
                .unwrap()
                .api_key_env
        };
        assert_eq!(parse(r#"{"api_key_env": ""}"#), None);
        assert_eq!(
            parse(r#"{"api_key_env": "OPENROUTER_API_KEY"}"#),
            Some("OPENROUTER_API_KEY".into())
        );
        assert_eq!(parse("{}"), Some("OPENAI_API_KEY".into()));
    }
}
