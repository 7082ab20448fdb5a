//! One tool as data: a [`ToolSpec`] says what the model is offered (name, description, schema),
//! how the registry treats a call (tier, timeout, output format, interruption, what it reads or
//! writes for governance) and which operation runs it. [`SpecTool`] is the one [`Tool`] shim over
//! a spec and the state its operation runs over (the user's store, the schedules), so a tool is
//! its table row and its operation, not another copy of the trait's skeleton.
//!
//! Every call of a spec tool runs inside an [`OpSpan`]: one `memory_tool` span with the user,
//! session and turn, its outcome and duration logged (never the arguments' text).

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use tracing::Instrument;
use types::{NoteId, SafetyTier, ToolExecutionContext, UntrustedInput};

use crate::governance::MemoryAccess;
use crate::{Interruption, OutputFormat, Tool, ToolError};

/// What an operation returns: the tool's output, or the error the model is shown.
pub(crate) type OpFuture<'a> = Pin<Box<dyn Future<Output = Result<String, ToolError>> + Send + 'a>>;

/// The operation behind a tool.
pub(crate) type Op<S> = for<'a> fn(Call<'a, S>) -> OpFuture<'a>;

/// An operation's future, boxed (fixes the async block's output type).
pub(crate) fn boxed<'a>(
    future: impl Future<Output = Result<String, ToolError>> + Send + 'a,
) -> OpFuture<'a> {
    Box::pin(future)
}

/// One call as the operation gets it.
pub(crate) struct Call<'a, S> {
    /// What the tool runs over.
    pub state: &'a S,
    /// The arguments, already validated against the spec's schema.
    pub args: &'a Value,
    pub ctx: &'a ToolExecutionContext,
    /// The call's span: record the note touched and the number of results on it.
    pub span: &'a OpSpan,
}

/// One tool as data; see the module's documentation.
pub(crate) struct ToolSpec<S: 'static> {
    pub name: &'static str,
    pub description: &'static str,
    /// The JSON Schema offered to the model.
    pub parameters: fn() -> Value,
    /// The schema the registry validates against, from the offered one (see
    /// [`Tool::argument_schema`]).
    pub argument_schema: fn(Value) -> Value,
    pub output_schema: Option<fn() -> Value>,
    pub tier: SafetyTier,
    pub timeout: Duration,
    pub format: OutputFormat,
    pub interruption: Interruption,
    /// What a call reads or writes, for governance.
    pub access: fn(&Value) -> MemoryAccess,
    /// Whether a call's output shows text nobody confirmed (see [`Tool::untrusted_in`]).
    pub untrusted_in: fn(&str) -> Option<UntrustedInput>,
    pub op: Op<S>,
}

/// The offered schema, validated as offered.
pub(crate) fn as_offered(schema: Value) -> Value {
    schema
}

/// No output of the tool carries untrusted text.
pub(crate) fn never_untrusted(_: &str) -> Option<UntrustedInput> {
    None
}

/// How long a stopped write is still waited for: a write that commits meanwhile reports success.
const SETTLE: Duration = Duration::from_secs(10);

/// A write stopped by a timeout or a cancellation settles (see [`Interruption::Settle`]).
pub(crate) const fn settle(check: &'static str) -> Interruption {
    Interruption::Settle {
        grace: SETTLE,
        check,
    }
}

impl<S> ToolSpec<S> {
    /// A read-only tool answering JSON within 10 s, validated against what it offers.
    pub(crate) const fn new(
        name: &'static str,
        description: &'static str,
        parameters: fn() -> Value,
        access: fn(&Value) -> MemoryAccess,
        op: Op<S>,
    ) -> Self {
        Self {
            name,
            description,
            parameters,
            argument_schema: as_offered,
            output_schema: None,
            tier: SafetyTier::ReadOnly,
            timeout: Duration::from_secs(10),
            format: OutputFormat::Json,
            interruption: Interruption::Abandon,
            access,
            untrusted_in: never_untrusted,
            op,
        }
    }

    /// A write: side-effecting, settling with `check` when stopped.
    pub(crate) const fn writes(mut self, check: &'static str) -> Self {
        self.tier = SafetyTier::SideEffecting;
        self.interruption = settle(check);
        self
    }

    /// A side-effecting call that is abandoned when stopped.
    pub(crate) const fn side_effecting(mut self) -> Self {
        self.tier = SafetyTier::SideEffecting;
        self
    }

    pub(crate) const fn timeout_secs(mut self, secs: u64) -> Self {
        self.timeout = Duration::from_secs(secs);
        self
    }

    /// Plain-text answers (cut at a line when too long).
    pub(crate) const fn text(mut self) -> Self {
        self.format = OutputFormat::Text;
        self
    }

    pub(crate) const fn validated_by(mut self, schema: fn(Value) -> Value) -> Self {
        self.argument_schema = schema;
        self
    }

    pub(crate) const fn answers(mut self, schema: fn() -> Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    pub(crate) const fn marks_untrusted(
        mut self,
        check: fn(&str) -> Option<UntrustedInput>,
    ) -> Self {
        self.untrusted_in = check;
        self
    }
}

/// The one [`Tool`] over a [`ToolSpec`] and the state its operation runs over.
pub(crate) struct SpecTool<S: 'static> {
    spec: &'static ToolSpec<S>,
    state: S,
}

impl<S> SpecTool<S> {
    pub(crate) fn new(spec: &'static ToolSpec<S>, state: S) -> Self {
        Self { spec, state }
    }
}

#[async_trait]
impl<S: Send + Sync + 'static> Tool for SpecTool<S> {
    fn name(&self) -> &str {
        self.spec.name
    }

    fn description(&self) -> &str {
        self.spec.description
    }

    fn parameters(&self) -> Value {
        (self.spec.parameters)()
    }

    fn argument_schema(&self) -> Value {
        (self.spec.argument_schema)(self.parameters())
    }

    fn output_schema(&self) -> Option<Value> {
        self.spec.output_schema.map(|schema| schema())
    }

    fn safety_tier(&self) -> SafetyTier {
        self.spec.tier
    }

    fn timeout(&self) -> Duration {
        self.spec.timeout
    }

    fn output_format(&self) -> OutputFormat {
        self.spec.format
    }

    fn interruption(&self) -> Interruption {
        self.spec.interruption
    }

    fn untrusted_in(&self, output: &str) -> Option<UntrustedInput> {
        (self.spec.untrusted_in)(output)
    }

    fn memory_access(&self, args: &Value) -> Option<MemoryAccess> {
        Some((self.spec.access)(args))
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let span = OpSpan::start(self.spec.name, ctx);
        let call = Call {
            state: &self.state,
            args,
            ctx,
            span: &span,
        };
        span.run((self.spec.op)(call)).await
    }
}

/// A span for one operation; `run` records the outcome and duration.
pub(crate) struct OpSpan {
    span: tracing::Span,
    started: Instant,
}

impl OpSpan {
    pub(crate) fn start(tool: &'static str, ctx: &ToolExecutionContext) -> Self {
        let span = tracing::info_span!(
            "memory_tool",
            tool,
            user = %ctx.user_id,
            session = %ctx.session_id,
            turn = %ctx.turn_id,
            note_id = tracing::field::Empty,
            results = tracing::field::Empty,
        );
        Self {
            span,
            started: Instant::now(),
        }
    }

    pub(crate) fn note(&self, id: &NoteId) {
        self.span.record("note_id", tracing::field::display(id));
    }

    pub(crate) fn results(&self, n: usize) {
        self.span.record("results", n);
    }

    /// Runs one operation inside the span, then logs its outcome (never the note text) and time.
    pub(crate) async fn run(
        &self,
        operation: impl Future<Output = Result<String, ToolError>>,
    ) -> Result<String, ToolError> {
        let result = operation.instrument(self.span.clone()).await;
        self.finish(&result);
        result
    }

    fn finish<T>(&self, result: &Result<T, ToolError>) {
        let micros = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let _entered = self.span.enter();
        match result {
            Ok(_) => tracing::info!(duration_us = micros, "memory operation done"),
            // Info, as the registry's "tool failed": the caller gets the error itself.
            // Its message may quote the note or key: only the kind at info.
            Err(e) => {
                tracing::info!(
                    duration_us = micros,
                    kind = e.kind(),
                    "memory operation failed"
                );
                tracing::debug!(error = %e, "memory operation failure");
            }
        }
    }
}
