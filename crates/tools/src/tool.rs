//! The contract every tool implements.

use std::time::Duration;

use types::{SafetyTier, ToolExecutionContext, ToolSchema};

use crate::ToolError;

/// A capability offered to the model.
///
/// Tools are shared (`Arc<dyn Tool>`) across every user and turn, so they hold no per-user state:
/// who is calling, in which session and turn, where their workspace is and whether the turn was
/// cancelled all arrive in `ctx`, built fresh for each call. `args` has already been validated
/// against [`Tool::parameters`] by the registry.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls the tool by: `[a-z0-9_]`, unique in a registry.
    fn name(&self) -> &str;

    /// What the tool does and when to use it, for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments: an object with `additionalProperties: false`.
    fn parameters(&self) -> serde_json::Value;

    fn safety_tier(&self) -> SafetyTier;

    /// The registry stops waiting for the call after this long.
    fn timeout(&self) -> Duration;

    async fn execute(
        &self,
        args: &serde_json::Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError>;

    /// The tool as offered to a model.
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}
