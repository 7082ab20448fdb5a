//! `[governance]`: who may do what to the user's memory, through which surface, how often, and
//! what happens to personal data and secrets on the way in and out (DESIGN §7, the ADR's
//! `tool_permissions`). Every memory tool of every dialect and surface is checked against it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::Surface;

/// `[governance]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GovernanceConfig {
    /// `[governance.tool_permissions.<tool>]`: a tool listed here may touch only the namespaces
    /// and operations it lists; a tool not listed is unrestricted.
    pub tool_permissions: BTreeMap<String, ToolPermission>,
    /// `[governance.surfaces.<agent|mcp|cli|gateway>]`.
    pub surfaces: SurfacesConfig,
    /// `[governance.rate_limits]`.
    pub rate_limits: RateLimitsConfig,
    /// Days an audit row is kept before the sweeper deletes it; 0 keeps rows forever. Unset:
    /// [`DEFAULT_AUDIT_RETENTION_DAYS`].
    pub audit_retention_days: Option<u32>,
}

/// How long audit rows are kept when `audit_retention_days` is unset.
pub const DEFAULT_AUDIT_RETENTION_DAYS: u32 = 90;

/// Longest `audit_retention_days` accepted (ten years).
const MAX_AUDIT_RETENTION_DAYS: u32 = 3650;

impl GovernanceConfig {
    /// How long the sweeper keeps audit rows (`None`: forever).
    pub fn audit_retention(&self) -> Option<std::time::Duration> {
        match self
            .audit_retention_days
            .unwrap_or(DEFAULT_AUDIT_RETENTION_DAYS)
        {
            0 => None,
            days => Some(std::time::Duration::from_secs(u64::from(days) * 86_400)),
        }
    }
}

/// One tool's permissions, as in the ADR.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolPermission {
    /// Namespace patterns: an exact name, or a prefix ending in `*` (`session.*`). Unset: any.
    pub allowed_namespaces: Option<Vec<String>>,
    /// `read` and/or `write`. Unset: both.
    pub operations: Option<Vec<Operation>>,
    /// Longest time-to-live a write may ask for. Unset: no cap.
    pub max_ttl_seconds: Option<u64>,
    /// For `getContext`: which `context_type`s may be asked for. Unset: any.
    pub allowed_context_types: Option<Vec<String>>,
}

/// What a memory call does to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Read,
    Write,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
        }
    }
}

/// What to do when a write carries personal data (e-mail, phone, card, IBAN, national id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiAction {
    /// Replace each value with `[REDACTED:<kind>]` and store the rest.
    Redact,
    /// Refuse the write with `PII_DETECTED`; nothing is stored.
    Reject,
    /// Store as given.
    Allow,
}

impl PiiAction {
    pub fn as_str(self) -> &'static str {
        match self {
            PiiAction::Redact => "redact",
            PiiAction::Reject => "reject",
            PiiAction::Allow => "allow",
        }
    }
}

/// What to do when a write carries a secret (API key, token, private key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretAction {
    /// Refuse the write, telling the model to keep secrets out of memory (default).
    Reject,
    /// Replace the secret with `[REDACTED:secret]` and store the rest.
    Redact,
}

/// One surface's settings; unset fields take the surface's default (see [`SurfacePolicy`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SurfaceConfig {
    /// Reads only: every write through this surface is denied.
    pub read_only: Option<bool>,
    /// Personal data in a write (default: `allow` for the agent, CLI and gateway — the user's own
    /// facts — and `redact` for MCP clients).
    pub pii: Option<PiiAction>,
    /// Personal data in what is returned (`redact` or `allow`; default `redact` for MCP only).
    pub pii_out: Option<PiiAction>,
    /// Secrets in a write (default `reject` everywhere).
    pub secrets: Option<SecretAction>,
}

/// `[governance.surfaces]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SurfacesConfig {
    pub agent: SurfaceConfig,
    pub mcp: SurfaceConfig,
    pub cli: SurfaceConfig,
    pub gateway: SurfaceConfig,
}

/// A surface's settings with its defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SurfacePolicy {
    pub read_only: bool,
    pub pii: PiiAction,
    pub pii_out: PiiAction,
    pub secrets: SecretAction,
}

impl SurfacesConfig {
    /// The settings in force for `surface`.
    pub fn policy(&self, surface: Surface) -> SurfacePolicy {
        let (raw, pii_default) = match surface {
            Surface::Agent => (&self.agent, PiiAction::Allow),
            Surface::Mcp => (&self.mcp, PiiAction::Redact),
            Surface::Cli => (&self.cli, PiiAction::Allow),
            Surface::Gateway => (&self.gateway, PiiAction::Allow),
        };
        SurfacePolicy {
            read_only: raw.read_only.unwrap_or(false),
            pii: raw.pii.unwrap_or(pii_default),
            pii_out: raw.pii_out.unwrap_or(pii_default),
            secrets: raw.secrets.unwrap_or(SecretAction::Reject),
        }
    }
}

/// A token bucket: `burst` calls at once, refilled at `per_minute`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Sustained rate, calls per minute.
    pub per_minute: f64,
    /// Calls allowed at once before the sustained rate applies (at least 1).
    pub burst: u32,
}

/// `[governance.rate_limits]`: per tool (`"*"` for every memory tool without its own entry) and
/// per namespace pattern. Limits are per user.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitsConfig {
    pub tools: BTreeMap<String, RateLimit>,
    pub namespaces: BTreeMap<String, RateLimit>,
}

impl GovernanceConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        for perm in self.tool_permissions.values() {
            if perm
                .allowed_namespaces
                .iter()
                .flatten()
                .any(|p| p.trim().is_empty() || p.find('*').is_some_and(|i| i + 1 != p.len()))
            {
                return Err(ConfigError::new(
                    "governance.tool_permissions.allowed_namespaces",
                    "each pattern is a namespace name or a prefix ending in `*`, like \"session.*\"",
                ));
            }
        }
        if self
            .audit_retention_days
            .is_some_and(|d| d > MAX_AUDIT_RETENTION_DAYS)
        {
            return Err(ConfigError::new(
                "governance.audit_retention_days",
                "a number of days up to 3650 (0 keeps audit rows forever)",
            ));
        }
        let limits = self.rate_limits.tools.values();
        for limit in limits.chain(self.rate_limits.namespaces.values()) {
            if !(limit.per_minute.is_finite() && limit.per_minute > 0.0) || limit.burst == 0 {
                return Err(ConfigError::new(
                    "governance.rate_limits",
                    "per_minute must be above 0 and burst at least 1",
                ));
            }
        }
        let s = &self.surfaces;
        if [&s.agent, &s.mcp, &s.cli, &s.gateway]
            .iter()
            .any(|s| s.pii_out == Some(PiiAction::Reject))
        {
            return Err(ConfigError::new(
                "governance.surfaces.pii_out",
                "must be \"redact\" or \"allow\" (what is already stored cannot be refused)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_defaults_and_overrides() {
        let c: GovernanceConfig = serde_json::from_str(
            r#"{"surfaces": {"mcp": {"read_only": true}, "agent": {"secrets": "redact"}}}"#,
        )
        .unwrap_or_default();
        let mcp = c.surfaces.policy(Surface::Mcp);
        assert_eq!(
            mcp,
            SurfacePolicy {
                read_only: true,
                pii: PiiAction::Redact,
                pii_out: PiiAction::Redact,
                secrets: SecretAction::Reject
            }
        );
        assert_eq!(
            c.surfaces.policy(Surface::Agent).secrets,
            SecretAction::Redact
        );
        assert_eq!(c.surfaces.policy(Surface::Cli).pii, PiiAction::Allow);
    }

    #[test]
    fn bad_patterns_and_limits_are_refused() {
        let bad: GovernanceConfig = serde_json::from_str(
            r#"{"tool_permissions": {"putMemory": {"allowed_namespaces": ["a*b"]}}}"#,
        )
        .unwrap_or_default();
        assert!(bad.validate().is_err());
        let zero: GovernanceConfig = serde_json::from_str(
            r#"{"rate_limits": {"tools": {"memory_save": {"per_minute": 0, "burst": 1}}}}"#,
        )
        .unwrap_or_default();
        assert!(zero.validate().is_err());
        assert!(GovernanceConfig::default().validate().is_ok());
    }
}
