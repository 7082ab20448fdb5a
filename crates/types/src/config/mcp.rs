//! `[mcp.servers.<name>]`: the user's own MCP servers, whose tools the agent is offered as
//! `<name>__<tool>`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::SafetyTier;

/// `[mcp]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// The servers by name (the name prefixes their tools: `<name>__<tool>`).
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// One server: either a program spoken to over stdio (`command`) or a streamable-HTTP endpoint
/// (`url`), never both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// Offer this server's tools (default true).
    pub enabled: bool,
    /// stdio: the program to run (in the shell's confinement, never as the agent).
    pub command: Option<String>,
    /// stdio: its arguments.
    pub args: Vec<String>,
    /// stdio: extra environment variables (nothing of the agent's environment is passed on).
    pub env: BTreeMap<String, String>,
    /// stdio: absolute paths the server may read besides the workspace's `shared/`.
    pub read_paths: Vec<String>,
    /// stdio, container tier: the locally built image the server runs in.
    pub image: Option<String>,
    /// stdio, container tier: whether the server's container has a network (default false).
    pub network: bool,
    /// HTTP: the streamable-HTTP endpoint.
    pub url: Option<String>,
    /// HTTP: extra request headers.
    pub headers: BTreeMap<String, String>,
    /// HTTP: the environment variable holding a bearer token sent as `Authorization`.
    pub bearer_token_env: Option<String>,
    /// Longest one call (and the start) may take, in seconds (1–600).
    pub timeout_secs: u64,
    /// Only these tools are offered (empty: all).
    pub tools: Vec<String>,
    /// These tools are never offered.
    pub exclude: Vec<String>,
    /// The tier of every tool of this server; unset: each call needs approval
    /// (`privileged`) unless `trust_annotations` and the tool says it is read-only.
    pub tier: Option<SafetyTier>,
    /// Per tool tiers, over `tier`.
    pub tool_tiers: BTreeMap<String, SafetyTier>,
    /// Believe the server's `readOnlyHint` annotations (default false).
    pub trust_annotations: bool,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            read_paths: Vec::new(),
            image: None,
            network: false,
            url: None,
            headers: BTreeMap::new(),
            bearer_token_env: None,
            timeout_secs: 30,
            tools: Vec::new(),
            exclude: Vec::new(),
            tier: None,
            tool_tiers: BTreeMap::new(),
            trust_annotations: false,
        }
    }
}

/// Longest server name: it prefixes tool names, which providers cap at 64 characters.
pub const MAX_MCP_SERVER_NAME: usize = 24;

impl McpConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, server) in &self.servers {
            let ok_name = !name.is_empty()
                && name.len() <= MAX_MCP_SERVER_NAME
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && !name.contains("__");
            if !ok_name {
                return Err(ConfigError::new(
                    "mcp.servers",
                    format!(
                        "server name {name:?} must be 1–{MAX_MCP_SERVER_NAME} letters, digits, '-' or '_' (no \"__\")"
                    ),
                ));
            }
            server.validate(name)?;
        }
        Ok(())
    }
}

impl McpServerConfig {
    fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let problem = match (&self.command, &self.url) {
            (Some(_), Some(_)) => Some("set either `command` (stdio) or `url` (HTTP), not both"),
            (None, None) => Some("set `command` (a stdio server) or `url` (an HTTP server)"),
            (Some(c), None) if c.trim().is_empty() => Some("`command` is empty"),
            (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => {
                Some("`url` must start with http:// or https://")
            }
            _ => None,
        };
        if let Some(problem) = problem {
            return Err(ConfigError::new(
                "mcp.servers",
                format!("[mcp.servers.{name}]: {problem}"),
            ));
        }
        if !(1..=600).contains(&self.timeout_secs) {
            return Err(ConfigError::new(
                "mcp.servers",
                format!("[mcp.servers.{name}]: `timeout_secs` must be 1–600"),
            ));
        }
        if let Some(p) = self.read_paths.iter().find(|p| !p.starts_with('/')) {
            return Err(ConfigError::new(
                "mcp.servers",
                format!("[mcp.servers.{name}]: `read_paths` entry {p:?} must be an absolute path"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(command: Option<&str>, url: Option<&str>) -> McpServerConfig {
        McpServerConfig {
            command: command.map(str::to_owned),
            url: url.map(str::to_owned),
            ..McpServerConfig::default()
        }
    }

    fn config(name: &str, server: McpServerConfig) -> McpConfig {
        McpConfig {
            servers: BTreeMap::from([(name.to_owned(), server)]),
        }
    }

    #[test]
    fn a_server_is_stdio_or_http_never_both_nor_neither() {
        assert!(
            config("files", server(Some("python3"), None))
                .validate()
                .is_ok()
        );
        assert!(
            config("web", server(None, Some("http://127.0.0.1:9/mcp")))
                .validate()
                .is_ok()
        );
        let both = config("x", server(Some("a"), Some("http://h/"))).validate();
        assert!(both.unwrap_err().problem.contains("not both"));
        let neither = config("x", server(None, None)).validate();
        assert!(neither.unwrap_err().problem.contains("set `command`"));
        let ftp = config("x", server(None, Some("ftp://h/"))).validate();
        assert!(ftp.unwrap_err().problem.contains("http://"));
    }

    #[test]
    fn names_that_would_make_ambiguous_tool_names_are_refused() {
        for bad in ["", "a__b", "has space", "x".repeat(25).as_str()] {
            let err = config(bad, server(Some("p"), None)).validate().unwrap_err();
            assert!(err.problem.contains("server name"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn read_paths_are_absolute_and_timeouts_bounded() {
        let mut s = server(Some("p"), None);
        s.read_paths = vec!["data".into()];
        assert!(config("x", s.clone()).validate().is_err());
        s.read_paths = vec!["/data".into()];
        s.timeout_secs = 0;
        assert!(config("x", s).validate().is_err());
    }
}
