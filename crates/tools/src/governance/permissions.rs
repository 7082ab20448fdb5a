//! Permission checks by operation class (read, write, delete), the same whatever tool, dialect or
//! surface performs the operation: the surface's classes (`read_only`, `operations`), the
//! class's `[governance.operations.<class>]` rule, and every `[governance.tool_permissions.<tool>]`
//! entry of a tool of that class (the ADR's per-tool form, read as a rule on the tool's class:
//! see [`types::tool_classes`]). Each rule may limit namespaces, the longest time-to-live a write
//! asks for (none or 0 — "forever" — is over any limit) and `getContext`'s context types.

use serde_json::json;
use types::{
    GovernanceConfig, Operation, ReadGrant, SurfacePolicy, namespace_matches, tool_classes,
};

use super::MemoryAccess;

pub(crate) use types::namespace_matches as matches;

/// Why a call was refused: a stable reason (the metric label) and the ADR error's message and
/// details.
#[derive(Debug, Clone, PartialEq)]
pub struct Denial {
    /// `read_only`, `surface`, `operation`, `namespace`, `ttl` or `context_type`.
    pub reason: &'static str,
    pub message: String,
    pub details: serde_json::Value,
}

/// One rule binding a class, whichever form it was written in.
struct Rule<'a> {
    /// Where it was written, for the message (`operations.write`, `tool_permissions.memory_save`).
    origin: String,
    allowed: bool,
    namespaces: Option<&'a [String]>,
    max_ttl_seconds: Option<u64>,
    context_types: Option<&'a [String]>,
}

/// Every rule that binds `class`.
fn rules(config: &GovernanceConfig, class: Operation) -> Vec<Rule<'_>> {
    let own = config.operations.get(class).map(|r| Rule {
        origin: format!("operations.{}", class.as_str()),
        allowed: r.allowed,
        namespaces: r.allowed_namespaces.as_deref(),
        max_ttl_seconds: r.max_ttl_seconds,
        context_types: r.allowed_context_types.as_deref(),
    });
    let legacy = config
        .tool_permissions
        .iter()
        .filter(move |(name, _)| tool_classes(name).is_some_and(|c| c.contains(&class)))
        .map(move |(name, p)| Rule {
            origin: format!("tool_permissions.{name}"),
            // Deletes were writes before they were a class of their own.
            allowed: p.operations.as_ref().is_none_or(|ops| {
                ops.contains(&class)
                    || (class == Operation::Delete && ops.contains(&Operation::Write))
            }),
            namespaces: p.allowed_namespaces.as_deref(),
            max_ttl_seconds: p.max_ttl_seconds,
            context_types: p.allowed_context_types.as_deref(),
        });
    own.into_iter().chain(legacy).collect()
}

/// What a caller on `policy`'s surface may read (see [`ReadGrant`]).
pub(crate) fn read_grant(config: &GovernanceConfig, policy: &SurfacePolicy) -> ReadGrant {
    let rules = rules(config, Operation::Read);
    if !policy.allows(Operation::Read) || rules.iter().any(|r| !r.allowed) {
        return ReadGrant::none();
    }
    ReadGrant {
        denied: false,
        namespaces: rules
            .iter()
            .filter_map(|r| r.namespaces.map(<[String]>::to_vec))
            .collect(),
    }
}

pub(crate) fn check(
    config: &GovernanceConfig,
    policy: &SurfacePolicy,
    surface: &str,
    tool: &str,
    access: &MemoryAccess,
) -> Result<(), Denial> {
    let class = access.operation;
    let op = class.as_str();
    let ns = access.namespace.as_str();
    if !policy.allows(class) {
        let (reason, message) = if policy.read_only && class.changes() {
            (
                "read_only",
                format!(
                    "the {surface} surface is read-only: `{tool}` may not {op}; nothing was \
                     changed"
                ),
            )
        } else {
            (
                "surface",
                format!("the {surface} surface may not {op} memory; nothing was changed"),
            )
        };
        return Err(Denial {
            reason,
            message,
            details: json!({"namespace": clip(ns), "operation": op, "surface": surface}),
        });
    }
    for rule in rules(config, class) {
        if !rule.allowed {
            return Err(Denial {
                reason: "operation",
                message: format!(
                    "`{tool}` is not allowed to {op} ([governance.{}]); nothing was changed",
                    rule.origin
                ),
                details: json!({"namespace": clip(ns), "operation": op}),
            });
        }
        if let Some(patterns) = rule.namespaces
            && !patterns.iter().any(|p| namespace_matches(p, ns))
        {
            return Err(Denial {
                reason: "namespace",
                message: format!(
                    "Access denied to namespace '{}'; allowed: {}",
                    clip(ns),
                    patterns.join(", ")
                ),
                details: json!({"namespace": clip(ns), "operation": op}),
            });
        }
        if let Some(max) = rule.max_ttl_seconds
            && class == Operation::Write
            && !access.keeps_lifetime
            && access.ttl_seconds.is_none_or(|ttl| ttl == 0 || ttl > max)
        {
            let asked = match access.ttl_seconds {
                Some(ttl) if ttl > 0 => format!("ttl_seconds {ttl} is"),
                _ => "no expiry (kept forever) is".to_owned(),
            };
            return Err(Denial {
                reason: "ttl",
                message: format!(
                    "{asked} above the {max} seconds `{tool}` may ask for; give an expiry of at \
                     most {max} seconds"
                ),
                details: json!({"namespace": clip(ns), "operation": op, "max_ttl_seconds": max}),
            });
        }
        if let (Some(allowed), Some(asked)) = (rule.context_types, &access.context_type)
            && !allowed.iter().any(|a| a == asked)
        {
            return Err(Denial {
                reason: "context_type",
                message: format!(
                    "context_type '{}' is not allowed; allowed: {}",
                    clip(asked),
                    allowed.join(", ")
                ),
                details: json!({"context_type": clip(asked), "operation": op}),
            });
        }
    }
    Ok(())
}

/// Names from the caller are echoed back only this long.
fn clip(text: &str) -> String {
    text.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        let table = [
            ("session.*", "session.a", true),
            ("session.*", "session", false),
            ("session.*", "sessions.a", false),
            ("public", "public", true),
            ("public", "public.x", false),
            ("*", "anything", true),
        ];
        for (pattern, ns, expected) in table {
            assert_eq!(matches(pattern, ns), expected, "{pattern} {ns}");
        }
    }
}
