//! `[tools.web]`: the `web_fetch` and `web_search` tools, off unless enabled.

use serde::{Deserialize, Serialize};

use super::{ConfigError, Host};

/// `[tools.web]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Offer `web_fetch` (and `web_search` when `[tools.web.search]` is set). Off by default.
    pub enabled: bool,
    /// Hosts `web_fetch` may reach although they resolve to a loopback, private, link-local or
    /// other non-public address (e.g. `"wiki.home.arpa"`, `"127.0.0.1"`). Exact names, no patterns.
    pub allow_hosts: Vec<String>,
    /// Longest a fetch or a search may take, connection and body included (1–300).
    pub timeout_secs: u64,
    /// Most bytes of a page's (decompressed) body read; the rest is not downloaded.
    pub max_bytes: u64,
    /// Characters of a page shown when the call names no `max_chars`.
    pub max_chars: u32,
    /// The search backend; no `web_search` without it.
    pub search: Option<WebSearchConfig>,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            allow_hosts: Vec::new(),
            timeout_secs: 20,
            max_bytes: 5 * 1024 * 1024,
            max_chars: 20_000,
            search: None,
        }
    }
}

/// Longest `max_chars` a call (or the configuration) may ask for.
pub const MAX_WEB_CHARS: u32 = 200_000;

/// Where `web_search` sends its queries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchBackend {
    /// A SearXNG instance's JSON API (`<url>/search?format=json`), usually self-hosted.
    #[default]
    Searxng,
    /// Brave Search's web search API; key from `api_key_env` (default `BRAVE_API_KEY`).
    Brave,
    /// Tavily's search API; key from `api_key_env` (default `TAVILY_API_KEY`).
    Tavily,
}

impl SearchBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Searxng => "searxng",
            Self::Brave => "brave",
            Self::Tavily => "tavily",
        }
    }
}

/// `[tools.web.search]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchConfig {
    pub backend: SearchBackend,
    /// The SearXNG instance (required for it), or another endpoint for Brave or Tavily.
    pub url: Option<String>,
    /// The environment variable holding the hosted API's key.
    pub api_key_env: Option<String>,
    /// Results returned when the call names no `count` (1–20).
    pub count: u32,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        Self {
            backend: SearchBackend::Searxng,
            url: None,
            api_key_env: None,
            count: 5,
        }
    }
}

impl WebSearchConfig {
    /// The environment variable read for the key: the configured one or the backend's usual one
    /// (none for SearXNG).
    pub fn key_env(&self) -> Option<String> {
        self.api_key_env
            .clone()
            .filter(|n| !n.is_empty())
            .or(match self.backend {
                SearchBackend::Searxng => None,
                SearchBackend::Brave => Some("BRAVE_API_KEY".to_owned()),
                SearchBackend::Tavily => Some("TAVILY_API_KEY".to_owned()),
            })
    }
}

impl WebConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=300).contains(&self.timeout_secs) {
            return Err(ConfigError::new(
                "tools.web.timeout_secs",
                "must be between 1 and 300 seconds",
            ));
        }
        if !(1024..=256 * 1024 * 1024).contains(&self.max_bytes) {
            return Err(ConfigError::new(
                "tools.web.max_bytes",
                "must be between 1024 and 268435456 (256 MiB)",
            ));
        }
        if !(100..=MAX_WEB_CHARS).contains(&self.max_chars) {
            return Err(ConfigError::new(
                "tools.web.max_chars",
                format!("must be between 100 and {MAX_WEB_CHARS}"),
            ));
        }
        for host in &self.allow_hosts {
            Host::parse(host).map_err(|e| {
                ConfigError::new(
                    "tools.web.allow_hosts",
                    format!("{host:?} {e}; e.g. \"wiki.home.arpa\""),
                )
            })?;
        }
        let Some(search) = &self.search else {
            return Ok(());
        };
        if !(1..=20).contains(&search.count) {
            return Err(ConfigError::new(
                "tools.web.search.count",
                "must be between 1 and 20",
            ));
        }
        match &search.url {
            Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Err(ConfigError::new(
                    "tools.web.search.url",
                    format!("`{url}` must start with http:// or https://"),
                ))
            }
            None if search.backend == SearchBackend::Searxng => Err(ConfigError::new(
                "tools.web.search.url",
                "the SearXNG backend needs the instance's address, e.g. url = \"http://127.0.0.1:8888\"",
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<(), String> {
        let config: WebConfig = serde_json::from_str(json).map_err(|e| e.to_string())?;
        config.validate().map_err(|e| e.to_string())
    }

    #[test]
    fn web_settings_are_checked() {
        assert!(parse("{}").is_ok());
        assert!(
            parse(r#"{"enabled": true, "allow_hosts": ["wiki.lan", "10.0.0.2", "::1"]}"#).is_ok()
        );
        assert!(parse(r#"{"allow_hosts": ["Wiki.LAN.", "[fd00::2]", "my_box-2.lan"]}"#).is_ok());
        for (entry, says) in [
            ("http://wiki.lan/", "is not bare"),
            ("wiki.lan:8080", "is not bare"),
            ("*.lan", "is a pattern"),
            ("wiki lan", "is not a host name"),
            ("-wiki.lan", "is not a host name"),
            ("10.0.0.256", "looks like an IPv4 address"),
            ("", "is empty"),
        ] {
            let json = format!(r#"{{"allow_hosts": ["wiki.lan", {entry:?}]}}"#);
            let bad = parse(&json).unwrap_err();
            assert!(bad.contains("tools.web.allow_hosts"), "{entry:?}: {bad}");
            assert!(bad.contains(says), "{entry:?}: {bad}");
        }
        assert!(parse(r#"{"timeout_secs": 0}"#).is_err());
        let searx = parse(r#"{"search": {"backend": "searxng"}}"#).unwrap_err();
        assert!(searx.contains("SearXNG"), "{searx}");
        assert!(parse(r#"{"search": {"url": "http://127.0.0.1:8888"}}"#).is_ok());
        assert!(parse(r#"{"search": {"backend": "brave"}}"#).is_ok());
        assert!(parse(r#"{"search": {"backend": "bing"}}"#).is_err());
        let brave: WebSearchConfig =
            serde_json::from_str(r#"{"backend": "brave"}"#).unwrap_or_default();
        assert_eq!(brave.key_env().as_deref(), Some("BRAVE_API_KEY"));
    }
}
