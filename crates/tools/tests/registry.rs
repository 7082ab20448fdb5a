//! The registry pipeline: lookup, JSON, schema validation, timeout, cancellation, truncation and
//! scrubbing, with small test tools; and the catalogue of built-in tools.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use tools::{Tool, ToolError, ToolOutcome, ToolRegistry, ToolSet};
use types::{SafetyTier, ToolExecutionContext};

/// A tool whose behaviour is chosen by the test.
struct Scripted {
    name: &'static str,
    timeout: Duration,
    started: Arc<Notify>,
    behaviour: Behaviour,
}

#[derive(Clone)]
enum Behaviour {
    /// Returns the text, with `{root}` replaced by the workspace root.
    Reply(String),
    /// Fails with an execution error, `{root}` replaced likewise.
    Fail(String),
    /// Replies with the caller's identity from the context.
    WhoAmI,
    /// Never finishes.
    Hang,
}

impl Scripted {
    fn new(name: &'static str, behaviour: Behaviour) -> Self {
        Self {
            name,
            timeout: Duration::from_secs(30),
            started: Arc::new(Notify::new()),
            behaviour,
        }
    }
}

#[async_trait::async_trait]
impl Tool for Scripted {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 20}
            }
        })
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    fn timeout(&self) -> Duration {
        self.timeout
    }
    async fn execute(
        &self,
        _args: &Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        self.started.notify_one();
        let root = ctx.workspace.root.display().to_string();
        match &self.behaviour {
            Behaviour::Reply(text) => Ok(text.replace("{root}", &root)),
            Behaviour::Fail(text) => Err(ToolError::execution(text.replace("{root}", &root))),
            Behaviour::WhoAmI => {
                tokio::task::yield_now().await;
                Ok(format!("{} {}", ctx.user_id, ctx.workspace.root.display()))
            }
            Behaviour::Hang => {
                std::future::pending::<()>().await;
                Ok(String::new())
            }
        }
    }
}

fn registry_with(tool: Scripted) -> ToolRegistry {
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(tool)).unwrap();
    registry
}

async fn run(registry: &ToolRegistry, name: &str, raw: &str) -> ToolOutcome {
    let dir = tempfile::tempdir().unwrap();
    registry
        .execute(name, raw, &common::context("alice", dir.path()))
        .await
}

fn check(outcome: ToolOutcome, ok: bool, output: &str) {
    assert_eq!((outcome.ok, outcome.output.as_str()), (ok, output));
}

#[tokio::test]
async fn lookup_json_and_schema_errors_name_the_problem() {
    let registry = registry_with(Scripted::new("echo", Behaviour::Reply("fine".into())));
    check(
        run(&registry, "echo", r#"{"query": "cats", "top_k": 3}"#).await,
        true,
        "fine",
    );
    check(run(&registry, "echo", "").await, true, "fine");
    check(
        run(&registry, "ecko", "{}").await,
        false,
        "unknown tool `ecko`; available tools: echo",
    );
    check(
        run(&registry, "echo", r#"{"query": "cats""#).await,
        false,
        "arguments are not valid JSON (line 1 column 16); send one JSON object, like {\"path\": \"shared/notes.md\"}",
    );
    check(
        run(&registry, "echo", r#"{"top_k": "five"}"#).await,
        false,
        "`top_k` must be an integer between 1 and 20, got \"five\"",
    );
    check(
        run(&registry, "echo", r#"{"user_id": "bob"}"#).await,
        false,
        "`user_id` must be left out: it is not an argument of this tool (accepted: query, top_k)",
    );
    check(
        run(&registry, "echo", "[1]").await,
        false,
        "`arguments` must be a JSON object, got an array of 1 items",
    );
    let outcome = run(&registry, "nope", "{}").await;
    assert_eq!(outcome.error_kind, Some("unknown_tool"));
}

#[tokio::test]
async fn duplicate_names_are_refused() {
    let mut registry = registry_with(Scripted::new("echo", Behaviour::WhoAmI));
    let err = registry
        .register(Arc::new(Scripted::new("echo", Behaviour::Hang)))
        .unwrap_err();
    assert_eq!(err.to_string(), "a tool named `echo` is already registered");
}

#[tokio::test]
async fn timeouts_stop_waiting() {
    let mut tool = Scripted::new("slow", Behaviour::Hang);
    tool.timeout = Duration::from_millis(50);
    let registry = registry_with(tool);
    let outcome = run(&registry, "slow", "{}").await;
    assert_eq!(outcome.error_kind, Some("timeout"));
    assert_eq!(
        outcome.output,
        "`slow` timed out after 50ms; try a smaller request"
    );
}

#[tokio::test]
async fn cancellation_stops_a_running_call() {
    let tool = Scripted::new("slow", Behaviour::Hang);
    let started = Arc::clone(&tool.started);
    let registry = registry_with(tool);
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::context("alice", dir.path());
    let token = ctx.cancellation.clone();
    let canceller = tokio::spawn(async move {
        started.notified().await;
        token.cancel();
    });
    let outcome = registry.execute("slow", "{}", &ctx).await;
    canceller.await.unwrap();
    check(outcome, false, "cancelled");

    // An already-cancelled turn runs nothing.
    let ctx = common::context("alice", dir.path());
    ctx.cancellation.cancel();
    let registry = registry_with(Scripted::new("echo", Behaviour::Reply("ran".into())));
    check(
        registry.execute("echo", "{}", &ctx).await,
        false,
        "cancelled",
    );
}

#[tokio::test]
async fn long_output_is_cut_with_a_marker() {
    let long = "x".repeat(40_000);
    let registry = registry_with(Scripted::new("big", Behaviour::Reply(long.clone())));
    let outcome = run(&registry, "big", "{}").await;
    assert!(outcome.ok);
    let expected = format!(
        "{}\n[... {} more bytes cut: narrow the request, e.g. start_line/end_line or a subdirectory]",
        "x".repeat(16 * 1024),
        40_000 - 16 * 1024
    );
    assert_eq!(outcome.output, expected);

    let registry =
        registry_with(Scripted::new("big", Behaviour::Reply("é".repeat(10)))).with_output_limit(5);
    let outcome = run(&registry, "big", "{}").await;
    assert_eq!(
        outcome.output,
        "éé\n[... 16 more bytes cut: narrow the request, e.g. start_line/end_line or a subdirectory]"
    );
}

#[tokio::test]
async fn secrets_and_host_paths_are_scrubbed_from_outputs_and_errors() {
    let text = "file {root}/shared/a.md key sk-ant-api03-AAAABBBBCCCCDDDD1234 \
                auth Bearer abcdefghijklmnop1234 at /home/alice/.ssh/id_rsa";
    let expected = "file shared/a.md key [REDACTED] auth Bearer [REDACTED] at <host path>";
    let registry = registry_with(Scripted::new("leaky", Behaviour::Reply(text.into())));
    check(run(&registry, "leaky", "{}").await, true, expected);
    let registry = registry_with(Scripted::new("leaky", Behaviour::Fail(text.into())));
    let outcome = run(&registry, "leaky", "{}").await;
    assert_eq!(outcome.error_kind, Some("execution"));
    check(outcome, false, expected);
}

#[tokio::test]
async fn identity_comes_from_each_calls_context() {
    let registry = Arc::new(registry_with(Scripted::new("whoami", Behaviour::WhoAmI)));
    let dir = tempfile::tempdir().unwrap();
    let mut calls = Vec::new();
    for user in ["alice", "bob", "carol", "dave"] {
        let registry = Arc::clone(&registry);
        let root = dir.path().join(user);
        calls.push(tokio::spawn(async move {
            let ctx = common::context(user, &root);
            (user, registry.execute("whoami", "{}", &ctx).await.output)
        }));
    }
    for call in calls {
        let (user, output) = call.await.unwrap();
        // The root is scrubbed to `<workspace>`: the user is the caller's own.
        assert_eq!(output, format!("{user} <workspace>"));
    }
}

#[test]
fn every_builtin_tool_is_well_formed() {
    let tools = ToolSet::new(None)
        .builtin(types::MemoryDialect::Notes)
        .tools()
        .unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "file_delete",
            "file_edit",
            "file_list",
            "file_read",
            "file_search",
            "file_write",
            "memory_delete",
            "memory_save",
            "memory_search",
            "memory_update",
            "shell_exec"
        ]
    );
    for tool in &tools {
        let name = tool.name();
        assert!(
            name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{name}"
        );
        assert!(tool.description().len() > 20, "{name}");
        let schema = tool.parameters();
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        assert!(schema["properties"].is_object(), "{name}");
        for required in schema["required"].as_array().into_iter().flatten() {
            assert!(
                schema["properties"]
                    .get(required.as_str().unwrap())
                    .is_some(),
                "{name}"
            );
        }
        // shell_exec's own limit is its per-command timeout_secs (up to 600 s), enforced by the
        // shell daemon; the registry's timeout only backs it up.
        let max = if name == "shell_exec" { 610 } else { 60 };
        assert!(
            tool.timeout() >= Duration::from_secs(1) && tool.timeout() <= Duration::from_secs(max),
            "{name}"
        );
        let expected_tier = match name {
            "file_read" | "file_list" | "file_search" | "memory_search" => SafetyTier::ReadOnly,
            "shell_exec" => SafetyTier::Privileged,
            _ => SafetyTier::SideEffecting,
        };
        assert_eq!(tool.safety_tier(), expected_tier, "{name}");
        assert_eq!(tool.schema().name, name);
    }
    let mut registry = ToolRegistry::default();
    for tool in &tools {
        registry.register(Arc::clone(tool)).unwrap();
    }
    assert_eq!(registry.names().len(), tools.len());
    let openai = registry.openai_tools();
    let anthropic = registry.anthropic_tools();
    assert_eq!((openai.len(), anthropic.len()), (tools.len(), tools.len()));
    assert_eq!(openai[0]["function"]["name"], anthropic[0]["name"]);
    assert_eq!(
        openai[0]["function"]["parameters"],
        anthropic[0]["input_schema"]
    );
}
