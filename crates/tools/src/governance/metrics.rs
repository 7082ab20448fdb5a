//! The memory tools' Prometheus metrics, with the ADR's names:
//! `memory_tool_requests_total{tool_name,namespace,status}`,
//! `memory_tool_latency_seconds{tool_name}` (a histogram; quantiles come from its buckets),
//! `memory_tool_permission_denies_total{tool_name,reason}` and
//! `memory_tool_pii_redactions_total{tool_name}`.
//!
//! Built on the `prometheus` crate (a registry per composition, so each user's agent exposes its
//! own numbers and tests do not share a global): it renders the text exposition format directly,
//! with no exporter or global recorder to install. The `namespace` label is one of a fixed set:
//! the namespace's first segment when it is one of [`NAMESPACE_LABELS`], else `other`, so a
//! client choosing names cannot grow the number of series.

use std::time::Duration;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder,
};

/// One registry of the memory tool metrics.
#[derive(Debug, Clone)]
pub struct MemoryMetrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    denies: IntCounterVec,
    redactions: IntCounterVec,
}

/// Buckets from 50 µs to 5 s.
const BUCKETS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0,
    5.0,
];

impl MemoryMetrics {
    /// A fresh registry holding the four metrics.
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "memory_tool_requests_total",
                "Memory tool calls by outcome.",
            ),
            &["tool_name", "namespace", "status"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "memory_tool_latency_seconds",
                "Time from admission to result of a memory tool call.",
            )
            .buckets(BUCKETS.to_vec()),
            &["tool_name"],
        )?;
        let denies = IntCounterVec::new(
            Opts::new(
                "memory_tool_permission_denies_total",
                "Memory tool calls refused by a permission rule.",
            ),
            &["tool_name", "reason"],
        )?;
        let redactions = IntCounterVec::new(
            Opts::new(
                "memory_tool_pii_redactions_total",
                "Values of personal data or secrets redacted by memory tool calls.",
            ),
            &["tool_name"],
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(denies.clone()))?;
        registry.register(Box::new(redactions.clone()))?;
        Ok(Self {
            registry,
            requests,
            latency,
            denies,
            redactions,
        })
    }

    pub(crate) fn request(&self, tool: &str, namespace: &str, status: &str) {
        self.requests
            .with_label_values(&[tool, namespace_label(namespace), status])
            .inc();
    }

    pub(crate) fn latency(&self, tool: &str, took: Duration) {
        self.latency
            .with_label_values(&[tool])
            .observe(took.as_secs_f64());
    }

    pub(crate) fn deny(&self, tool: &str, reason: &str) {
        self.denies.with_label_values(&[tool, reason]).inc();
    }

    pub(crate) fn redacted(&self, tool: &str, count: u32) {
        if count > 0 {
            self.redactions
                .with_label_values(&[tool])
                .inc_by(u64::from(count));
        }
    }

    /// Every metric in the Prometheus text exposition format (`GET /metrics`).
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "metrics not rendered");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// The values the `namespace` label takes besides `other`: the namespaces' first segments the
/// guidebook names (notes, `getContext`'s `context`, and the documented `session.*`, `agent.*`,
/// `public.*` conventions).
pub const NAMESPACE_LABELS: [&str; 5] = ["notes", "context", "session", "agent", "public"];

/// The namespace's first segment when it is one of [`NAMESPACE_LABELS`], else `other`.
pub(crate) fn namespace_label(namespace: &str) -> &'static str {
    let head = namespace.split('.').next().unwrap_or_default();
    NAMESPACE_LABELS
        .into_iter()
        .find(|known| *known == head)
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_label_is_one_of_a_fixed_set() {
        assert_eq!(namespace_label("notes"), "notes");
        assert_eq!(namespace_label("session.todo"), "session");
        assert_eq!(namespace_label("agent"), "agent");
        for chosen in ["ns1234", "alice", "x.session", "Session.a", "", "."] {
            assert_eq!(namespace_label(chosen), "other", "{chosen}");
        }
    }
}
