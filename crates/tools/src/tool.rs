//! The contract every tool implements.

use std::time::Duration;

use types::{SafetyTier, ToolExecutionContext, ToolSchema, UntrustedInput};

use crate::ToolError;
use crate::governance::MemoryAccess;

/// The shape of a tool's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Plain text (file contents, command output): cut at a line boundary with a marker.
    Text,
    /// One JSON document: never cut inside; arrays lose their last items (counted in `omitted`)
    /// and long strings are shortened, so the result stays valid JSON.
    Json,
}

/// How a call that has to stop early ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interruption {
    /// Stop waiting at once and report a timeout or a cancellation (reads, idempotent work).
    Abandon,
    /// The call may already have committed something: cancel the tool's token and keep waiting up
    /// to `grace` for its own result (a committed write reports success); if it still has not
    /// answered, report that the outcome is unknown and how to `check` it.
    Settle {
        grace: Duration,
        check: &'static str,
    },
}

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

    /// The schema the registry validates arguments against before [`Tool::execute`]: the
    /// offered [`Tool::parameters`] unless a tool checks some constraint itself to answer in its
    /// own words (the categorized memory tools answer a bad category with the peer's text).
    fn argument_schema(&self) -> serde_json::Value {
        self.parameters()
    }

    /// JSON Schema of the output, for surfaces that advertise one (MCP's `outputSchema`); the
    /// output is then one JSON object matching it.
    fn output_schema(&self) -> Option<serde_json::Value> {
        None
    }

    fn safety_tier(&self) -> SafetyTier;

    /// The registry stops waiting for the call after this long.
    fn timeout(&self) -> Duration;

    async fn execute(
        &self,
        args: &serde_json::Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError>;

    /// What the output is, so that the registry can bound it without breaking it: text is cut at
    /// a line, JSON is reduced item by item and stays valid (see [`crate::truncate_output`]).
    fn output_format(&self) -> OutputFormat {
        OutputFormat::Text
    }

    /// Whether the tool's result carries text someone other than the user may have written (a
    /// file, a shell command's output, a web page). The runtime marks the rest of the turn as
    /// having read it, so memory written afterwards is recorded as unconfirmed.
    fn reads_untrusted(&self) -> Option<UntrustedInput> {
        None
    }

    /// Whether this call's `output` (as the model was shown it) carries untrusted text: by
    /// default whatever [`Tool::reads_untrusted`] says of every call; a memory read says so when
    /// it showed a note the user has not confirmed. The runtime asks it of every tool result
    /// still in the model's context, so the mark lasts as long as that text does.
    fn untrusted_in(&self, output: &str) -> Option<UntrustedInput> {
        let _ = output;
        self.reads_untrusted()
    }

    /// What the registry does when the call outlives [`Tool::timeout`] or the turn is cancelled.
    fn interruption(&self) -> Interruption {
        Interruption::Abandon
    }

    /// For a memory tool: what this call would read or write (operation, namespace, key, free-text
    /// fields), so that the registry governs it (permissions, rate limits, PII, audit, metrics:
    /// see [`crate::governance`]). `None` (the default) for tools that do not touch memory.
    fn memory_access(&self, args: &serde_json::Value) -> Option<MemoryAccess> {
        let _ = args;
        None
    }

    /// The tool as offered to a model.
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}
