//! Permission checks: the tool's `[governance.tool_permissions.<tool>]` entry (namespaces,
//! operations, `max_ttl_seconds`, context types) and the surface's read-only mode.

use serde_json::json;
use types::{GovernanceConfig, Operation, SurfacePolicy};

use super::MemoryAccess;

/// `pattern` is an exact namespace or a prefix ending in `*` (`session.*` matches `session.a`
/// and `session.a.b`; `*` matches every namespace).
pub(crate) fn matches(pattern: &str, namespace: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => namespace.starts_with(prefix),
        None => pattern == namespace,
    }
}

/// Why a call was refused: a stable reason (the metric label) and the ADR error's message and
/// details.
#[derive(Debug, Clone, PartialEq)]
pub struct Denial {
    /// `read_only`, `operation`, `namespace`, `ttl` or `context_type`.
    pub reason: &'static str,
    pub message: String,
    pub details: serde_json::Value,
}

pub(crate) fn check(
    config: &GovernanceConfig,
    policy: &SurfacePolicy,
    surface: &str,
    tool: &str,
    access: &MemoryAccess,
) -> Result<(), Denial> {
    let op = access.operation.as_str();
    let ns = access.namespace.as_str();
    if policy.read_only && access.operation == Operation::Write {
        return Err(Denial {
            reason: "read_only",
            message: format!(
                "the {surface} surface is read-only: `{tool}` may not write; nothing was changed"
            ),
            details: json!({"namespace": ns, "operation": op, "surface": surface}),
        });
    }
    let Some(perm) = config.tool_permissions.get(tool) else {
        return Ok(());
    };
    if let Some(ops) = &perm.operations
        && !ops.contains(&access.operation)
    {
        return Err(Denial {
            reason: "operation",
            message: format!("`{tool}` is not allowed to {op}; nothing was changed"),
            details: json!({"namespace": ns, "operation": op}),
        });
    }
    if let Some(patterns) = &perm.allowed_namespaces
        && !patterns.iter().any(|p| matches(p, ns))
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
    if let (Some(max), Some(ttl)) = (perm.max_ttl_seconds, access.ttl_seconds)
        && ttl > max
    {
        return Err(Denial {
            reason: "ttl",
            message: format!(
                "ttl_seconds {ttl} is above the {max} seconds `{tool}` may ask for; send a \
                 shorter ttl_seconds"
            ),
            details: json!({"namespace": clip(ns), "operation": op, "max_ttl_seconds": max}),
        });
    }
    if let (Some(allowed), Some(asked)) = (&perm.allowed_context_types, &access.context_type)
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
