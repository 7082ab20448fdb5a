//! Configuration read from `agent.toml`: serde defaults for everything, then [`AgentConfig::validate`].
//!
//! Unknown keys are rejected so that a typo is an error, not a silently ignored setting.

mod capture;
mod gateway;
mod governance;
mod host;
mod mcp;
mod memory;
pub mod memory_ops;
mod models;
mod pricing;
mod provider;
mod runtime;
mod schedules;
mod tools;
mod web;

pub use capture::{CaptureConfig, CaptureMode, MAX_CAPTURE_CALLS_PER_HOUR, MAX_CAPTURE_IDLE_SECS};
pub use gateway::GatewayLimitsConfig;
pub use governance::{
    GovernanceConfig, Operation, OperationRule, OperationRules, PiiAction, RateLimit,
    RateLimitsConfig, SecretAction, SurfaceConfig, SurfacePolicy, SurfacesConfig, ToolPermission,
};
pub use host::{Host, HostError};
pub use mcp::{MAX_MCP_SERVER_NAME, McpConfig, McpServerConfig};
pub use memory::{DbPath, EmbeddingBackend, EmbeddingConfig, MemoryConfig, RetrievalConfig};
pub use memory_ops::tool_classes;
pub use models::{
    DEFAULT_MODEL_NAME, MAX_MODEL_NAME, ModelEntry, ModelsConfig, model_choices, valid_model_name,
};
pub use pricing::{ModelPrice, PricingConfig};
pub use provider::{MEMORY_TOOL_BETA, ProviderConfig, ProviderKind};
pub use runtime::{ApprovalPolicy, RuntimeConfig};
pub use schedules::{SchedulesConfig, UserConfig};
pub use tools::{MemoryDialect, MemoryDialects, ToolsConfig};
pub use web::{MAX_WEB_CHARS, SearchBackend, WebConfig, WebSearchConfig};

use serde::{Deserialize, Serialize};

/// A configuration value that cannot work, with the setting's name and what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid setting `{setting}`: {problem}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub problem: String,
}

impl ConfigError {
    pub fn new(setting: &'static str, problem: impl Into<String>) -> Self {
        Self {
            setting,
            problem: problem.into(),
        }
    }
}

/// The agent's configuration (`agent.toml`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    pub provider: ProviderConfig,
    pub memory: MemoryConfig,
    pub retrieval: RetrievalConfig,
    pub runtime: RuntimeConfig,
    pub gateway: GatewayLimitsConfig,
    pub tools: ToolsConfig,
    pub governance: GovernanceConfig,
    /// `[pricing."<model>"]`: prices per model, for reporting usage in money.
    pub pricing: PricingConfig,
    /// `[user]`: the user's time zone.
    pub user: UserConfig,
    /// `[schedules]`: what the agent does on its own at a time.
    pub schedules: SchedulesConfig,
    /// `[mcp.servers.<name>]`: the user's own MCP servers.
    pub mcp: McpConfig,
    /// `[models.<name>]`: the models a session can switch to (`/model <name>`).
    pub models: ModelsConfig,
}

impl AgentConfig {
    /// Checks every section; returns the first problem found.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.provider.validate()?;
        self.memory.validate()?;
        self.retrieval.validate()?;
        self.runtime.validate()?;
        self.gateway.validate()?;
        self.governance.validate()?;
        self.tools.web.validate()?;
        self.schedules.validate()?;
        self.mcp.validate()?;
        models::validate(&self.provider, &self.models)?;
        pricing::validate(&self.pricing)
    }
}
