//! `[gateway]`: how many connections the user's gateway holds and how long a connection may stay
//! unauthenticated. Unset caps are derived from the open-file limit at start.

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// `[gateway]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayLimitsConfig {
    /// Connections held at once, authenticated or not (unset: the open-file limit less 256, at
    /// most 32,768).
    pub max_connections: Option<u32>,
    /// Connections held at once that have not authenticated; a newer one closes the oldest
    /// (unset: a quarter of `max_connections`, at most 1,024).
    pub max_unauthenticated: Option<u32>,
    /// Seconds from the TCP connection to an accepted `hello`.
    pub auth_timeout_secs: u64,
}

impl Default for GatewayLimitsConfig {
    fn default() -> Self {
        Self {
            max_connections: None,
            max_unauthenticated: None,
            auth_timeout_secs: 5,
        }
    }
}

impl GatewayLimitsConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=300).contains(&self.auth_timeout_secs) {
            return Err(ConfigError::new(
                "gateway.auth_timeout_secs",
                "must be between 1 and 300",
            ));
        }
        if self.max_connections.is_some_and(|n| n < 2) {
            return Err(ConfigError::new(
                "gateway.max_connections",
                "must be at least 2",
            ));
        }
        match (self.max_unauthenticated, self.max_connections) {
            (Some(0), _) => Err(ConfigError::new(
                "gateway.max_unauthenticated",
                "must be at least 1",
            )),
            (Some(unauth), Some(total)) if unauth >= total => Err(ConfigError::new(
                "gateway.max_unauthenticated",
                "must be below max_connections (the rest is kept for authenticated clients)",
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked() {
        let check = |toml_like: GatewayLimitsConfig, setting: Option<&str>| {
            assert_eq!(
                toml_like.validate().err().map(|e| e.setting),
                setting,
                "{toml_like:?}"
            );
        };
        let with = |total, unauth, secs| GatewayLimitsConfig {
            max_connections: total,
            max_unauthenticated: unauth,
            auth_timeout_secs: secs,
        };
        check(GatewayLimitsConfig::default(), None);
        check(with(Some(100), Some(25), 5), None);
        check(with(None, Some(10), 5), None);
        check(
            with(Some(100), Some(100), 5),
            Some("gateway.max_unauthenticated"),
        );
        check(with(None, Some(0), 5), Some("gateway.max_unauthenticated"));
        check(with(Some(1), None, 5), Some("gateway.max_connections"));
        check(with(None, None, 0), Some("gateway.auth_timeout_secs"));
    }
}
