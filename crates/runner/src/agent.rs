//! One user's agent, composed in one place: the store `[memory]` asks for (none at all when
//! `enabled = false`), the tool registry from [`tools::ToolSet::for_agent`] over that same store, and
//! the runtime that keeps history and recalls notes in it. `oxydra-vm` serves what [`compose`]
//! builds (with the schedule tools and the user's schedules when `[schedules]` is on); nothing
//! else in the product composes an agent, so a registry and a runtime can never
//! be wired to two different stores.

use std::path::Path;
use std::sync::Arc;

use mcp::client::{DirectLauncher, Launcher, McpClients};
use memory::{MemoryError, MemoryRetrieval, MemoryStore, OpenOptions};
use provider::Provider;
use runtime::{AgentRuntime, ModelLimits};
use tools::{Governance, MemoryMetrics, ToolError, ToolRegistry, ToolSet};
use types::AgentConfig;

/// Where the agent's memory is, as the health file reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryState {
    /// `[memory] enabled = false`: no store is opened, no memory tool is offered, nothing is
    /// recalled, and history lives in process memory only.
    Disabled,
    /// A local database file (plain or encrypted).
    Local,
    /// A libSQL server.
    Remote,
}

impl MemoryState {
    /// The word for `ipc/health.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryState::Disabled => "disabled",
            MemoryState::Local => "open",
            MemoryState::Remote => "open (remote)",
        }
    }
}

/// A composed agent.
#[derive(Debug)]
pub struct Agent {
    /// The runtime to serve (give it to `gateway::UserAgent::new`).
    pub runtime: AgentRuntime,
    pub memory: MemoryState,
    /// Deletes expired notes every few minutes while it is kept (see [`SWEEP_EVERY`]).
    pub sweeper: Option<memory::Sweeper>,
    /// This user's memory tool metrics; [`MemoryMetrics::render`] is what `GET /metrics` serves.
    pub metrics: Arc<MemoryMetrics>,
    /// The tools served over MCP (see [`mcp_registry`]), over the same store.
    pub mcp_tools: Arc<ToolRegistry>,
    /// The user's schedules (`[schedules] enabled` with a store): the schedule tools are in the
    /// registry over them; give them to a `runtime::Scheduler` served by the gateway.
    pub schedules: Option<tools::Schedules>,
    /// The user's own MCP servers (`[mcp.servers]`), kept connected while this lives; their
    /// tools are in the registry. `None` when none is configured.
    pub mcp_clients: Option<Arc<McpClients>>,
}

/// How long a turn waits for the MCP servers' first connection, counted from the agent's start
/// (a slow one joins later: the registry offers its tools once it is up).
pub const MCP_READY_WAIT: std::time::Duration = McpClients::FIRST_WAIT;

/// How often expired notes are deleted (reads hide them at once; this only reclaims the rows).
pub const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

/// Why an agent could not be composed.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error("cannot open the memory store")]
    Memory(#[source] MemoryError),
    #[error("cannot assemble the tools")]
    Tools(#[source] ToolError),
    /// `[user] timezone` names no time zone.
    #[error("invalid setting `user.timezone`: {0}")]
    Timezone(String),
}

/// Composes the agent of the user whose workspace root is `user_root`: opens the store (unless
/// memory is disabled), builds the registry over it and the runtime that uses it. Stdio MCP
/// servers run as the agent's own children in the workspace's `shared/` ([`DirectLauncher`]):
/// [`compose_with`] takes the launcher that confines them.
pub async fn compose(
    config: &AgentConfig,
    user_root: &Path,
    provider: Arc<dyn Provider>,
    options: OpenOptions,
) -> Result<Agent, ComposeError> {
    let shared = types::WorkspacePaths::new(user_root).shared();
    let launcher = Arc::new(DirectLauncher::new(shared));
    compose_with(config, user_root, provider, options, launcher).await
}

/// [`compose`], starting stdio MCP servers through `launcher`.
pub async fn compose_with(
    config: &AgentConfig,
    user_root: &Path,
    provider: Arc<dyn Provider>,
    options: OpenOptions,
    launcher: Arc<dyn Launcher>,
) -> Result<Agent, ComposeError> {
    let (store, memory) = open_memory(config, user_root, options).await?;
    let metrics = MemoryMetrics::new()
        .map(Arc::new)
        .map_err(|e| ComposeError::Tools(ToolError::execution_with("metrics registry", e)))?;
    // One governance for every surface of this user: the agent's own calls and MCP calls share
    // its rate limits, metrics and audit sink.
    let mut governance =
        Governance::new(config.governance.clone()).with_metrics(Arc::clone(&metrics));
    if let Some(store) = &store {
        governance = governance.with_store(store);
    }
    let governance = Arc::new(governance);
    let schedules = schedules_of(config, store.as_ref())?;
    let memory_tools = store.as_ref().map(retrieval_of);
    let mut tool_set = ToolSet::for_agent(config, memory_tools);
    if let Some(schedules) = &schedules {
        tool_set = tool_set.schedules(schedules);
    }
    let mut registry = tool_set
        .registry()
        .map_err(ComposeError::Tools)?
        .with_governance(Arc::clone(&governance));
    let mcp_clients = mcp_clients(config, &registry, launcher);
    if let Some(clients) = &mcp_clients {
        registry = registry.with_dynamic_tools(Arc::clone(clients) as Arc<dyn tools::DynamicTools>);
    }
    let mcp_tools =
        Arc::new(mcp_registry(store.as_ref(), config, governance).map_err(ComposeError::Tools)?);
    let mut runtime = AgentRuntime::new(
        provider,
        Arc::new(registry),
        config.runtime.clone(),
        ModelLimits::from(&config.provider),
    )
    .with_retrieval(config.retrieval.clone())
    // An unknown name is refused when the file is loaded (`load_agent_config`); here it reads
    // as unset.
    .with_timezone(tools::resolve_timezone(config.user.timezone.as_deref()).ok());
    let audit_retention = config
        .governance
        .audit_retention()
        .and_then(|keep| chrono::Duration::from_std(keep).ok());
    let sweeper = store
        .as_ref()
        .map(|s| s.upkeep().spawn_sweeper(SWEEP_EVERY, audit_retention));
    if let Some(store) = store {
        runtime = runtime
            .with_memory(store)
            .with_capture(config.memory.capture.clone(), capture_provider(config));
    }
    Ok(Agent {
        runtime,
        memory,
        sweeper,
        metrics,
        mcp_tools,
        schedules,
        mcp_clients,
    })
}

/// The user's store (none when memory is disabled) and where it is.
async fn open_memory(
    config: &AgentConfig,
    user_root: &Path,
    options: OpenOptions,
) -> Result<(Option<MemoryStore>, MemoryState), ComposeError> {
    if !config.memory.enabled {
        tracing::info!("memory is disabled: no store, no memory tools, no recall");
        return Ok((None, MemoryState::Disabled));
    }
    let target = memory::Target::Config {
        config: &config.memory,
        user_root,
    };
    let store = MemoryStore::open(target, options)
        .await
        .map_err(ComposeError::Memory)?;
    let state = match config.memory.remote_url {
        Some(_) => MemoryState::Remote,
        None => MemoryState::Local,
    };
    Ok((Some(store), state))
}

/// The user's schedules, when there is a store and schedules are enabled.
fn schedules_of(
    config: &AgentConfig,
    store: Option<&MemoryStore>,
) -> Result<Option<tools::Schedules>, ComposeError> {
    let (Some(store), true) = (store, config.schedules.enabled) else {
        return Ok(None);
    };
    let zone =
        tools::resolve_timezone(config.user.timezone.as_deref()).map_err(ComposeError::Timezone)?;
    Ok(Some(tools::Schedules::new(
        store.clone(),
        config.schedules.clone(),
        zone,
    )))
}

/// The clients of the user's MCP servers (none configured: `None`), connecting in the
/// background: the agent is ready at once and its first turn waits for them (up to
/// [`McpClients::FIRST_WAIT`]); a tool named like one of `registry`'s is refused.
fn mcp_clients(
    config: &AgentConfig,
    registry: &ToolRegistry,
    launcher: Arc<dyn Launcher>,
) -> Option<Arc<McpClients>> {
    if !config.mcp.servers.values().any(|s| s.enabled) {
        return None;
    }
    // Each server's supervisor logs it up or down with its tools.
    Some(Arc::new(McpClients::start(
        &config.mcp,
        launcher,
        &registry.names(),
    )))
}

/// The provider capture asks when `[memory.capture] model` names another model than the
/// agent's (same endpoint and key); `None`: the agent's own. A provider that cannot be built is
/// logged and capture uses the agent's.
fn capture_provider(config: &AgentConfig) -> Option<Arc<dyn Provider>> {
    let model = config.memory.capture.model.as_ref()?;
    let provider = types::ProviderConfig {
        model: model.clone(),
        ..config.provider.clone()
    };
    provider::from_config(&provider)
        .inspect_err(|e| tracing::warn!(error = %e, "capture model unusable; using the agent's"))
        .ok()
}

/// The tools MCP clients get: the memory tools of the user's dialect and the peer's
/// `listMemory`, `getContext`, `putMemory`, over `store` (none without a store: MCP serves
/// memory only).
pub fn mcp_registry(
    store: Option<&MemoryStore>,
    config: &AgentConfig,
    governance: Arc<Governance>,
) -> Result<ToolRegistry, ToolError> {
    let registry = ToolSet::for_mcp(config, store.map(retrieval_of)).registry()?;
    // MCP calls are governed by `[governance]` (their surface is `mcp`), audited in the store.
    Ok(registry.with_governance(governance))
}

/// `store` as the tools reach it.
fn retrieval_of(store: &MemoryStore) -> Arc<dyn MemoryRetrieval> {
    Arc::new(store.clone())
}

#[cfg(test)]
mod tests {
    use memory::{LegacyDir, NoteMetadata};
    use test_support::{ScriptedLlm, ScriptedReply};
    use tokio::sync::mpsc;
    use types::{
        EmbeddingBackend, SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths,
    };

    use super::*;

    const NOTE: &str = "my favourite drink is rooibos tea";

    fn config(server: &ScriptedLlm, enabled: bool) -> AgentConfig {
        let mut config = AgentConfig {
            provider: server.openai_config(),
            ..AgentConfig::default()
        };
        config.memory.enabled = enabled;
        config.memory.embedding.backend = EmbeddingBackend::Hash;
        config.runtime.recall_min_score = 0.0;
        config
    }

    fn options() -> OpenOptions {
        OpenOptions {
            legacy_dir: LegacyDir::Skip,
            ..OpenOptions::default()
        }
    }

    async fn agent(server: &ScriptedLlm, root: &Path, enabled: bool) -> Agent {
        let config = config(server, enabled);
        let provider = provider::from_config(&config.provider).unwrap();
        compose(&config, root, provider, options()).await.unwrap()
    }

    /// One turn of `user` in session `s1`; the request the model was sent.
    async fn turn(
        server: &ScriptedLlm,
        agent: &Agent,
        root: &Path,
        text: &str,
    ) -> test_support::RecordedRequest {
        server.push(ScriptedReply::text("noted"));
        let ctx = ToolExecutionContext::new(
            UserId::parse("alice").unwrap(),
            SessionId::parse("s1").unwrap(),
            TurnId::parse("t1").unwrap(),
            WorkspacePaths::new(root),
        );
        let (tx, mut rx) = mpsc::channel(64);
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        agent.runtime.run_turn(&ctx, text, &tx).await.unwrap();
        drop(tx);
        drain.await.unwrap();
        server.last_request().unwrap()
    }

    /// A user root whose database already holds [`NOTE`].
    async fn root_with_note(server: &ScriptedLlm) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::open(
            memory::Target::Config {
                config: &config(server, true).memory,
                user_root: dir.path(),
            },
            options(),
        )
        .await
        .unwrap();
        let user = UserId::parse("alice").unwrap();
        store
            .save(
                &user,
                None,
                NOTE,
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)
            .unwrap();
        dir
    }

    fn memory_tools_in(request: &test_support::RecordedRequest) -> Vec<String> {
        request
            .tool_names()
            .into_iter()
            .filter(|n| n.starts_with("memory_"))
            .collect()
    }

    #[tokio::test]
    async fn disabled_memory_opens_no_store_and_offers_no_memory_tools() {
        let server = ScriptedLlm::start().await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent(&server, dir.path(), false).await;
        assert_eq!(agent.memory, MemoryState::Disabled);
        assert_eq!(agent.memory.as_str(), "disabled");

        let request = turn(&server, &agent, dir.path(), "hello there").await;
        assert_eq!(memory_tools_in(&request), Vec::<String>::new());
        let mut tools = request.tool_names();
        tools.sort();
        assert!(tools.contains(&"file_read".to_owned()), "{tools:?}");
        assert!(tools.contains(&"shell_exec".to_owned()), "{tools:?}");
        let prompt = request.system_prompt().unwrap_or_default();
        assert!(!prompt.contains("memory_search"), "{prompt}");
        // No database file was created, and the conversation still works (in process memory).
        let db = WorkspacePaths::new(dir.path()).default_memory_db();
        assert!(!db.exists(), "{} exists", db.display());
        let user = UserId::parse("alice").unwrap();
        let sessions = agent.runtime.conversations(&user).await.unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].messages, 2);
    }

    #[tokio::test]
    async fn disabled_memory_recalls_nothing_that_enabled_memory_recalls() {
        let server = ScriptedLlm::start().await;
        let dir = root_with_note(&server).await;

        let enabled = agent(&server, dir.path(), true).await;
        assert_eq!(enabled.memory, MemoryState::Local);
        let request = turn(&server, &enabled, dir.path(), "what is my favourite drink?").await;
        assert_eq!(
            memory_tools_in(&request).len(),
            4,
            "{:?}",
            request.tool_names()
        );
        // Recalled notes arrive as quoted data beside the user's message, not as instructions.
        let prompt = request.system_prompt().unwrap_or_default();
        assert!(
            !prompt.contains(NOTE),
            "a note in the instructions: {prompt}"
        );
        let texts = request.user_texts().join("\n");
        assert!(
            texts.contains(NOTE),
            "enabled memory recalls the note: {texts}"
        );
        drop(enabled);

        let disabled = agent(&server, dir.path(), false).await;
        let request = turn(
            &server,
            &disabled,
            dir.path(),
            "what is my favourite drink?",
        )
        .await;
        let prompt = request.system_prompt().unwrap_or_default();
        assert!(!prompt.contains(NOTE), "disabled memory recalled: {prompt}");
        let texts = request.user_texts().join("\n");
        assert!(!texts.contains(NOTE), "disabled memory recalled: {texts}");
        assert_eq!(memory_tools_in(&request), Vec::<String>::new());
    }

    /// The agent's own tool calls pass the same governance as every other surface: the scripted
    /// model saves a note, then a secret (refused), then a note past the rate limit (limited);
    /// each is audited as the agent surface and counted in the agent's metrics.
    #[tokio::test]
    async fn the_agents_own_memory_calls_are_governed_audited_and_counted() {
        use test_support::ScriptedToolCall;
        let server = ScriptedLlm::start().await;
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(&server, true);
        config.governance = serde_json::from_value(serde_json::json!({
            "rate_limits": {"tools": {"memory_save": {"per_minute": 1, "burst": 2}}}
        }))
        .unwrap();
        let provider = provider::from_config(&config.provider).unwrap();
        let agent = compose(&config, dir.path(), provider, options())
            .await
            .unwrap();
        let save = |id: &str, text: &str| {
            ScriptedToolCall::new("memory_save", serde_json::json!({"content": text})).with_id(id)
        };
        server.push(ScriptedReply::tool_calls(vec![
            save("c1", "likes rooibos tea"),
            save("c2", "the api key is sk-abcdefghijklmnopqrstuvwx"),
            save("c3", "works from Lisbon"),
        ]));
        let request = turn(&server, &agent, dir.path(), "remember these").await;
        let results: Vec<String> = request
            .messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(results.len(), 3, "{results:?}");
        assert!(results[0].contains("note_id"), "{}", results[0]);
        assert!(results[1].contains("PII_DETECTED"), "{}", results[1]);
        assert!(results[2].contains("RATE_LIMITED"), "{}", results[2]);

        let store = MemoryStore::open(
            memory::Target::Config {
                config: &config.memory,
                user_root: dir.path(),
            },
            options(),
        )
        .await
        .unwrap();
        let rows = store.audit().audit_log(None, 100).await.unwrap();
        let summary: Vec<(&str, &str, &str)> = rows
            .iter()
            .map(|r| (r.surface.as_str(), r.tool.as_str(), r.outcome.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                // Automatic recall at the turn's start is a read, audited as one.
                ("agent", "memory_recall", "ok"),
                ("agent", "memory_save", "ok"),
                ("agent", "memory_save", "rejected"),
                ("agent", "memory_save", "rate_limited"),
            ]
        );
        let metrics = agent.metrics.render();
        for status in ["ok", "rejected", "rate_limited"] {
            let series = format!(
                "memory_tool_requests_total{{namespace=\"notes\",status=\"{status}\",tool_name=\"memory_save\"}} 1"
            );
            assert!(metrics.contains(&series), "{series} in {metrics}");
        }
    }
}
