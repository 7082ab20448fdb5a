//! One user's agent, composed in one place: the store `[memory]` asks for (none at all when
//! `enabled = false`), the tool registry from [`tools::builtin_tools`] over that same store, and
//! the runtime that keeps history and recalls notes in it. `oxydra-vm` serves what [`compose`]
//! builds; nothing else in the product composes an agent, so a registry and a runtime can never
//! be wired to two different stores.

use std::path::Path;
use std::sync::Arc;

use memory::{MemoryError, MemoryRetrieval, MemoryStore, OpenOptions};
use provider::Provider;
use runtime::{AgentRuntime, ModelLimits};
use tools::{ToolError, ToolRegistry};
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
}

/// Why an agent could not be composed.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error("cannot open the memory store")]
    Memory(#[source] MemoryError),
    #[error("cannot assemble the tools")]
    Tools(#[source] ToolError),
}

/// Composes the agent of the user whose workspace root is `user_root`: opens the store (unless
/// memory is disabled), builds the registry over it and the runtime that uses it.
pub async fn compose(
    config: &AgentConfig,
    user_root: &Path,
    provider: Arc<dyn Provider>,
    options: OpenOptions,
) -> Result<Agent, ComposeError> {
    let (store, memory) = if !config.memory.enabled {
        tracing::info!("memory is disabled: no store, no memory tools, no recall");
        (None, MemoryState::Disabled)
    } else {
        let store = MemoryStore::open_with(&config.memory, user_root, options)
            .await
            .map_err(ComposeError::Memory)?;
        let state = if config.memory.remote_url.is_some() {
            MemoryState::Remote
        } else {
            MemoryState::Local
        };
        (Some(store), state)
    };
    let registry = registry(store.as_ref(), config).map_err(ComposeError::Tools)?;
    let mut runtime = AgentRuntime::new(
        provider,
        Arc::new(registry),
        config.runtime.clone(),
        ModelLimits::from(&config.provider),
    )
    .with_retrieval(config.retrieval.clone());
    if let Some(store) = store {
        runtime = runtime.with_memory(store);
    }
    Ok(Agent { runtime, memory })
}

/// Every built-in tool over `store`; without a store the memory tools are left out (rather than
/// offered only to answer that memory is off).
fn registry(store: Option<&MemoryStore>, config: &AgentConfig) -> Result<ToolRegistry, ToolError> {
    let memory = store.map(|s| Arc::new(s.clone()) as Arc<dyn MemoryRetrieval>);
    let memory_tool_names: Vec<String> = tools::memory_tools(None, &config.retrieval)
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    let mut registry = ToolRegistry::default();
    for tool in tools::builtin_tools(memory.clone(), &config.retrieval) {
        if memory.is_none() && memory_tool_names.iter().any(|n| n == tool.name()) {
            continue;
        }
        registry.register(tool)?;
    }
    Ok(registry)
}
