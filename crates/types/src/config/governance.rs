//! `[governance]`: who may do what to the user's memory, through which surface, how often, and
//! what happens to personal data and secrets on the way in and out (DESIGN §7, the ADR's
//! `tool_permissions`). Every memory tool of every dialect and surface is checked against it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::memory_ops::tool_classes;
use crate::Surface;

/// `[governance]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GovernanceConfig {
    /// `[governance.operations.<read|write|delete>]`: the rules of each operation class, the
    /// same whatever the tool, dialect or surface that performs it.
    pub operations: OperationRules,
    /// `[governance.tool_permissions.<tool>]` (the ADR's form, kept for existing configs): an
    /// entry is a rule on the *class* of its tool ([`tool_classes`]), so it binds every tool of
    /// that class (a rule on `memory_save` binds `store_memory`, `memory create` and
    /// `putMemory` too). A name that is no governed operation is refused.
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

/// `[governance.operations]`: one rule per operation class.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OperationRules {
    pub read: Option<OperationRule>,
    pub write: Option<OperationRule>,
    pub delete: Option<OperationRule>,
}

impl OperationRules {
    pub fn get(&self, class: Operation) -> Option<&OperationRule> {
        match class {
            Operation::Read => self.read.as_ref(),
            Operation::Write => self.write.as_ref(),
            Operation::Delete => self.delete.as_ref(),
        }
    }
}

/// The rule of one operation class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OperationRule {
    /// `false` refuses the class on every surface (default `true`).
    pub allowed: bool,
    /// Namespace patterns: an exact name, or a prefix ending in `*` (`session.*`). Unset: any.
    /// The user's own notes are the namespace `notes`.
    pub allowed_namespaces: Option<Vec<String>>,
    /// Longest time-to-live a write may ask for; a write asking none (or 0, "forever") is over
    /// it. Unset: no cap.
    pub max_ttl_seconds: Option<u64>,
    /// For `getContext`: which `context_type`s may be asked for. Unset: any.
    pub allowed_context_types: Option<Vec<String>>,
}

impl Default for OperationRule {
    fn default() -> Self {
        Self {
            allowed: true,
            allowed_namespaces: None,
            max_ttl_seconds: None,
            allowed_context_types: None,
        }
    }
}

/// One tool's permissions, as in the ADR.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolPermission {
    /// Namespace patterns: an exact name, or a prefix ending in `*` (`session.*`). Unset: any.
    pub allowed_namespaces: Option<Vec<String>>,
    /// `read`, `write` and/or `delete`: the classes the entry leaves allowed (an old entry's
    /// `write` allows `delete` too, as deletes were writes). Unset: all.
    pub operations: Option<Vec<Operation>>,
    /// Longest time-to-live a write may ask for. Unset: no cap.
    pub max_ttl_seconds: Option<u64>,
    /// For `getContext`: which `context_type`s may be asked for. Unset: any.
    pub allowed_context_types: Option<Vec<String>>,
}

/// What a memory call does to the store: its operation class. Rules name classes, not tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Read,
    /// Adds or changes a note (save, update, put, create, edit, import, restore, confirm).
    Write,
    /// Removes a note, or empties it (an update leaving no text is a delete).
    Delete,
}

impl Operation {
    pub const ALL: [Operation; 3] = [Operation::Read, Operation::Write, Operation::Delete];

    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::Delete => "delete",
        }
    }

    /// Whether the call changes the store (a write or a delete).
    pub fn changes(self) -> bool {
        self != Operation::Read
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
    /// Reads only: every write and delete through this surface is denied.
    pub read_only: Option<bool>,
    /// The operation classes this surface may perform (`["write"]`: a client that may save but
    /// never read). Unset: all (less what `read_only` takes away).
    pub operations: Option<Vec<Operation>>,
    /// For MCP: whether what the clients write is confirmed (recalled without the user's
    /// confirmation). Default `false`: an MCP client is another program, whose text the user
    /// has not seen.
    pub trusted: Option<bool>,
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
    /// The runtime's capture of what the user said (`[memory.capture]`).
    pub capture: SurfaceConfig,
}

/// A surface's settings with its defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SurfacePolicy {
    pub read_only: bool,
    /// Which classes the surface may perform: read, write, delete, in that order.
    pub classes: [bool; 3],
    /// Whether writes through this surface are confirmed by default.
    pub trusted: bool,
    pub pii: PiiAction,
    pub pii_out: PiiAction,
    pub secrets: SecretAction,
}

impl SurfacePolicy {
    /// Whether the surface may perform `class`.
    pub fn allows(&self, class: Operation) -> bool {
        self.classes[class as usize]
    }
}

impl SurfacesConfig {
    /// The settings in force for `surface`.
    pub fn policy(&self, surface: Surface) -> SurfacePolicy {
        let (raw, pii_default) = match surface {
            Surface::Agent => (&self.agent, PiiAction::Allow),
            Surface::Mcp => (&self.mcp, PiiAction::Redact),
            Surface::Cli => (&self.cli, PiiAction::Allow),
            Surface::Gateway => (&self.gateway, PiiAction::Allow),
            Surface::Capture => (&self.capture, PiiAction::Allow),
        };
        let read_only = raw.read_only.unwrap_or(false);
        let classes = Operation::ALL.map(|class| {
            raw.operations
                .as_ref()
                .is_none_or(|ops| ops.contains(&class))
                && !(read_only && class.changes())
        });
        SurfacePolicy {
            read_only,
            classes,
            // The user's own surfaces are trusted; MCP clients only when configured so.
            trusted: raw.trusted.unwrap_or(surface != Surface::Mcp),
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
        if let Some(name) = self
            .tool_permissions
            .keys()
            .find(|name| tool_classes(name).is_none())
        {
            return Err(ConfigError::new(
                "governance.tool_permissions",
                format!(
                    "'{}' is no memory operation; rules name operation classes now: use \
                     [governance.operations.read], .write or .delete",
                    name.chars().take(64).collect::<String>()
                ),
            ));
        }
        let rules = &self.operations;
        let patterns = self
            .tool_permissions
            .values()
            .flat_map(|p| p.allowed_namespaces.iter().flatten())
            .chain(
                [&rules.read, &rules.write, &rules.delete]
                    .into_iter()
                    .flatten()
                    .flat_map(|r| r.allowed_namespaces.iter().flatten()),
            );
        for p in patterns {
            if p.trim().is_empty() || p.find('*').is_some_and(|i| i + 1 != p.len()) {
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
                classes: [true, false, false],
                trusted: false,
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
        let unknown: GovernanceConfig =
            serde_json::from_str(r#"{"tool_permissions": {"memory_sav": {}}}"#).unwrap_or_default();
        let error = unknown.validate().unwrap_err();
        assert!(error.problem.contains("governance.operations"), "{error:?}");
    }

    #[test]
    fn every_class_of_a_tool_entry() {
        for (name, classes) in [
            ("memory_save", &[Operation::Write][..]),
            ("store_memory", &[Operation::Write]),
            ("putMemory", &[Operation::Write]),
            ("memory_delete", &[Operation::Delete]),
            ("search_memories", &[Operation::Read]),
            ("memory", &Operation::ALL),
        ] {
            assert_eq!(tool_classes(name), Some(classes), "{name}");
        }
        let c: GovernanceConfig = serde_json::from_str(
            r#"{"surfaces": {"mcp": {"operations": ["write"]}, "cli": {"read_only": true}}}"#,
        )
        .unwrap_or_default();
        assert_eq!(
            c.surfaces.policy(Surface::Mcp).classes,
            [false, true, false]
        );
        assert_eq!(
            c.surfaces.policy(Surface::Cli).classes,
            [true, false, false]
        );
        assert!(!c.surfaces.policy(Surface::Mcp).trusted);
        assert!(c.surfaces.policy(Surface::Agent).trusted);
    }
}
