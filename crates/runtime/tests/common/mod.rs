//! Shared fixtures for the runtime's integration tests: a provider over the scripted server, a real
//! libSQL store in a temp dir, registries with the memory tools, contexts, and small test tools.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the fixtures"
)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use memory::{HashEmbedder, MemoryStore};
use provider::{Provider, ProviderOptions};
use runtime::{AgentRuntime, ModelLimits, RuntimeError, TurnEvent, TurnOutcome};
use serde_json::Value;
use test_support::{RecordedRequest, ScriptedLlm, ScriptedReply, ScriptedToolCall};
use tokio::sync::mpsc;
use tools::{Tool, ToolError, ToolRegistry, ToolSet};
use types::{
    MemoryDialect, ProviderKind, RuntimeConfig, SafetyTier, SessionId, ToolExecutionContext,
    TurnId, UserId, WorkspacePaths,
};

/// The model's reply: one call of tool `name` with `args`, as call `id`.
pub fn call(id: &str, name: &str, args: Value) -> ScriptedReply {
    ScriptedReply::tool_calls(vec![ScriptedToolCall::new(name, args).with_id(id)])
}

/// A provider for `server` in `kind`'s wire format, with millisecond backoff.
pub fn provider(server: &ScriptedLlm, kind: ProviderKind) -> Arc<dyn Provider> {
    provider::from_config_with(
        &server.config(kind),
        ProviderOptions {
            retry_base_delay: Duration::from_millis(5),
            retry_max_delay: Duration::from_millis(20),
            ..ProviderOptions::default()
        },
    )
    .expect("provider builds")
}

pub async fn open_store(path: &Path) -> MemoryStore {
    MemoryStore::open(
        memory::Target::File(path),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await
    .expect("store opens")
}

/// The four memory tools over `store`, plus `extra`.
pub fn memory_registry(store: &MemoryStore, extra: Vec<Arc<dyn Tool>>) -> Arc<ToolRegistry> {
    let registry = ToolSet::new(Some(Arc::new(store.clone())))
        .memory_tools(MemoryDialect::Notes)
        .with_extra(extra)
        .registry()
        .expect("tools register");
    Arc::new(registry)
}

pub fn registry(tools: Vec<Arc<dyn Tool>>) -> Arc<ToolRegistry> {
    let mut registry = ToolRegistry::default();
    for tool in tools {
        registry.register(tool).expect("tool registers");
    }
    Arc::new(registry)
}

pub fn limits() -> ModelLimits {
    ModelLimits {
        context_window: 128_000,
        max_output_tokens: 1024,
    }
}

pub fn runtime(
    provider: Arc<dyn Provider>,
    tools: Arc<ToolRegistry>,
    config: RuntimeConfig,
) -> AgentRuntime {
    AgentRuntime::new(provider, tools, config, limits())
}

pub fn ctx(root: &Path, user: &str, session: &str, turn: &str) -> ToolExecutionContext {
    ToolExecutionContext::new(
        UserId::parse(user).expect("user id"),
        SessionId::parse(session).expect("session id"),
        TurnId::parse(turn).expect("turn id"),
        WorkspacePaths::new(root.join(user)),
    )
}

/// Runs a turn with a roomy channel and returns the outcome and every event.
pub async fn run(
    rt: &AgentRuntime,
    ctx: &ToolExecutionContext,
    text: &str,
) -> (Result<TurnOutcome, RuntimeError>, Vec<TurnEvent>) {
    let (tx, mut rx) = mpsc::channel(1024);
    let outcome = rt.run_turn(ctx, text, &tx).await;
    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    (outcome, events)
}

/// Runs a turn while `react` watches the events as they arrive (to cancel or answer approvals).
pub async fn run_watching(
    rt: &AgentRuntime,
    ctx: &ToolExecutionContext,
    text: &str,
    mut react: impl FnMut(&TurnEvent),
) -> (Result<TurnOutcome, RuntimeError>, Vec<TurnEvent>) {
    let (tx, mut rx) = mpsc::channel(16);
    let turn = async {
        let outcome = rt.run_turn(ctx, text, &tx).await;
        drop(tx);
        outcome
    };
    let watch = async {
        let mut events = Vec::new();
        while let Some(event) = rx.recv().await {
            react(&event);
            events.push(event);
        }
        events
    };
    tokio::join!(turn, watch)
}

/// The text of the tool result sent to the model in `request` for `call_id`, in either format.
pub fn tool_result(request: &RecordedRequest, call_id: &str) -> Option<String> {
    request.messages().iter().find_map(|m| {
        if m["role"] == "tool" && m["tool_call_id"] == call_id {
            return m["content"].as_str().map(str::to_owned);
        }
        m["content"].as_array()?.iter().find_map(|b| {
            (b["type"] == "tool_result" && b["tool_use_id"] == call_id)
                .then(|| match &b["content"] {
                    Value::String(s) => Some(s.clone()),
                    Value::Array(parts) => Some(
                        parts
                            .iter()
                            .filter_map(|p| p["text"].as_str())
                            .collect::<String>(),
                    ),
                    _ => None,
                })
                .flatten()
        })
    })
}

/// Asserts that an OpenAI-format request pairs every tool call with exactly one result, right
/// after it, and has no result without a call.
pub fn assert_well_formed_openai(request: &RecordedRequest) {
    let mut waiting: Vec<String> = Vec::new();
    for m in request.messages() {
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
            let pos = waiting.iter().position(|w| *w == id);
            assert!(
                pos.is_some(),
                "tool result {id} answers no pending call: {m}"
            );
            waiting.retain(|w| *w != id);
            continue;
        }
        assert!(
            waiting.is_empty(),
            "calls {waiting:?} have no result before {m}"
        );
        if let Some(calls) = m["tool_calls"].as_array() {
            waiting = calls
                .iter()
                .map(|c| c["id"].as_str().unwrap_or_default().to_owned())
                .collect();
        }
    }
    assert!(waiting.is_empty(), "calls {waiting:?} have no result");
    let first = request
        .messages()
        .iter()
        .find(|m| m["role"] != "system")
        .expect("a message");
    assert_eq!(first["role"], "user", "history starts with a user message");
}

/// The concatenated text deltas of `events`.
pub fn streamed_text(events: &[TurnEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::AssistantDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A shared, ordered log that test tools write to.
pub type Log = Arc<Mutex<Vec<String>>>;

pub fn log_lines(log: &Log) -> Vec<String> {
    log.lock().expect("log").clone()
}

fn push(log: &Log, line: String) {
    log.lock().expect("log").push(line);
}

fn object_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "additionalProperties": false
    })
}

/// A test tool: its behaviour is a closure-free enum so tests read like tables.
#[derive(Debug)]
pub struct TestTool {
    pub name: &'static str,
    pub tier: SafetyTier,
    pub log: Log,
    pub behaviour: Behaviour,
}

#[derive(Debug)]
pub enum Behaviour {
    /// Returns its `text` argument (or "done").
    Echo,
    /// Logs start, waits at the barrier, logs end: only finishes when run alongside its peers.
    Barrier(Arc<tokio::sync::Barrier>),
    /// Logs start, yields a few times, logs end.
    Steps,
    /// Logs start, then waits until the turn is cancelled.
    Hang,
}

impl TestTool {
    pub fn new(name: &'static str, tier: SafetyTier, log: &Log, behaviour: Behaviour) -> Arc<Self> {
        Arc::new(Self {
            name,
            tier,
            log: Arc::clone(log),
            behaviour,
        })
    }
}

#[async_trait]
impl Tool for TestTool {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        "A test tool."
    }

    fn parameters(&self) -> Value {
        object_schema()
    }

    fn safety_tier(&self) -> SafetyTier {
        self.tier
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(20)
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        push(&self.log, format!("start {}", self.name));
        match &self.behaviour {
            Behaviour::Echo => {}
            Behaviour::Barrier(barrier) => {
                barrier.wait().await;
            }
            Behaviour::Steps => {
                for _ in 0..5 {
                    tokio::task::yield_now().await;
                }
            }
            Behaviour::Hang => {
                ctx.cancellation.cancelled().await;
                return Err(ToolError::Cancelled);
            }
        }
        push(&self.log, format!("end {}", self.name));
        Ok(args["text"].as_str().unwrap_or("done").to_owned())
    }
}

/// An agent with the notes tools and the file tools over a fresh store of alice's, in
/// `kind`'s wire format, and a planted file `shared/<name>` holding `text` in her workspace.
pub struct Planted {
    pub dir: tempfile::TempDir,
    pub store: MemoryStore,
    pub server: ScriptedLlm,
    pub rt: AgentRuntime,
}

pub async fn planted(kind: ProviderKind, name: &str, text: &str) -> Planted {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let store = open_store(&root.join("alice/.oxydra/memory.db")).await;
    let server = ScriptedLlm::start().await;
    let rt = runtime(
        provider(&server, kind),
        memory_registry(&store, ToolSet::new(None).files().tools().unwrap()),
        RuntimeConfig::default(),
    )
    .with_memory(store.clone());
    let shared = root.join("alice/shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join(name), format!("{text}\n")).unwrap();
    Planted {
        dir,
        store,
        server,
        rt,
    }
}
