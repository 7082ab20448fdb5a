//! `[gateway]`: how many connections the user's gateway holds and how long a connection may stay
//! unauthenticated, how long a request body may take, and how many MCP sessions it holds for how
//! long; where it listens, its TLS certificate and key (both or neither), and the host names it
//! answers to besides loopback and its own address. Unset connection caps are derived from the
//! open-file limit at start.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ConfigError, Host};

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
    /// Seconds an authenticated request's body (an MCP `POST`) may take to arrive.
    pub body_timeout_secs: u64,
    /// MCP sessions (over HTTP) held at once; a new one past it closes the least recently used.
    pub mcp_max_sessions: u32,
    /// Seconds an MCP session may go without a request before it is closed.
    pub mcp_idle_secs: u64,
    /// The address the gateway listens on (unset: 127.0.0.1). Anything else without `tls_cert`
    /// is warned about loudly at start (fine only behind a TLS reverse proxy).
    pub bind: Option<std::net::IpAddr>,
    /// Mark the web client's session cookie `Secure` (browsers reach the gateway over HTTPS,
    /// through a TLS reverse proxy). Always on with `tls_cert`.
    pub secure_cookie: bool,
    /// The gateway's TLS certificate chain (PEM, the server's certificate first): the gateway
    /// then serves only HTTPS and WSS. Set with `tls_key`.
    pub tls_cert: Option<PathBuf>,
    /// The private key of `tls_cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    pub tls_key: Option<PathBuf>,
    /// Host names (or addresses) browsers and clients may reach the gateway by, besides
    /// `localhost`, the loopback addresses and the bound address (any address when bound to
    /// `0.0.0.0` or `::`): e.g. a reverse proxy's `"alice.oxydra.example"`. A request whose
    /// `Host` names anything else is refused (DNS rebinding). Bare names, no port or pattern.
    pub allow_hosts: Vec<String>,
}

impl Default for GatewayLimitsConfig {
    fn default() -> Self {
        Self {
            max_connections: None,
            max_unauthenticated: None,
            auth_timeout_secs: 5,
            body_timeout_secs: 10,
            mcp_max_sessions: 32,
            mcp_idle_secs: 120,
            bind: None,
            secure_cookie: false,
            tls_cert: None,
            tls_key: None,
            allow_hosts: Vec::new(),
        }
    }
}

impl GatewayLimitsConfig {
    /// `allow_hosts`, read; the first entry that is not a bare host name or address is an error
    /// that quotes it and says what is wrong.
    pub fn listed_hosts(&self) -> Result<Vec<Host>, ConfigError> {
        self.allow_hosts
            .iter()
            .map(|entry| {
                Host::parse(entry)
                    .map_err(|e| ConfigError::new("gateway.allow_hosts", format!("{entry:?} {e}")))
            })
            .collect()
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.listed_hosts()?;
        if !(1..=300).contains(&self.auth_timeout_secs) {
            return Err(ConfigError::new(
                "gateway.auth_timeout_secs",
                "must be between 1 and 300",
            ));
        }
        if !(1..=300).contains(&self.body_timeout_secs) {
            return Err(ConfigError::new(
                "gateway.body_timeout_secs",
                "must be between 1 and 300",
            ));
        }
        if !(1..=4096).contains(&self.mcp_max_sessions) {
            return Err(ConfigError::new(
                "gateway.mcp_max_sessions",
                "must be between 1 and 4096",
            ));
        }
        if !(5..=86_400).contains(&self.mcp_idle_secs) {
            return Err(ConfigError::new(
                "gateway.mcp_idle_secs",
                "must be between 5 and 86400",
            ));
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "gateway.tls_key",
                    "is missing: tls_cert needs the key that goes with it (or remove tls_cert)",
                ));
            }
            (None, Some(_)) => {
                return Err(ConfigError::new(
                    "gateway.tls_cert",
                    "is missing: tls_key needs the certificate that goes with it (or remove tls_key)",
                ));
            }
            _ => {}
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
            ..GatewayLimitsConfig::default()
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
        let mcp = |sessions, idle| GatewayLimitsConfig {
            mcp_max_sessions: sessions,
            mcp_idle_secs: idle,
            ..GatewayLimitsConfig::default()
        };
        check(mcp(0, 120), Some("gateway.mcp_max_sessions"));
        check(mcp(32, 0), Some("gateway.mcp_idle_secs"));
        check(
            GatewayLimitsConfig {
                body_timeout_secs: 0,
                ..GatewayLimitsConfig::default()
            },
            Some("gateway.body_timeout_secs"),
        );
        let tls = |cert: Option<&str>, key: Option<&str>| GatewayLimitsConfig {
            tls_cert: cert.map(PathBuf::from),
            tls_key: key.map(PathBuf::from),
            ..GatewayLimitsConfig::default()
        };
        check(tls(Some("c.pem"), Some("k.pem")), None);
        check(tls(Some("c.pem"), None), Some("gateway.tls_key"));
        check(tls(None, Some("k.pem")), Some("gateway.tls_cert"));
        let hosts = |hosts: &[&str]| GatewayLimitsConfig {
            allow_hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
            ..GatewayLimitsConfig::default()
        };
        check(
            hosts(&["alice.oxydra.example", "192.168.1.20", "[::1]"]),
            None,
        );
        check(
            hosts(&["alice.lan", "https://alice.lan"]),
            Some("gateway.allow_hosts"),
        );
        check(hosts(&["alice.lan:443"]), Some("gateway.allow_hosts"));
    }

    #[test]
    fn a_malformed_host_is_quoted_with_what_is_wrong() {
        let config = GatewayLimitsConfig {
            allow_hosts: vec!["alice.lan".into(), "*.lan".into()],
            ..GatewayLimitsConfig::default()
        };
        assert_eq!(
            config.validate().map_err(|e| e.to_string()),
            Err(
                "invalid setting `gateway.allow_hosts`: \"*.lan\" is a pattern: list each name \
                 in full"
                    .to_owned()
            )
        );
        let good = GatewayLimitsConfig {
            allow_hosts: vec!["Alice.LAN.".into(), "10.0.0.2".into()],
            ..GatewayLimitsConfig::default()
        };
        assert_eq!(
            good.listed_hosts(),
            Ok(vec![
                Host::Name("alice.lan".into()),
                Host::Ip([10, 0, 0, 2].into())
            ])
        );
    }
}
