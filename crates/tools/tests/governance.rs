//! The governance stages through the registry, over real libSQL files: permissions (ADR error
//! object, nothing changed), read-only surfaces, secrets and personal data on write and on the
//! way out, rate limits on an injected clock, audit rows (in the write's transaction; never the
//! text of a refused or redacted write) and the Prometheus metrics.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::sync::Arc;
use std::time::Duration;

use memory::{AuditRecord, MemoryRetrieval, MemoryStore};
use serde_json::{Value, json};
use tools::governance::{ManualClock, pii};
use tools::{Governance, MemoryMetrics, ToolOutcome, ToolRegistry, ToolSet};
use types::{
    CallSurface, GovernanceConfig, MemoryDialect, SessionId, Surface, ToolExecutionContext, TurnId,
    UserId, WorkspacePaths,
};

use crate::common::memory_env::alice_store;

pub(crate) struct Env {
    _dir: tempfile::TempDir,
    pub(crate) store: MemoryStore,
    pub(crate) registry: ToolRegistry,
    metrics: Arc<MemoryMetrics>,
    clock: Arc<ManualClock>,
    pub(crate) root: std::path::PathBuf,
}

pub(crate) async fn env(config: Value) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = alice_store(dir.path()).await;
    let config: GovernanceConfig = serde_json::from_value(config).unwrap();
    config.validate().unwrap();
    let metrics = Arc::new(MemoryMetrics::new().unwrap());
    let clock = Arc::new(ManualClock::default());
    let governance = Governance::new(config)
        .with_store(&store)
        .with_metrics(metrics.clone())
        .with_clock(clock.clone());
    let memory: Arc<dyn MemoryRetrieval> = Arc::new(store.clone());
    let mut registry = ToolRegistry::default().with_governance(Arc::new(governance));
    for dialect in [
        MemoryDialect::Notes,
        MemoryDialect::Categorized,
        MemoryDialect::Files,
    ] {
        let set = ToolSet::new(Some(memory.clone())).memory_tools(dialect);
        for tool in set.tools().unwrap() {
            registry.register(tool).unwrap();
        }
    }
    for tool in ToolSet::new(Some(memory.clone()))
        .peer_mcp()
        .tools()
        .unwrap()
    {
        registry.register(tool).unwrap();
    }
    let root = dir.path().join("ws");
    Env {
        _dir: dir,
        store,
        registry,
        metrics,
        clock,
        root,
    }
}

impl Env {
    pub(crate) async fn call(&self, surface: Surface, tool: &str, args: Value) -> ToolOutcome {
        let user = UserId::parse("alice").unwrap();
        let ctx = ToolExecutionContext {
            surface: CallSurface::new(surface).with_client("test-client"),
            ..ToolExecutionContext::new(
                user.clone(),
                SessionId::parse("chat-1").unwrap(),
                TurnId::parse("turn-1").unwrap(),
                WorkspacePaths::for_user(&self.root, &user),
            )
        };
        self.registry.execute(tool, &args.to_string(), &ctx).await
    }

    pub(crate) async fn notes(&self) -> Vec<String> {
        let user = UserId::parse("alice").unwrap();
        let mut texts: Vec<String> = self
            .store
            .list_notes(&user)
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.content)
            .collect();
        texts.sort();
        texts
    }

    pub(crate) async fn audit(&self) -> Vec<AuditRecord> {
        self.store.audit().audit_log(None, 1000).await.unwrap()
    }
}

pub(crate) fn error_object(out: &ToolOutcome) -> Value {
    assert!(!out.ok, "expected a refusal, got {}", out.output);
    let v: Value = serde_json::from_str(&out.output)
        .unwrap_or_else(|_| panic!("not an ADR error object: {}", out.output));
    assert_eq!(v["type"], "error", "{v}");
    v["error"].clone()
}

#[tokio::test]
async fn a_denied_write_is_the_adr_error_changes_nothing_and_is_audited_without_its_text() {
    let env = env(json!({"tool_permissions": {
        "memory_save": {"operations": ["read"]},
        "memory_search": {"allowed_namespaces": ["session.*", "agent.*", "public.*"]},
    }}))
    .await;
    let out = env
        .call(
            Surface::Agent,
            "memory_save",
            json!({"content": "likes green tea"}),
        )
        .await;
    let error = error_object(&out);
    assert_eq!(error["code"], "PERMISSION_DENIED");
    assert_eq!(
        error["details"],
        json!({"namespace": "notes", "operation": "write"})
    );
    assert_eq!(out.error_kind, Some("permission_denied"));
    assert!(env.notes().await.is_empty());

    let out = env
        .call(Surface::Agent, "memory_search", json!({"query": "tea"}))
        .await;
    let error = error_object(&out);
    assert_eq!(error["code"], "PERMISSION_DENIED");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Access denied to namespace 'notes'")
    );

    let rows = env.audit().await;
    let outcomes: Vec<(&str, &str, Option<&str>)> = rows
        .iter()
        .map(|r| (r.tool.as_str(), r.outcome.as_str(), r.reason.as_deref()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("memory_save", "denied", Some("operation")),
            ("memory_search", "denied", Some("namespace"))
        ]
    );
    assert_eq!(rows[0].surface, "agent");
    assert_eq!(rows[0].client.as_deref(), Some("test-client"));
    let dump = serde_json::to_string(&rows).unwrap();
    assert!(!dump.contains("green tea"), "{dump}");

    let metrics = env.metrics.render();
    assert!(
        metrics.contains(
            "memory_tool_permission_denies_total{reason=\"operation\",tool_name=\"memory_save\"} 1"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "memory_tool_requests_total{namespace=\"notes\",status=\"denied\",tool_name=\"memory_search\"} 1"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_read_only_surface_searches_but_never_writes_in_any_dialect() {
    let env = env(json!({"surfaces": {"mcp": {"read_only": true}}})).await;
    let saved = env
        .call(
            Surface::Agent,
            "memory_save",
            json!({"content": "prefers rust"}),
        )
        .await;
    assert!(saved.ok, "{}", saved.output);
    let note_id = serde_json::from_str::<Value>(&saved.output).unwrap()["note_id"].clone();
    for (tool, args) in [
        ("memory_save", json!({"content": "from mcp"})),
        (
            "store_memory",
            json!({"content": "from mcp", "category": "fact"}),
        ),
        ("memory_delete", json!({"note_id": note_id})),
    ] {
        let error = error_object(&env.call(Surface::Mcp, tool, args).await);
        assert_eq!(error["code"], "PERMISSION_DENIED", "{tool}");
        assert_eq!(error["details"]["surface"], "mcp");
    }
    assert_eq!(env.notes().await, ["prefers rust"]);
    let found = env
        .call(Surface::Mcp, "memory_search", json!({"query": "rust"}))
        .await;
    assert!(
        found.ok && found.output.contains("prefers rust"),
        "{}",
        found.output
    );
}

#[tokio::test]
async fn secrets_are_refused_on_every_write_by_default_and_redacted_when_configured() {
    let env = env(json!({})).await;
    let key = "sk-proj-abcdefghijklmnopqrstuvwx";
    for surface in Surface::ALL {
        let out = env
            .call(
                surface,
                "memory_save",
                json!({"content": format!("the openai key is {key}")}),
            )
            .await;
        let error = error_object(&out);
        assert_eq!(error["code"], "PII_DETECTED");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("keep secrets out of memory"),
            "{error}"
        );
    }
    assert!(env.notes().await.is_empty());
    let dump = serde_json::to_string(&env.audit().await).unwrap();
    assert!(
        !dump.contains(key) && !dump.contains("openai key"),
        "{dump}"
    );

    let env = env_with_secret_redaction().await;
    let out = env
        .call(
            Surface::Agent,
            "memory_save",
            json!({"content": format!("the openai key is {key}")}),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    assert_eq!(env.notes().await, ["the openai key is [REDACTED:secret]"]);
    let rows = env.audit().await;
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].redactions,
        json!({"secret": 1}).as_object().unwrap().clone()
    );
}

async fn env_with_secret_redaction() -> Env {
    env(json!({"surfaces": {"agent": {"secrets": "redact"}}})).await
}

#[tokio::test]
async fn personal_data_is_redacted_rejected_or_allowed_per_surface() {
    let env = env(json!({"surfaces": {"gateway": {"pii": "reject"}}})).await;
    let text = "reach Jo at jo.doe@example.com or +44 20 7946 0958";
    // MCP: redacted by default, counted, the audit row holds counts only.
    let out = env
        .call(Surface::Mcp, "memory_save", json!({"content": text}))
        .await;
    assert!(out.ok, "{}", out.output);
    // Gateway configured to reject: the ADR's PII_DETECTED, nothing stored.
    let error = error_object(
        &env.call(Surface::Gateway, "memory_save", json!({"content": text}))
            .await,
    );
    assert_eq!(error["code"], "PII_DETECTED");
    assert_eq!(
        error["details"],
        json!({"redacted_fields": ["email", "phone"], "fields": ["content: email", "content: phone"]})
    );
    // The agent: the user's own facts, kept.
    let out = env
        .call(Surface::Agent, "memory_save", json!({"content": text}))
        .await;
    assert!(out.ok, "{}", out.output);
    assert_eq!(
        env.notes().await,
        [
            "reach Jo at [REDACTED:email] or [REDACTED:phone]".to_owned(),
            text.to_owned()
        ]
    );
    let rows = env.audit().await;
    let summary: Vec<(&str, &str, Value)> = rows
        .iter()
        .map(|r| {
            (
                r.surface.as_str(),
                r.outcome.as_str(),
                Value::Object(r.redactions.clone()),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("mcp", "ok", json!({"email": 1, "phone": 1})),
            ("gateway", "rejected", json!({"email": 1, "phone": 1})),
            ("agent", "ok", json!({})),
        ]
    );
    assert!(rows[0].note_id.is_some(), "the write's row names its note");
    assert!(!serde_json::to_string(&rows).unwrap().contains("jo.doe"));
    assert!(
        env.metrics
            .render()
            .contains("memory_tool_pii_redactions_total{tool_name=\"memory_save\"} 2")
    );

    // On the way out: MCP clients see the agent's note redacted, the agent sees it whole.
    let mcp = env
        .call(Surface::Mcp, "memory_search", json!({"query": "reach Jo"}))
        .await;
    assert!(mcp.ok, "{}", mcp.output);
    assert!(!mcp.output.contains("jo.doe@example.com"), "{}", mcp.output);
    assert!(mcp.output.contains("[REDACTED:email]"), "{}", mcp.output);
    serde_json::from_str::<Value>(&mcp.output).expect("still one JSON document");
    let agent = env
        .call(
            Surface::Agent,
            "memory_search",
            json!({"query": "reach Jo"}),
        )
        .await;
    assert!(
        agent.output.contains("jo.doe@example.com"),
        "{}",
        agent.output
    );
}

#[tokio::test]
async fn rate_limits_per_tool_and_namespace_say_when_to_retry() {
    let env = env(json!({"rate_limits": {
        "tools": {"memory_search": {"per_minute": 60, "burst": 2}},
        "namespaces": {"notes": {"per_minute": 6, "burst": 3}},
    }}))
    .await;
    let search = || env.call(Surface::Agent, "memory_search", json!({"query": "x"}));
    assert!(search().await.ok);
    assert!(search().await.ok);
    let error = error_object(&search().await);
    assert_eq!(error["code"], "RATE_LIMITED");
    assert_eq!(error["details"]["scope"], "tool");
    assert_eq!(error["details"]["retry_after_seconds"], 1.0);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("retry after 1.000 seconds")
    );
    env.clock.advance(Duration::from_secs(1));
    assert!(search().await.ok, "a token came back after a second");
    // The namespace's bucket (3) is now empty, whatever the tool.
    let error = error_object(
        &env.call(Surface::Agent, "list_memories", json!({"category": "fact"}))
            .await,
    );
    assert_eq!(error["details"]["scope"], "namespace");
    assert_eq!(error["details"]["retry_after_seconds"], 9.0);
    let limited = env
        .audit()
        .await
        .iter()
        .filter(|r| r.outcome == "rate_limited")
        .count();
    assert_eq!(limited, 2);
}

#[tokio::test]
async fn each_write_has_exactly_one_audit_row_and_a_failed_write_none_claiming_success() {
    let env = env(json!({})).await;
    let saved = env
        .call(Surface::Cli, "memory_save", json!({"content": "first"}))
        .await;
    let saved: Value = serde_json::from_str(&saved.output).unwrap();
    let bad = env
        .call(
            Surface::Cli,
            "memory_update",
            json!({"note_id": saved["note_id"], "content": "second", "version": "0000000000000000"}),
        )
        .await;
    assert!(!bad.ok);
    let good = env
        .call(
            Surface::Cli,
            "memory_update",
            json!({"note_id": saved["note_id"], "content": "second", "version": saved["version"]}),
        )
        .await;
    assert!(good.ok, "{}", good.output);
    let deleted = env
        .call(
            Surface::Cli,
            "memory_delete",
            json!({"note_id": saved["note_id"]}),
        )
        .await;
    assert!(deleted.ok);
    let rows = env.audit().await;
    let summary: Vec<(&str, &str, Option<&str>, Option<&str>)> = rows
        .iter()
        .map(|r| {
            (
                r.tool.as_str(),
                r.outcome.as_str(),
                r.note_id.as_deref(),
                r.key.as_deref(),
            )
        })
        .collect();
    let id = saved["note_id"].as_str();
    assert_eq!(
        summary,
        [
            ("memory_save", "ok", id, None),
            ("memory_update", "error", None, id),
            ("memory_update", "ok", id, id),
            ("memory_delete", "ok", id, id),
        ]
    );
    assert!(rows.iter().all(|r| r.surface == "cli"));
}

/// Ordinary prose full of numbers, dates, versions and addresses without any personal data.
const PROSE: &[&str] = &[
    "We shipped version 3.14.159 on 2024-01-15 and 1,200 users upgraded by Friday.",
    "The meeting moved from 10:30 to 14:45 in room 404; bring the Q3 numbers.",
    "Order #123456 arrived in 3-5 business days, which beat the 7 day estimate.",
    "Chapter 12 covers pages 120-135 and the appendix runs 140 to 155.",
    "In 1999 the team was 12 people; in 2023 it was 340 across 4 offices.",
    "The recipe needs 250 g flour, 2 eggs and 300 ml milk; bake at 180 C for 25 minutes.",
    "Use port 8080 for the dev server and 443 in production behind nginx 1.25.3.",
    "The ISBN of the book is 978-0-13-110362-7, second edition, printed 1988.",
    "Latitude 51.5074, longitude -0.1278 is roughly the centre of London.",
    "Our quarterly revenue grew 12.5% to 4,500,000 EUR, up from 4 million.",
    "She ran the 10 km race in 48:12, her best time since 2019.",
    "The build took 2 m 48 s cold and 1.4 GB of disk on a 2 core machine.",
    "Call the function with retries = 3 and timeout_ms = 5000 for the slow path.",
    "The project id is 42 and the sprint ends on 2026-11-30 at 17:00 UTC.",
    "He prefers tabs over spaces, dark mode, and coffee at 7 am.",
    "Flight BA 117 leaves at 08 25 from terminal 5, gate A10.",
    "The invoice total was 1 234,56 EUR including 19 % VAT.",
    "Set the thermostat to 21 degrees between 6 and 22 o'clock.",
    "The API returns HTTP 429 when more than 100 requests arrive per minute.",
    "Version 2.0.0-beta.3 fixed issue 4521 and pull request 4533.",
    "My daughter was born in March 2015 and starts school in 2021.",
    "The git commit 02c4394 changed 18 files with 512 insertions.",
    "Her favourite numbers are 7, 13 and 42, and her lucky year is 2008.",
    "Product code ABC-1234-XYZ is discontinued; use DEF-5678 instead.",
    "The lease runs 24 months from 01/02/2025 with 3 months notice.",
    "Temperature readings: 12.3, 14.8, 15.1, 13.9 and 12.0 over five days.",
    "The IP address of the test box is 192.168.1.20 on the lab network.",
    "Coordinates for the meetup are on the third floor, desk 3-41.",
    "Password managers are a good idea; the user keeps theirs in the vault folder.",
    "Remember that the token bucket allows a burst of 10 and 60 per minute.",
];

#[test]
fn ordinary_prose_has_no_personal_data() {
    for text in PROSE {
        let found = pii::find(text);
        assert!(found.is_empty(), "false positive in {text:?}: {found:?}");
    }
}

#[tokio::test]
async fn the_file_memory_tool_is_governed_like_every_memory_tool() {
    let env = env(json!({"surfaces": {"mcp": {"read_only": true}}})).await;
    // A secret in a file is refused, and nothing is written.
    let key = "sk-proj-abcdefghijklmnopqrstuvwx";
    let out = env
        .call(
            Surface::Agent,
            "memory",
            json!({"command": "create", "path": "/memories/keys.md", "file_text": format!("key {key}")}),
        )
        .await;
    assert_eq!(error_object(&out)["code"], "PII_DETECTED");
    assert!(env.notes().await.is_empty());
    // A read-only surface views but never writes.
    let out = env
        .call(
            Surface::Mcp,
            "memory",
            json!({"command": "create", "path": "/memories/a.md", "file_text": "from mcp"}),
        )
        .await;
    assert_eq!(error_object(&out)["code"], "PERMISSION_DENIED");
    assert!(env.notes().await.is_empty());
    // A write records its audit row (with the note it wrote, keyed by its path); a view too.
    let out = env
        .call(
            Surface::Agent,
            "memory",
            json!({"command": "create", "path": "/memories/a.md", "file_text": "prefers tea"}),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    let out = env
        .call(
            Surface::Mcp,
            "memory",
            json!({"command": "view", "path": "/memories"}),
        )
        .await;
    assert!(
        out.ok && out.output.contains("/memories/a.md"),
        "{}",
        out.output
    );
    let rows = env.audit().await;
    let summary: Vec<(&str, &str, &str, Option<&str>)> = rows
        .iter()
        .map(|r| {
            (
                r.surface.as_str(),
                r.operation.as_str(),
                r.outcome.as_str(),
                r.key.as_deref(),
            )
        })
        .collect();
    assert_eq!(summary.len(), 4, "{summary:?}");
    assert_eq!(
        summary[2],
        ("agent", "write", "ok", Some("/memories/a.md")),
        "{summary:?}"
    );
    assert!(rows[2].note_id.is_some(), "{:?}", rows[2]);
    assert_eq!(summary[3].0, "mcp");
    assert_eq!(summary[3].1, "read");
    assert!(rows.iter().all(|r| r.tool == "memory"));
    let dump = serde_json::to_string(&rows).unwrap();
    assert!(
        !dump.contains(key) && !dump.contains("prefers tea"),
        "{dump}"
    );
}

#[tokio::test]
async fn a_limit_written_under_an_old_operation_name_binds_its_one_name() {
    // `search_notes` was the gateway's name for the search `memory_search` is everywhere now.
    let env = env(json!({"rate_limits": {
        "tools": {"search_notes": {"per_minute": 60, "burst": 1}},
    }}))
    .await;
    let search = || env.call(Surface::Agent, "memory_search", json!({"query": "x"}));
    assert!(search().await.ok);
    let error = error_object(&search().await);
    assert_eq!(error["code"], "RATE_LIMITED");
    assert_eq!(error["details"]["scope"], "tool");
    assert_eq!(error["details"]["limit"], "search_notes");
}
