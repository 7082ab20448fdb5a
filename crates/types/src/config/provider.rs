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
    /// Anthropic only: declare the `memory` tool (files dialect) as Anthropic's native
    /// `memory_20250818` tool instead of a custom tool with a JSON schema.
    pub native_memory_tool: bool,
    /// Anthropic only: `anthropic-beta` header values sent when the native memory tool is
    /// declared (default `["context-management-2025-06-27"]`).
    pub anthropic_beta: Vec<String>,
}

/// The `anthropic-beta` value Anthropic's memory tool is documented with.
pub const MEMORY_TOOL_BETA: &str = "context-management-2025-06-27";

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
            native_memory_tool: true,
            anthropic_beta: vec![MEMORY_TOOL_BETA.into()],
        }
    }
}

impl ProviderConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_base_url(&self.base_url).map_err(|problem| {
            ConfigError::new(
                "provider.base_url",
                format!("{problem}, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1"),
            )
        })?;
        if self.model.trim().is_empty() {
            return Err(ConfigError::new(
                "provider.model",
                "must name a model, e.g. gpt-4o-mini",
            ));
        }
        if let Some(var) = &self.api_key_env {
            validate_env_name("provider.api_key_env", var)?;
        }
        if let Some(bad) = self.anthropic_beta.iter().find(|b| {
            b.is_empty()
                || !b
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        }) {
            return Err(ConfigError::new(
                "provider.anthropic_beta",
                format!(
                    "{bad:?} is not a beta name: use letters, digits, '-', '_' or '.', e.g. \
                     {MEMORY_TOOL_BETA}"
                ),
            ));
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

/// What is wrong with `url` as a base URL: `http(s)://host[:port][/path]`, nothing else.
fn check_base_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or("must start with http:// or https://")?;
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".into());
    }
    if rest.contains(['?', '#']) {
        return Err("must not have a query (?) or fragment (#)".into());
    }
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.contains('@') {
        return Err("must not hold credentials: put the key in the api_key_env variable".into());
    }
    let bracketed = authority.starts_with('[');
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (addr, after) = v6.split_once(']').ok_or("has an unclosed [ in its host")?;
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err(format!("has a malformed IPv6 host [{addr}]"));
        }
        match after {
            "" => (addr, None),
            _ => (
                addr,
                Some(after.strip_prefix(':').ok_or("has text after its ]")?),
            ),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("has no host".into());
    }
    let host_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    // (An IPv6 host was checked above.)
    if !bracketed
        && (!host.chars().all(host_ok) || host.starts_with(['.', '-']) || host.contains(".."))
    {
        return Err(format!("has a malformed host `{host}`"));
    }
    if let Some(port) = port
        && !port.parse::<u16>().is_ok_and(|p| p > 0)
    {
        return Err(format!("has a malformed port `{port}` (1 to 65535)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_checked_at_load() {
        let check = |url: &str, ok: bool| {
            let config = ProviderConfig {
                base_url: url.into(),
                ..ProviderConfig::default()
            };
            let result = config.validate();
            assert_eq!(result.is_ok(), ok, "{url}: {result:?}");
            if let Err(e) = result {
                assert_eq!(e.setting, "provider.base_url", "{url}");
            }
        };
        for good in [
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1/",
            "http://127.0.0.1:11434/v1",
            "http://localhost:8080",
            "http://[::1]:8000/v1",
            "https://api.anthropic.com",
            "http://my_host.lan/v1",
        ] {
            check(good, true);
        }
        for bad in [
            "api.openai.com/v1",
            "ftp://x",
            "http://",
            "https:///v1",
            "http://:8080/v1",
            "http://localhost:abc/v1",
            "http://localhost:99999",
            "http://localhost:0",
            "http://local host/v1",
            "https://api.openai.com/v1 ",
            "http://exa..mple.com",
            "http://[::1/v1",
            "http://[::1]x/v1",
            "http://user:pw@host/v1",
            "https://api.openai.com/v1?x=1",
            "https://api.openai.com/v1#frag",
            "http://hé.com",
        ] {
            check(bad, false);
        }
    }

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
