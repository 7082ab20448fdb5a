//! The copy of a user's agent.toml in `.oxydra/` (the one the runner gives the agent at start),
//! as the operator's commands read it. The user's `oxydra-vm` can write that file, and whatever
//! steered the agent with it, while `runner memory|mcp|schedule|usage|sessions` often run as
//! root: a `[memory]` read from it could send the operator's process anywhere — a
//! `remote_url` of the agent's choosing with the operator's environment variable named by
//! `auth_token_env` as its token, an embedding `base_url` with `api_key_env` (and the notes'
//! text), a `db_path` naming any file root can open.
//!
//! So from that copy the commands take only what cannot point them outside the user's own
//! `.oxydra/memory.db` — `[governance]`, `[retrieval]`, `[user]`, `[schedules]`, `[pricing]`,
//! `[tools] memory` and `[memory]`'s local settings (enabled, retention, duplicate similarity,
//! a built-in or hash embedder) — and refuse, naming `--agent-config`, when it names a place:
//! silently leaving the place out would open another store than the agent's.
//!
//! Nor do they start or reach the MCP servers such a copy names ([`refuse_servers`]): a stdio
//! server's command would run as the operator, an HTTP one would be sent the operator's variable
//! its `bearer_token_env` names. `runner tools`, which is given no workspace root, knows the copy
//! by its place ([`is_a_users_copy`]).

use std::path::Path;

use anyhow::{Result, bail};
use types::{AgentConfig, DbPath, EmbeddingBackend, EmbeddingConfig, MemoryConfig, UserId};

/// Whether `path` is `<root>/<user>/.oxydra/agent.toml`, however it is spelled.
pub(crate) fn is_agents_copy(path: &Path, root: &Path, user: &UserId) -> bool {
    let copy = types::WorkspacePaths::for_user(root, user)
        .internal()
        .join("agent.toml");
    match (path.canonicalize(), copy.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => path == copy,
    }
}

/// Whether `path` is some user's copy (`<root>/<user>/.oxydra/agent.toml`) for a command given no
/// workspace root: `<root>/<user>` is a provisioned workspace (it holds one of the workspace's
/// other directories, `shared/`, `vault/`, …), or `<root>` is `known_root` (runner.toml's
/// `workspace_root`). An operator's own `~/.oxydra/agent.toml` is neither.
pub(crate) fn is_a_users_copy(path: &Path, known_root: Option<&Path>) -> bool {
    let Ok(path) = path.canonicalize() else {
        return false;
    };
    let Some(workspace) = path.parent().and_then(Path::parent) else {
        return false;
    };
    let user = workspace
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| UserId::parse(n).ok());
    let (Some(root), Some(user)) = (workspace.parent(), user) else {
        return false;
    };
    let ws = types::WorkspacePaths::for_user(root, &user);
    let provisioned = [ws.shared(), ws.vault(), ws.tmp(), ws.logs(), ws.ipc()]
        .iter()
        .any(|dir| dir.is_dir());
    let known = known_root
        .and_then(|known| known.canonicalize().ok())
        .is_some_and(|known| known == root);
    (provisioned || known) && is_agents_copy(&path, root, &user)
}

/// Refuses to start or reach the MCP servers of `config`, read from the agent's own copy `shown`
/// (see the module): none enabled, nothing to refuse.
pub(crate) fn refuse_servers(config: &AgentConfig, shown: &Path) -> Result<()> {
    if config.mcp.servers.values().any(|s| s.enabled) {
        bail!(
            "the user's agent can write {}, so its MCP servers are not started or reached as you \
             (a stdio server's command would run as you, an HTTP one would be sent what its \
             bearer_token_env names); pass --agent-config with the agent.toml you keep for this \
             user (runner.toml's entry for them names it)",
            shown.display()
        );
    }
    Ok(())
}

/// The parts of the agent's own copy `config` an operator's command may follow; an error naming
/// the first setting that points elsewhere (`shown` is the copy's path).
pub(crate) fn inert(config: AgentConfig, shown: &Path) -> Result<AgentConfig> {
    let memory = &config.memory;
    let embedding = &memory.embedding;
    let places = [
        ("memory.db_path", memory.db_path != DbPath::Auto),
        ("memory.remote_url", memory.remote_url.is_some()),
        ("memory.auth_token_env", memory.auth_token_env.is_some()),
        ("memory.replica", memory.replica),
        (
            "memory.embedding.backend",
            embedding.backend == EmbeddingBackend::Openai,
        ),
        ("memory.embedding.base_url", embedding.base_url.is_some()),
        (
            "memory.embedding.api_key_env",
            embedding.api_key_env.is_some(),
        ),
    ];
    if let Some((setting, _)) = places.iter().find(|(_, set)| *set) {
        bail!(
            "{} is the copy the user's agent can write, and its `{setting}` would send this \
             command elsewhere than the user's .oxydra/memory.db; pass --agent-config with the \
             agent.toml you keep for this user (or run without --root, as runner.toml says)",
            shown.display()
        );
    }
    let memory = MemoryConfig {
        enabled: memory.enabled,
        tombstone_retention_days: memory.tombstone_retention_days,
        duplicate_similarity: memory.duplicate_similarity,
        embedding: EmbeddingConfig {
            backend: embedding.backend,
            dimensions: embedding.dimensions,
            batch_size: embedding.batch_size,
            ..EmbeddingConfig::default()
        },
        ..MemoryConfig::default()
    };
    let tools = types::ToolsConfig {
        memory: config.tools.memory,
        ..types::ToolsConfig::default()
    };
    Ok(AgentConfig {
        memory,
        retrieval: config.retrieval,
        governance: config.governance,
        user: config.user,
        schedules: config.schedules,
        pricing: config.pricing,
        tools,
        ..AgentConfig::default()
    })
}
