//! Capture: after a turn, one background model call reads the session's new exchange (the
//! messages since its last capture) with the user's most similar notes and proposes what to
//! remember, through the one tool `record_memories` (forced where the wire format allows).
//!
//! - **When**: once the session has been idle `[memory.capture] idle_secs` after a turn (each
//!   new turn restarts the wait), and at once before the rolling summary folds history away.
//!   The call runs in a task of its own: the user never waits for it.
//! - **Bounded**: at most `max_calls_per_hour` calls per runtime (calls past it are skipped and
//!   the exchange waits for the next capture); one capture runs at a time. Every call's usage is
//!   recorded with the session and turn, like every model call.
//! - **Governed**: the similar notes are read as `memory_search` and the changes are the notes
//!   tools run through the registry's pipeline, all as the surface `capture` (`apply`); an
//!   exchange with untrusted content in its context (read in it, or in an earlier turn still
//!   before the summary), a turn begun by it (the run of a schedule made after it), or a call
//!   shown an unconfirmed note, yields unconfirmed notes, and its deletes wait for the user.
//!   `mode = "suggest"` stores the proposals for the user instead (`pending`).
//! - **Safe to fail**: a failed call, or an answer that is not a well-formed `record_memories`
//!   call naming only notes it was shown, is logged and changes nothing.
//!
//! Each capture is reported ([`CaptureReport`]) to subscribers of
//! [`crate::AgentRuntime::capture_reports`] (the gateway), so clients list the changes with their
//! undo like the model's own.

mod apply;
mod pending;
mod proposal;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use memory::{CallPlace, HybridQuery, MemoryStore, ProposalPlace};
use provider::Provider;
use tokio::sync::broadcast;
use tools::{MemoryAccess, ToolRegistry};
use types::{
    CancellationToken, CaptureConfig, CaptureMode, CaptureReport, Role, SessionId, Surface,
    ToolExecutionContext, UntrustedInput, UserId, memory_ops,
};

use crate::RuntimeError;
use crate::journal::{Entry, Journal};
use proposal::{Proposal, ShownNote};

/// Existing notes shown to the capture call.
const SHOWN_NOTES: usize = 8;
/// Longest search text for the similar notes, in bytes.
const QUERY_BYTES: usize = 2000;
/// Longest capture reply, in tokens.
const CAPTURE_MAX_TOKENS: u32 = 1500;
/// Reports kept for slow subscribers.
const REPORTS: usize = 64;

/// A user's capture report, for the gateway to route.
pub type UserReport = (UserId, CaptureReport);

/// What capture runs with; shared by the runtime and its background tasks.
pub(crate) struct Capture {
    pub(crate) config: CaptureConfig,
    provider: Arc<dyn Provider>,
    store: MemoryStore,
    /// The agent's registry: its governance, and which tool outputs are untrusted.
    agent_tools: Arc<ToolRegistry>,
    /// The notes tools over the store with the agent's governance: the one door for writes.
    notes_tools: ToolRegistry,
    history_events: usize,
    /// The user's time zone, in which kept proposals are dated.
    pub(crate) zone: chrono_tz::Tz,
    /// The latest turn of each session waiting for its idle time.
    waiting: Mutex<HashMap<SessionId, u64>>,
    next_wait: Mutex<u64>,
    /// When the calls of the last hour were made.
    calls: Mutex<VecDeque<Instant>>,
    running: tokio::sync::Mutex<()>,
    reports: broadcast::Sender<UserReport>,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Capture {
    /// Capture over `journal`'s store (none without a store, or with `mode = "off"`).
    pub(crate) fn new(
        config: CaptureConfig,
        provider: Arc<dyn Provider>,
        journal: &Journal,
        agent_tools: Arc<ToolRegistry>,
        retrieval: &types::RetrievalConfig,
        history_events: usize,
        zone: chrono_tz::Tz,
    ) -> Option<Arc<Self>> {
        let store = journal.store()?.clone();
        if config.mode == CaptureMode::Off {
            return None;
        }
        let notes_tools = match tools::ToolSet::new(Some(Arc::new(store.clone())))
            .retrieval(retrieval)
            .memory_tools(types::MemoryDialect::Notes)
            .registry()
        {
            Ok(registry) => registry.with_governance(Arc::clone(agent_tools.governance())),
            Err(e) => {
                tracing::warn!(error = %e, "capture: the notes tools did not register");
                ToolRegistry::default().with_governance(Arc::clone(agent_tools.governance()))
            }
        };
        Some(Arc::new(Self {
            config,
            provider,
            store,
            agent_tools,
            notes_tools,
            history_events,
            zone,
            waiting: Mutex::new(HashMap::new()),
            next_wait: Mutex::new(0),
            calls: Mutex::new(VecDeque::new()),
            running: tokio::sync::Mutex::new(()),
            reports: broadcast::channel(REPORTS).0,
        }))
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<UserReport> {
        self.reports.subscribe()
    }

    /// After a turn: capture the session once it has been idle `idle_secs` (a later turn of the
    /// session restarts the wait).
    pub(crate) fn after_turn(self: &Arc<Self>, ctx: &ToolExecutionContext) {
        let ticket = {
            let mut next = lock(&self.next_wait);
            *next += 1;
            *next
        };
        lock(&self.waiting).insert(ctx.session_id.clone(), ticket);
        let this = Arc::clone(self);
        let ctx = capture_ctx(ctx);
        let idle = Duration::from_secs(self.config.idle_secs);
        tokio::spawn(async move {
            tokio::time::sleep(idle).await;
            {
                let mut waiting = lock(&this.waiting);
                if waiting.get(&ctx.session_id) != Some(&ticket) {
                    return;
                }
                waiting.remove(&ctx.session_id);
            }
            this.run_logged(&ctx).await;
        });
    }

    /// Before the rolling summary folds history: capture now, in the background.
    pub(crate) fn before_summary(self: &Arc<Self>, ctx: &ToolExecutionContext) {
        lock(&self.waiting).remove(&ctx.session_id);
        let this = Arc::clone(self);
        let ctx = capture_ctx(ctx);
        tokio::spawn(async move { this.run_logged(&ctx).await });
    }

    async fn run_logged(&self, ctx: &ToolExecutionContext) {
        if let Err(e) = self.run(ctx).await {
            tracing::warn!(error = %e, session = %ctx.session_id, "capture failed; nothing changed");
        }
    }

    /// Captures the session of `ctx` now: `None` when there was nothing new to read, the call
    /// was over the hourly bound, or its answer was refused.
    pub(crate) async fn run(
        &self,
        ctx: &ToolExecutionContext,
    ) -> Result<Option<CaptureReport>, RuntimeError> {
        let _one_at_a_time = self.running.lock().await;
        let sessions = self.store.sessions();
        let upto = self
            .store
            .captures()
            .captured_upto(&ctx.session_id)
            .await
            .map_err(RuntimeError::memory("reading capture state"))?;
        let summarized = sessions
            .summary(&ctx.session_id)
            .await
            .map_err(RuntimeError::memory("reading the summary"))?
            .map_or(0, |s| s.upto_seq);
        // What the assistant had in its context when it spoke: the session after its summary
        // (and the part not yet captured, even if a summary has just folded it away).
        let context: Vec<Entry> = sessions
            .history(&ctx.session_id, None, self.history_events)
            .await
            .map_err(RuntimeError::memory("reading history"))?
            .into_iter()
            .filter(|e| e.seq > upto.min(summarized))
            .map(|e| Entry {
                seq: e.seq,
                message: e.message,
            })
            .collect();
        let exchange: Vec<Entry> = context.iter().filter(|e| e.seq > upto).cloned().collect();
        let Some(last) = exchange.last().map(|e| e.seq) else {
            return Ok(None);
        };
        let said: Vec<&str> = exchange
            .iter()
            .filter(|e| e.message.role == Role::User)
            .filter_map(|e| e.message.content.as_deref())
            .collect();
        if said.is_empty() {
            return Ok(None);
        }
        if !self.take_call() {
            tracing::info!(
                session = %ctx.session_id,
                "capture skipped: memory.capture.max_calls_per_hour reached"
            );
            return Ok(None);
        }
        let shown = self.similar_notes(ctx, &said.join("\n")).await;
        let request = proposal::request(&shown, &exchange, CAPTURE_MAX_TOKENS);
        let response = self.ask(ctx, &request).await?;
        let proposals = match proposal::parse(&response.message, &shown) {
            Ok(proposals) => proposals,
            Err(reason) => {
                tracing::warn!(%reason, session = %ctx.session_id, "capture answer refused; nothing changed");
                return Ok(None);
            }
        };
        // Untrusted text still in the assistant's context marks what the call writes, as it
        // marks the model's own writes (`crate::untrusted`): read in an earlier turn (captured
        // already) it shaped the replies of this exchange all the same. An unconfirmed note
        // shown is untrusted text read back, like a tool output: what the call writes after it
        // is unconfirmed (unless the user said it). A turn begun by untrusted text (a run of a
        // schedule made after it) marks it too.
        let untrusted = crate::untrusted::in_context(&self.agent_tools, &context)
            .or_else(|| {
                shown
                    .iter()
                    .any(|n| n.unconfirmed)
                    .then_some(UntrustedInput::Note)
            })
            .or(ctx.untrusted_input);
        let report = self.record(ctx, &exchange, untrusted, &proposals).await?;
        self.store
            .captures()
            .set_captured_upto(&ctx.user_id, &ctx.session_id, last)
            .await
            .map_err(RuntimeError::memory("recording capture state"))?;
        let _ = self.reports.send((ctx.user_id.clone(), report.clone()));
        Ok(Some(report))
    }

    /// The capture call, its usage recorded with the session and turn.
    async fn ask(
        &self,
        ctx: &ToolExecutionContext,
        request: &provider::ChatRequest,
    ) -> Result<provider::ChatResponse, RuntimeError> {
        let response =
            self.provider
                .complete(request)
                .await
                .map_err(|e| RuntimeError::Provider {
                    attempts: 1,
                    source: e,
                })?;
        if let Some(usage) = response.usage {
            let place = CallPlace {
                user: &ctx.user_id,
                session: &ctx.session_id,
                turn: &ctx.turn_id,
            };
            if let Err(e) = self
                .store
                .usage()
                .record_usage(place, self.provider.model(), usage)
                .await
            {
                tracing::warn!(error = %e, "capture usage not recorded");
            }
        }
        Ok(response)
    }

    /// Applies the proposals (`auto`) or keeps them for the user (`suggest`).
    async fn record(
        &self,
        ctx: &ToolExecutionContext,
        exchange: &[Entry],
        untrusted: Option<UntrustedInput>,
        proposals: &[Proposal],
    ) -> Result<CaptureReport, RuntimeError> {
        let mut report = CaptureReport {
            session_id: ctx.session_id.as_str().to_owned(),
            turn_id: ctx.turn_id.as_str().to_owned(),
            changes: Vec::new(),
            pending: Vec::new(),
        };
        let place = ProposalPlace {
            user: &ctx.user_id,
            session: &ctx.session_id,
            turn: &ctx.turn_id,
            untrusted: untrusted.map(pending::untrusted_name),
        };
        if self.config.mode == CaptureMode::Suggest {
            report.pending = pending::keep(
                &self.store,
                self.agent_tools.governance(),
                place,
                proposals,
                self.zone,
            )
            .await?;
            return Ok(report);
        }
        // After untrusted input a delete waits for the user, as in `suggest`: what it adds or
        // updates is only unconfirmed, but what it forgets would be gone from recall.
        let waits = |p: &Proposal| untrusted.is_some() && matches!(p, Proposal::Delete { .. });
        let held: Vec<Proposal> = proposals.iter().filter(|p| waits(p)).cloned().collect();
        if !held.is_empty() {
            report.pending = pending::keep(
                &self.store,
                self.agent_tools.governance(),
                place,
                &held,
                self.zone,
            )
            .await?;
        }
        for (i, proposal) in proposals.iter().enumerate() {
            if waits(proposal) {
                continue;
            }
            // A fact that restates what the user said stays theirs, even after untrusted input —
            // unless the turn was begun by untrusted text: its "user" message is that text.
            let args = serde_json::to_string(proposal).unwrap_or_default();
            let mark = ctx.untrusted_input.or_else(|| {
                untrusted.filter(|_| !crate::untrusted::restates_user(&args, exchange))
            });
            let ctx = ToolExecutionContext {
                untrusted_input: mark,
                call_id: Some(format!("capture-{}-{}", ctx.turn_id, i + 1)),
                ..ctx.clone()
            };
            match apply::apply(&self.notes_tools, &self.store, &ctx, proposal).await {
                Ok(Some(change)) => report.changes.push(change),
                Ok(None) => {}
                Err(reason) => {
                    tracing::warn!(action = proposal.action(), %reason, "capture proposal not applied");
                }
            }
        }
        Ok(report)
    }

    /// Whether one more call fits the hourly bound (and counts it).
    fn take_call(&self) -> bool {
        let now = Instant::now();
        let mut calls = lock(&self.calls);
        while calls
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(3600))
        {
            calls.pop_front();
        }
        if calls.len() >= self.config.max_calls_per_hour as usize {
            return false;
        }
        calls.push_back(now);
        true
    }

    /// The user's notes most similar to what they said, with their versions, read as a governed
    /// `memory_search` of the capture surface (refused or failed: none).
    async fn similar_notes(&self, ctx: &ToolExecutionContext, said: &str) -> Vec<ShownNote> {
        let mut cut = said.len().min(QUERY_BYTES);
        while !said.is_char_boundary(cut) {
            cut -= 1;
        }
        let (store, said) = (&self.store, &said[..cut]);
        let read = |_, governed: ToolExecutionContext| async move {
            let notes = SessionId::user_memory(&governed.user_id);
            let query = HybridQuery::new(
                vec![notes],
                said,
                tools::search_fetch_k(&governed, SHOWN_NOTES),
            );
            let hits = store
                .search(&query)
                .await
                .map_err(RuntimeError::memory("searching notes for capture"))?;
            // The surface's read rules hold here as in memory_search: a keyed note of a
            // namespace capture may not read is neither shown nor, so, changed.
            let hits = tools::readable_hits(&governed, hits, SHOWN_NOTES);
            let mut notes: Vec<ShownNote> = Vec::new();
            for hit in hits {
                let (Some(id), Some(text)) = (hit.note_id, hit.note_text) else {
                    continue;
                };
                if notes.iter().all(|n| n.note_id != id.as_str()) {
                    notes.push(ShownNote {
                        note_id: id.as_str().to_owned(),
                        edit_token: memory::edit_token(&text),
                        text,
                        unconfirmed: hit.unconfirmed,
                    });
                }
            }
            Ok::<_, RuntimeError>(notes)
        };
        let access = MemoryAccess::notes_read();
        let governed = self
            .agent_tools
            .governance()
            .govern(
                memory_ops::SEARCH,
                &access,
                serde_json::json!({ "note_id": access.key }),
                ctx,
                read,
            )
            .await;
        governed.unwrap_or_else(|e| {
            tracing::info!(error = %e, "capture: similar notes not read");
            Vec::new()
        })
    }
}

/// The turn's context as capture uses it: the same user, session, turn and workspace, the
/// `capture` surface, no call id, not cancelled with the turn, and the turn's own untrusted
/// mark (set when untrusted text began it).
pub(crate) fn capture_ctx(turn: &ToolExecutionContext) -> ToolExecutionContext {
    let mut ctx = ToolExecutionContext::new(
        turn.user_id.clone(),
        turn.session_id.clone(),
        turn.turn_id.clone(),
        turn.workspace.clone(),
    );
    ctx.surface = types::CallSurface::new(Surface::Capture);
    ctx.cancellation = CancellationToken::default();
    // The mark of a turn begun by untrusted text (a scheduled run) carries over to its capture.
    ctx.untrusted_input = turn.untrusted_input;
    ctx
}
