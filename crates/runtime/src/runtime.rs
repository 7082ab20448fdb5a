//! [`AgentRuntime`]: what a turn runs with (provider, tools, where history lives, settings), built
//! once per agent and shared by every turn of every session.

use std::sync::Arc;

use memory::MemoryStore;
use provider::Provider;
use tokio::sync::{broadcast, mpsc};
use tools::ToolRegistry;
use tracing::Instrument;
use types::{
    CaptureConfig, CaptureReport, Message, RetrievalConfig, RuntimeConfig, SessionId,
    ToolExecutionContext,
};

use crate::RuntimeError;
use crate::approval::{Approver, SessionGrants};
use crate::budget::ModelLimits;
use crate::capture::{Capture, UserReport};
use crate::events::{Emitter, TurnOutcome};
use crate::journal::Journal;
use crate::prompt::{
    CATEGORIZED_MEMORY_GUIDE, DEFAULT_SYSTEM_PROMPT, FILES_MEMORY_GUIDE, MEMORY_GUIDE,
};
use crate::turn::Turn;
use types::TurnEvent;

/// The agent loop. Holds no per-turn or per-user state: everything about a turn (user, session,
/// turn id, workspace, cancellation) arrives in the [`ToolExecutionContext`] given to
/// [`AgentRuntime::run_turn`] and is handed unchanged to every tool call.
#[derive(Debug)]
pub struct AgentRuntime {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: Arc<ToolRegistry>,
    pub(crate) journal: Journal,
    pub(crate) config: RuntimeConfig,
    pub(crate) retrieval: RetrievalConfig,
    /// The user's time zone (`[user] timezone`), in which the user's own searches read times;
    /// `None`: the host's.
    pub(crate) timezone: Option<chrono_tz::Tz>,
    /// `timezone`, else the host's, resolved once when it is set (see [`AgentRuntime::zone`]).
    zone: chrono_tz::Tz,
    pub(crate) limits: ModelLimits,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    /// Tools the user allowed for the rest of a session.
    pub(crate) grants: SessionGrants,
    pub(crate) system_prompt: String,
    /// The models a session may switch to, and which one a session starts on.
    pub(crate) models: Vec<crate::models::ModelOption>,
    pub(crate) default_model: usize,
    /// The background capture of what to remember after a turn (`with_capture`).
    pub(crate) capture: Option<Arc<Capture>>,
}

impl AgentRuntime {
    /// A runtime that keeps history in process memory only (until [`AgentRuntime::with_memory`]).
    /// `config` should have passed [`RuntimeConfig::validate`].
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: Arc<ToolRegistry>,
        config: RuntimeConfig,
        limits: ModelLimits,
    ) -> Self {
        let system_prompt = match &config.system_prompt {
            Some(prompt) => prompt.clone(),
            None => {
                // The guide of each memory dialect offered (several may be combined).
                let mut prompt = DEFAULT_SYSTEM_PROMPT.to_owned();
                for (tool, guide) in [
                    ("memory_search", MEMORY_GUIDE),
                    ("store_memory", CATEGORIZED_MEMORY_GUIDE),
                    ("memory", FILES_MEMORY_GUIDE),
                ] {
                    if tools.get(tool).is_some() {
                        prompt.push_str("\n\n");
                        prompt.push_str(guide);
                    }
                }
                prompt
            }
        };
        let models = vec![crate::models::ModelOption {
            name: types::DEFAULT_MODEL_NAME.to_owned(),
            provider: Arc::clone(&provider),
            price: None,
        }];
        Self {
            provider,
            tools,
            journal: Journal::ephemeral(),
            config,
            retrieval: RetrievalConfig::default(),
            timezone: None,
            zone: host_zone(),
            limits,
            approver: None,
            grants: SessionGrants::default(),
            system_prompt,
            models,
            default_model: 0,
            capture: None,
        }
    }

    /// Captures what to remember after each turn, as `[memory.capture]` says, asking `provider`
    /// (`None`: the agent's own model). Call after [`AgentRuntime::with_memory`]: without a
    /// store, or with `mode = "off"`, nothing is captured.
    pub fn with_capture(
        mut self,
        config: CaptureConfig,
        provider: Option<Arc<dyn Provider>>,
    ) -> Self {
        let provider = provider.unwrap_or_else(|| Arc::clone(&self.provider));
        self.capture = Capture::new(
            config,
            provider,
            &self.journal,
            Arc::clone(&self.tools),
            &self.retrieval,
            self.config.history_events,
            self.zone(),
        );
        self
    }

    /// Every capture's report (changes made, proposals kept), with its user; `None` when
    /// capture is off.
    pub fn capture_reports(&self) -> Option<broadcast::Receiver<UserReport>> {
        self.capture.as_ref().map(|c| c.subscribe())
    }

    /// Captures the session of `ctx` now, waiting for it (what the idle timer does in the
    /// background). `None` when capture is off, there was nothing new, the hourly bound was
    /// reached, or the model's answer was refused.
    pub async fn capture_now(
        &self,
        ctx: &ToolExecutionContext,
    ) -> Result<Option<CaptureReport>, RuntimeError> {
        match &self.capture {
            Some(capture) => capture.run(&crate::capture::capture_ctx(ctx)).await,
            None => Ok(None),
        }
    }

    /// Keeps every session's history and summary in `store` (the user's database), and recalls
    /// saved notes from it.
    pub fn with_memory(mut self, store: MemoryStore) -> Self {
        self.journal = Journal::Durable(store);
        self
    }

    /// Ranking weights for recall (default: `RetrievalConfig::default()`).
    pub fn with_retrieval(mut self, retrieval: RetrievalConfig) -> Self {
        self.retrieval = retrieval;
        self
    }

    /// The user's time zone (`[user] timezone`) the user's note and conversation searches read
    /// times in (default: the host's).
    pub fn with_timezone(mut self, timezone: Option<chrono_tz::Tz>) -> Self {
        self.timezone = timezone;
        self.zone = timezone.unwrap_or_else(host_zone);
        // Capture, if built already (it has run nothing yet), dates its proposals in it too.
        let zone = self.zone;
        if let Some(capture) = self.capture.as_mut().and_then(Arc::get_mut) {
            capture.zone = zone;
        }
        self
    }

    /// The user's time zone: `[user] timezone`, else the host's (UTC when the host's is unknown).
    /// Times shown to the user and the model (note dates, recalled notes) are in it.
    pub fn zone(&self) -> chrono_tz::Tz {
        self.zone
    }

    /// Who answers approval requests when `runtime.approval = "ask"`. Without one, privileged
    /// calls are refused with a message saying no one can approve them.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The model name the provider calls, for display.
    pub fn model(&self) -> &str {
        self.provider.model()
    }

    /// The tools the user allowed for the rest of a session ("allow for this session").
    pub fn grants(&self) -> &SessionGrants {
        &self.grants
    }

    /// The system prompt's instructions (before recalled notes and summary are added).
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// Runs one turn: stores `user_message`, then calls the model and runs its tool calls until it
    /// answers, the tool-round limit is reached, the turn is cancelled, or a call fails. Events go
    /// to `events` (see [`TurnEvent`] for the delivery rules); the turn ends with exactly one of
    /// `TurnCompleted`, `TurnFailed`, `TurnCancelled`.
    ///
    /// Errors (also reported as `TurnFailed`) are model calls that failed after the provider's
    /// retries, history that could not be stored, or an empty message. Everything stored before a
    /// failure stays stored, and the next turn continues from it.
    pub async fn run_turn(
        &self,
        ctx: &ToolExecutionContext,
        user_message: &str,
        events: &mpsc::Sender<TurnEvent>,
    ) -> Result<TurnOutcome, RuntimeError> {
        let span = tracing::info_span!(
            "turn",
            user = %ctx.user_id,
            session = %ctx.session_id,
            turn = %ctx.turn_id,
        );
        async {
            // A turn in the session of a schedule made after untrusted input reads its runs'
            // instructions: it is marked as they are.
            let marked = match ctx.untrusted_input {
                Some(_) => None,
                None => self.schedule_session_mark(ctx).await.map(|mark| {
                    let mut marked = ctx.clone();
                    marked.untrusted_input = Some(mark);
                    marked
                }),
            };
            let ctx = marked.as_ref().unwrap_or(ctx);
            let mut turn = Turn::new(self, ctx, Emitter::new(events, &ctx.cancellation));
            // The session's own model, when it chose one (`/model`).
            let result = match self.option_for(&ctx.user_id, &ctx.session_id).await {
                Ok(option) => {
                    turn.provider = Arc::clone(&option.provider);
                    turn.run(user_message).await
                }
                Err(e) => Err(e),
            };
            if let Err(e) = &result {
                tracing::warn!(error = %e, "turn failed");
                turn.emitter
                    .send(TurnEvent::TurnFailed {
                        reason: e.to_string(),
                    })
                    .await;
            }
            turn.emitter.close();
            if result.is_ok()
                && let Some(capture) = &self.capture
            {
                capture.after_turn(ctx);
            }
            result
        }
        .instrument(span)
        .await
    }

    /// The newest `limit` stored messages of `session`, oldest first, as stored.
    pub async fn history(
        &self,
        session: &SessionId,
        limit: usize,
    ) -> Result<Vec<Message>, RuntimeError> {
        Ok(self
            .journal
            .recent(session, limit)
            .await?
            .into_iter()
            .map(|e| e.message)
            .collect())
    }
}

/// The host's time zone (UTC when it cannot be read): read from the system, so once per setting,
/// not per note shown.
fn host_zone() -> chrono_tz::Tz {
    tools::resolve_timezone(None).unwrap_or(chrono_tz::Tz::UTC)
}
