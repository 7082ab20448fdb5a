//! Governance of memory calls: the stages of the registry pipeline (DESIGN §7) that every memory
//! tool of every dialect passes, on every surface.
//!
//! # How a call is governed
//!
//! A tool opts in by returning a [`MemoryAccess`] from [`crate::Tool::memory_access`] (operation,
//! namespace, key, TTL, which arguments are free text). The [`crate::ToolRegistry`] then runs,
//! for that call, after argument validation:
//!
//! 1. **permission** by operation class (read, write, delete — the same whatever the tool): the
//!    surface's classes, `[governance.operations.<class>]` and the `tool_permissions` entries
//!    of that class ([`permissions`]); a refusal is the ADR's
//!    `{"type":"error","error":{"code":"PERMISSION_DENIED",…}}` and changes nothing. What the
//!    caller may read travels in the call's context ([`types::ReadGrant`]), so that a write's
//!    answer shows nothing it may not read and a search leaves such hits out;
//! 2. **rate limit**: per surface, tool and namespace token buckets (one surface never drains
//!    another's) → `RATE_LIMITED` with `retry_after_seconds`;
//! 3. **PII and secrets on write**: the free-text arguments are scanned ([`pii`]); secrets are
//!    refused by default (or redacted), personal data is redacted, refused (`PII_DETECTED`) or
//!    allowed as the surface says;
//! 4. the tool runs with `ctx.audit` set, so a write records its audit row **inside its own
//!    transaction** (memory tools pass [`crate::audited_call_key`] to the store);
//! 5. **on the way out**: personal data in the result is redacted for
//!    surfaces whose `pii_out` is `redact` (MCP by default); reads, denials and failures get their
//!    own audit row; metrics are counted. Scrubbing and truncation follow in the registry.
//!
//! # Using it from a surface
//!
//! Build the context with the caller's surface (`ctx.surface = CallSurface::new(Surface::Mcp)
//! .with_client(name)`) and call [`crate::ToolRegistry::execute`]: nothing else is needed. An
//! operation that is no tool (the CLI's import, restore, confirm) runs through
//! [`Governance::govern`], the same stages the registry runs a memory tool through. A
//! composition attaches one [`Governance`] to its registry with
//! [`crate::ToolRegistry::with_governance`]: `Governance::new(config.governance.clone())
//! .with_audit(store).with_metrics(metrics)`; [`MemoryMetrics::render`] is what `GET /metrics`
//! serves. A registry without one still applies the default policy (secrets refused on every
//! write), with no audit rows and no metrics.

mod access;
mod answer;
mod audit;
mod edit;
mod metrics;
pub mod normal;
mod note_namespace;
mod permissions;
pub mod pii;
mod rate;
mod screen;

pub use access::{MemoryAccess, NOTES_NAMESPACE, PERMISSION_DENIED, PII_DETECTED, RATE_LIMITED};
pub use answer::{Answer, Failure, ToolText};
pub use audit::AuditSink;
pub(crate) use edit::{screen_edit, tell_redacted};
pub use metrics::MemoryMetrics;
pub use note_namespace::NoteNamespaces;
pub use permissions::Denial;
pub use rate::{Clock, Limited, ManualClock, SystemClock};

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memory::AuditEntry;
use serde_json::{Value, json};
use types::{
    AuditTag, GovernanceConfig, Operation, PiiAction, ReadGrant, Surface, SurfacePolicy,
    ToolExecutionContext, UntrustedInput,
};

use crate::ToolError;
use edit::WRITE_POLICY;
use pii::PiiKind;
use rate::RateLimiter;
use screen::{audit_name, merge_counts, screen_write, tag_counts};

/// The governance of one composition (one user's agent): config, rate buckets, optional audit
/// sink and metrics.
#[derive(Debug)]
pub struct Governance {
    config: GovernanceConfig,
    limiter: RateLimiter,
    clock: Arc<dyn Clock>,
    audit: Option<Arc<dyn AuditSink>>,
    metrics: Option<Arc<MemoryMetrics>>,
    namespaces: Option<Arc<dyn NoteNamespaces>>,
}

impl Default for Governance {
    fn default() -> Self {
        Self::new(GovernanceConfig::default())
    }
}

/// A call that passed admission: what `finish` needs to close it.
#[derive(Debug)]
struct Admitted {
    tag: AuditTag,
    policy: SurfacePolicy,
    reads: ReadGrant,
    started: Instant,
    /// `field: kind` of each value redacted from the write, for the caller's answer.
    redacted: Vec<String>,
}

impl Admitted {
    /// The audit tag the call's context carries into the tool.
    fn tag(&self) -> &AuditTag {
        &self.tag
    }
}

impl Governance {
    pub fn new(config: GovernanceConfig) -> Self {
        Self {
            config,
            limiter: RateLimiter::default(),
            clock: Arc::new(SystemClock::default()),
            audit: None,
            metrics: None,
            namespaces: None,
        }
    }

    /// Appends reads, denials and failures here (the user's store).
    #[must_use]
    pub fn with_audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(sink);
        self
    }

    /// The user's store as both the audit sink and the reader of notes' namespaces: what every
    /// surface of a user's memory governs with.
    #[must_use]
    pub fn with_store(self, store: &memory::MemoryStore) -> Self {
        self.with_audit(Arc::new(store.clone()))
            .with_note_namespaces(Arc::new(store.clone()))
    }

    /// Checks a call naming a note by its id against the namespace the note is kept under (a
    /// keyed value's), read here (the user's store): see [`NoteNamespaces`].
    #[must_use]
    pub fn with_note_namespaces(mut self, namespaces: Arc<dyn NoteNamespaces>) -> Self {
        self.namespaces = Some(namespaces);
        self
    }

    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<MemoryMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Reads time from `clock` for rate limits (tests move a [`ManualClock`]).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn metrics(&self) -> Option<&Arc<MemoryMetrics>> {
        self.metrics.as_ref()
    }

    /// Screens `text` that a write through `surface` will store later (capture's proposal kept
    /// for the user) as that write will be screened: personal data redacted in place where the
    /// surface redacts it, `Err` (`PII_DETECTED`) where the surface refuses it or for a secret.
    /// What waits for a write is stored and shown, so it is screened as what the write stores.
    pub fn screen_kept(&self, surface: Surface, text: &mut String) -> Result<(), ToolError> {
        let policy = self.config.surfaces.policy(surface);
        screen::screen_text(&policy, "content", text).map(|_| ())
    }

    /// Permission, rate limit and PII/secret stages. On success `args` may have been redacted in
    /// place and the returned [`Admitted`] carries the audit tag; on refusal the call is audited
    /// and counted, and the error is the ADR's error object.
    async fn admit(
        &self,
        tool: &str,
        access: &MemoryAccess,
        args: &mut Value,
        ctx: &ToolExecutionContext,
    ) -> Result<Admitted, ToolError> {
        let started = Instant::now();
        let keyed;
        let access = match self.keyed_namespace(ctx, access).await {
            Some(namespace) => {
                keyed = MemoryAccess {
                    namespace,
                    ..access.clone()
                };
                &keyed
            }
            None => access,
        };
        let surface = ctx.surface.kind;
        let policy = self.config.surfaces.policy(surface);
        let mut tag = audit_tag(ctx, tool, access);
        let mut redacted = Vec::new();
        let checked = {
            let span = tracing::info_span!(
                "permission_check",
                tool,
                surface = surface.as_str(),
                namespace = metrics::namespace_label(&access.namespace),
                operation = access.operation.as_str(),
            );
            let _entered = span.enter();
            let checked = permissions::check(&self.config, &policy, surface.as_str(), tool, access);
            if let Err(denial) = &checked {
                tracing::info!(reason = denial.reason, "memory call denied");
            }
            checked
        };
        if let Err(denial) = checked {
            if let Some(m) = &self.metrics {
                m.deny(tool, denial.reason);
            }
            return Err(self
                .refuse(ctx, &tag, access, "denied", denial.reason, started, {
                    ToolError::governed(PERMISSION_DENIED, denial.message, denial.details)
                })
                .await);
        }
        let now = self.clock.now();
        if let Err(limited) = self.limiter.check(
            &self.config.rate_limits,
            now,
            ctx.user_id.as_str(),
            surface,
            tool,
            &access.namespace,
        ) {
            let secs = limited.retry_after.as_secs_f64();
            let retry = (secs * 1000.0).ceil() / 1000.0;
            let error = ToolError::governed(
                RATE_LIMITED,
                format!(
                    "too many calls for {} '{}': retry after {retry:.3} seconds; nothing was \
                     changed",
                    limited.scope, limited.name
                ),
                json!({"scope": limited.scope, "limit": limited.name, "retry_after_seconds": retry}),
            );
            return Err(self
                .refuse(
                    ctx,
                    &tag,
                    access,
                    "rate_limited",
                    limited.scope,
                    started,
                    error,
                )
                .await);
        }
        if access.operation != Operation::Read {
            match screen_write(&policy, access.text_fields, args) {
                Ok(screened) => {
                    tag.redactions = tag_counts(&screened.counts);
                    redacted = screened.fields;
                }
                Err((error, counts)) => {
                    let reason = if counts.contains_key(&PiiKind::Secret) {
                        "secret"
                    } else {
                        "pii"
                    };
                    tag.redactions = tag_counts(&counts);
                    return Err(self
                        .refuse(ctx, &tag, access, "rejected", reason, started, error)
                        .await);
                }
            }
            if let Some(m) = &self.metrics {
                m.redacted(tool, tag.redactions.iter().map(|(_, n)| n).sum());
            }
        }
        Ok(Admitted {
            tag,
            policy,
            reads: permissions::read_grant(&self.config, &policy),
            started,
            redacted,
        })
    }

    /// The namespace of the keyed value a call on the `notes` namespace names by its note id
    /// (`None`: not one, or no store to ask). A store that cannot be read here cannot be written
    /// by the call either, so the call goes on as described and fails in its own stage.
    async fn keyed_namespace(
        &self,
        ctx: &ToolExecutionContext,
        access: &MemoryAccess,
    ) -> Option<String> {
        let namespaces = self.namespaces.as_ref()?;
        if access.namespace != NOTES_NAMESPACE {
            return None;
        }
        let note_id = types::NoteId::parse(access.key.as_deref()?).ok()?;
        match namespaces.namespace_of(&ctx.user_id, &note_id).await {
            Ok(namespace) => namespace,
            Err(e) => {
                tracing::warn!(error = %e, "a note's namespace could not be read");
                None
            }
        }
    }

    /// A memory call refused before the admission stages could run (its arguments are not JSON
    /// or do not match the tool's schema): audited (outcome `invalid`, the error's kind as the
    /// reason) and counted like every other refusal, so that no call leaves no trace.
    pub async fn refused_early(
        &self,
        tool: &str,
        access: &MemoryAccess,
        ctx: &ToolExecutionContext,
        error: ToolError,
    ) -> ToolError {
        let tag = audit_tag(ctx, tool, access);
        let reason = error.kind();
        self.refuse(ctx, &tag, access, "invalid", reason, Instant::now(), error)
            .await
    }

    /// One governed memory operation: the admission stages (permission, rate limit, PII and
    /// secrets on write), then `op` with the (possibly redacted) arguments and a context carrying
    /// the call's audit tag (so that a write records its row in its own transaction), then the
    /// closing stages (PII on the way out, audit of reads and failures, metrics). Every surface
    /// passes here: the registry for each memory tool call (its [`ToolText`]), the runtime, the
    /// gateway and the CLI for operations that are no tool, each getting its own typed answer
    /// back. A refusal before `op` ran is the pipeline's [`ToolError`], converted into `E`.
    pub async fn govern<T, E, F, Fut>(
        &self,
        tool: &str,
        access: &MemoryAccess,
        args: Value,
        ctx: &ToolExecutionContext,
        op: F,
    ) -> Result<T, E>
    where
        T: Answer,
        E: Failure,
        F: FnOnce(Value, ToolExecutionContext) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut args = args;
        let admitted = self.admit(tool, access, &mut args, ctx).await?;
        // What a surface not configured `trusted` (MCP by default) writes is another program's
        // text: unconfirmed, as if read from outside the user.
        let untrusted_input = match admitted.policy.trusted {
            true => ctx.untrusted_input,
            false => ctx.untrusted_input.or(Some(UntrustedInput::Client)),
        };
        let governed = ToolExecutionContext {
            audit: Some(admitted.tag().clone()),
            reads: admitted.reads.clone(),
            untrusted_input,
            ..ctx.clone()
        };
        let result = WRITE_POLICY
            .scope(admitted.policy, op(args, governed))
            .await;
        self.finish(admitted, ctx, result).await
    }

    /// The stages after the operation ran: redaction of the answer for the surface, the audit
    /// row of a read or a failure (a successful write recorded its own), metrics.
    async fn finish<T: Answer, E: Failure>(
        &self,
        admitted: Admitted,
        ctx: &ToolExecutionContext,
        result: Result<T, E>,
    ) -> Result<T, E> {
        let Admitted {
            mut tag,
            policy,
            started,
            redacted,
            ..
        } = admitted;
        let result = result.map(|answer| answer.tell_redacted(&redacted));
        let result = match result {
            Ok(answer) if policy.pii_out == PiiAction::Redact => {
                let screened = {
                    let _span = tracing::info_span!("pii_out", tool = %tag.tool).entered();
                    answer.redact_pii()
                };
                screened.map_err(E::from).map(|(answer, counts)| {
                    if !counts.is_empty() {
                        let n: u32 = counts.values().sum();
                        tracing::info!(redacted = n, "personal data redacted from a result");
                        if let Some(m) = &self.metrics {
                            m.redacted(&tag.tool, n);
                        }
                        merge_counts(&mut tag.redactions, &counts);
                    }
                    answer
                })
            }
            other => other,
        };
        let namespace = tag.namespace.clone().unwrap_or_default();
        let (status, reason) = match &result {
            Ok(_) => ("ok", None),
            Err(e) => ("error", Some(e.kind())),
        };
        let write_recorded = result.is_ok() && tag.operation != Operation::Read.as_str();
        if !write_recorded {
            self.append(ctx, &tag, status, reason).await;
        }
        if let Some(m) = &self.metrics {
            m.request(&tag.tool, &namespace, status);
            m.latency(&tag.tool, started.elapsed());
        }
        result
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "one place that closes every refusal the same way"
    )]
    async fn refuse(
        &self,
        ctx: &ToolExecutionContext,
        tag: &AuditTag,
        access: &MemoryAccess,
        outcome: &str,
        reason: &str,
        started: Instant,
        error: ToolError,
    ) -> ToolError {
        self.append(ctx, tag, outcome, Some(reason)).await;
        if let Some(m) = &self.metrics {
            m.request(&tag.tool, &access.namespace, outcome);
            m.latency(&tag.tool, started.elapsed());
        }
        error
    }

    async fn append(
        &self,
        ctx: &ToolExecutionContext,
        tag: &AuditTag,
        outcome: &str,
        reason: Option<&str>,
    ) {
        let Some(sink) = &self.audit else { return };
        let entry = AuditEntry {
            tag,
            note_id: None,
            outcome,
            reason,
        };
        if let Err(e) = sink.append(&ctx.user_id, &entry).await {
            tracing::error!(error = %e, "audit row not written");
        }
    }
}

/// The audit tag of a call, before any redaction is counted.
/// The audit row's names for a call. They are chosen by the caller, so they are redacted,
/// stripped of control characters and capped (a refused write's secret never reaches the log).
fn audit_tag(ctx: &ToolExecutionContext, tool: &str, access: &MemoryAccess) -> AuditTag {
    let mut surface = ctx.surface.clone();
    surface.client = surface.client.as_deref().map(audit_name);
    AuditTag {
        surface,
        tool: tool.to_owned(),
        operation: access.operation.as_str(),
        namespace: Some(audit_name(&access.namespace)),
        key: access.key.as_deref().map(audit_name),
        redactions: Vec::new(),
    }
}

/// How long a caller waits before a retry, for a `RATE_LIMITED` error.
pub fn retry_after(error: &ToolError) -> Option<Duration> {
    match error {
        ToolError::Governed { code, details, .. } if *code == RATE_LIMITED => details
            .get("retry_after_seconds")
            .and_then(Value::as_f64)
            .map(Duration::from_secs_f64),
        _ => None,
    }
}
