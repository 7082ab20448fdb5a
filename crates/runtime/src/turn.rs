//! One turn: store the user message, assemble the context, call the model, run its tools, repeat.
//!
//! Every message is stored the moment it exists (user message first, then each assistant reply,
//! then each tool result), so a crash loses nothing already acknowledged.

use memory::SummaryState;
use std::sync::Arc;

use provider::{ChatRequest, Provider};
use types::{Message, Role, ToolExecutionContext, Usage};

use crate::budget::{estimate_message, estimate_text, estimate_tools, fraction_of};
use crate::dispatch::Dispatch;
use crate::events::{Emitter, TurnOutcome, TurnStatus};
use crate::history::{fit, repair};
use crate::journal::Entry;
use crate::prompt::{notes_message, system_text};
use crate::recall::RecalledNote;
use crate::reply::{Reply, stream_reply};
use crate::summary::{plan_cut, summarize};
use crate::{AgentRuntime, RuntimeError};
use types::TurnEvent;

/// Stored (alone) when a turn is cancelled before any reply text.
pub(crate) const CANCELLED_NOTE: &str = "[The user cancelled this turn.]";
/// Appended to partial reply text when the turn is cancelled mid-reply.
pub(crate) const CANCELLED_MARK: &str = "[reply cut short: the user cancelled the turn]";
/// Appended to partial reply text when the model's stream failed mid-reply.
const CUT_OFF_MARK: &str = "[reply cut off: the connection to the model failed]";
/// Stored when the model answers with nothing at all.
const EMPTY_REPLY: &str = "(no reply)";

pub(crate) struct Turn<'a> {
    pub(crate) rt: &'a AgentRuntime,
    pub(crate) ctx: &'a ToolExecutionContext,
    pub(crate) emitter: Emitter<'a>,
    /// The model this turn calls: the session's (see [`AgentRuntime::session_model`]).
    pub(crate) provider: Arc<dyn Provider>,
    /// The session's entries after the summary, oldest first (including this turn's).
    entries: Vec<Entry>,
    summary: Option<SummaryState>,
    notes: Vec<RecalledNote>,
    /// Sequence number of this turn's user message.
    user_seq: u64,
    usage: Usage,
    rounds: u32,
}

impl<'a> Turn<'a> {
    pub(crate) fn new(
        rt: &'a AgentRuntime,
        ctx: &'a ToolExecutionContext,
        emitter: Emitter<'a>,
    ) -> Self {
        Self {
            rt,
            ctx,
            emitter,
            provider: Arc::clone(&rt.provider),
            entries: Vec::new(),
            summary: None,
            notes: Vec::new(),
            user_seq: 0,
            usage: Usage::default(),
            rounds: 0,
        }
    }

    /// The context's entries: the session's after the summary, this turn's included.
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub(crate) async fn run(&mut self, text: &str) -> Result<TurnOutcome, RuntimeError> {
        if text.trim().is_empty() {
            return Err(RuntimeError::EmptyMessage);
        }
        self.start(text).await?;
        // Tools still arriving (an MCP server the agent started with is still connecting) are
        // waited for, so the first turn offers them.
        self.rt.tools.settled().await;
        loop {
            if self.ctx.cancellation.is_cancelled() {
                return self.cancelled(String::new()).await;
            }
            self.maybe_summarize().await?;
            if self.ctx.cancellation.is_cancelled() {
                return self.cancelled(String::new()).await;
            }
            let request = self.request();
            let cancel = &self.ctx.cancellation;
            let reply =
                stream_reply(self.provider.as_ref(), &request, &mut self.emitter, cancel).await;
            let response = match reply {
                Reply::Complete(response) => response,
                Reply::Cancelled { partial } => return self.cancelled(partial).await,
                Reply::Failed {
                    error,
                    partial,
                    attempts,
                } => {
                    if !partial.trim().is_empty() {
                        self.record(Message::assistant(format!("{partial}\n\n{CUT_OFF_MARK}")))
                            .await?;
                    }
                    return Err(RuntimeError::Provider {
                        attempts,
                        source: error,
                    });
                }
            };
            if let Some(usage) = response.usage {
                self.usage.add(usage);
                let ctx = self.ctx;
                let place = memory::CallPlace {
                    user: &ctx.user_id,
                    session: &ctx.session_id,
                    turn: &ctx.turn_id,
                };
                let model = self.provider.model();
                self.rt.journal.record_usage(place, model, usage).await;
            }
            let mut message = response.message;
            if message.tool_calls.is_empty() {
                let text = message
                    .content
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or_else(|| EMPTY_REPLY.to_owned());
                return self.complete(text, TurnStatus::Completed).await;
            }
            self.rounds += 1;
            for (i, call) in message.tool_calls.iter_mut().enumerate() {
                if call.id.trim().is_empty() {
                    call.id = format!("call_{}_{}", self.rounds, i + 1);
                }
            }
            let calls = message.tool_calls.clone();
            self.record(message).await?;
            if self.run_tools(&calls).await? == Dispatch::Cancelled {
                return self.cancelled(String::new()).await;
            }
            if self.rounds >= self.rt.config.max_tool_rounds {
                let text = format!(
                    "I stopped here: I used tools {} times in this turn, which is the limit \
                     (runtime.max_tool_rounds). Tell me to continue if you want me to keep going.",
                    self.rounds
                );
                return self.complete(text, TurnStatus::ToolRoundLimit).await;
            }
        }
    }

    /// Stores the user message, and reads what the context is built from: recalled notes, the
    /// summary, recent history. Recall and the summary are read while the message is stored.
    async fn start(&mut self, text: &str) -> Result<(), RuntimeError> {
        let (rt, ctx) = (self.rt, self.ctx);
        let (session, user) = (&ctx.session_id, &ctx.user_id);
        let message = Message::user(text);
        let stored = async {
            let seq = rt.journal.append(session, user, &message).await?;
            let recent = rt.journal.recent(session, rt.config.history_events).await?;
            Ok::<_, RuntimeError>((seq, recent))
        };
        let notes = async {
            match rt.journal.store() {
                Some(store) => rt.governed_recall(ctx, store, text).await,
                None => Vec::new(),
            }
        };
        let (stored, notes, summary) = tokio::join!(stored, notes, rt.journal.summary(session));
        let (user_seq, recent) = stored?;
        self.user_seq = user_seq;
        self.notes = notes;
        self.summary = summary?;
        let upto = self.summary.as_ref().map_or(0, |s| s.upto_seq);
        self.entries = recent
            .into_iter()
            .filter(|e| e.seq > upto || e.seq >= user_seq)
            .collect();
        Ok(())
    }

    /// Stores a message and adds it to the context of the next model call.
    pub(crate) async fn record(&mut self, message: Message) -> Result<(), RuntimeError> {
        let (session, user) = (&self.ctx.session_id, &self.ctx.user_id);
        let seq = self.rt.journal.append(session, user, &message).await?;
        self.entries.push(Entry { seq, message });
        Ok(())
    }

    fn system(&self) -> String {
        let summary = self.summary.as_ref().map(|s| s.summary.as_str());
        system_text(&self.rt.system_prompt, &self.notes, summary)
    }

    /// The request for the next model call: system text, as much recent history as fits (with the
    /// recalled notes just before the user's message), tools.
    fn request(&self) -> ChatRequest {
        let system = self.system();
        let notes = notes_message(&self.notes);
        let notes_cost = notes.as_ref().map_or(0, estimate_message);
        let messages = repair(&self.entries);
        let must_keep = messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        // The tools offered now (an MCP server's list may have changed since the last turn).
        let tools = self.rt.tools.schemas();
        let budget = self
            .rt
            .limits
            .prompt_budget()
            .saturating_sub(estimate_tools(&tools))
            .saturating_sub(estimate_text(&system))
            .saturating_sub(notes_cost);
        let mut window = fit(&messages, budget, must_keep).to_vec();
        if let Some(notes) = notes {
            let at = window
                .iter()
                .rposition(|m| m.role == Role::User)
                .unwrap_or(0);
            window.insert(at, notes);
        }
        ChatRequest {
            system: Some(system),
            messages: window,
            tools,
            max_output_tokens: self.rt.limits.max_output_tokens,
            force_tool: None,
        }
    }

    /// Summarises older history when the context has grown past the trigger.
    async fn maybe_summarize(&mut self) -> Result<(), RuntimeError> {
        let rt = self.rt;
        let window = rt.limits.context_window;
        let history: u32 = self
            .entries
            .iter()
            .map(|e| estimate_message(&e.message))
            .fold(0, u32::saturating_add);
        let total = estimate_text(&self.system())
            .saturating_add(estimate_tools(&rt.tools.schemas()))
            .saturating_add(history);
        if total <= fraction_of(window, rt.config.summary_trigger) {
            return Ok(());
        }
        let Some(newest_user) = self.entries.iter().position(|e| e.seq == self.user_seq) else {
            return Ok(());
        };
        let keep = fraction_of(window, rt.config.summary_keep);
        let Some(cut) = plan_cut(&self.entries, keep, newest_user) else {
            return Ok(());
        };
        // What is folded away is captured first (in the background: the turn does not wait).
        if let Some(capture) = &rt.capture {
            capture.before_summary(self.ctx);
        }
        let previous = self.summary.as_ref().map(|s| s.summary.as_str());
        let made = summarize(
            self.provider.as_ref(),
            previous,
            &self.entries[..cut],
            &rt.config,
            rt.limits,
            &self.ctx.cancellation,
        )
        .await;
        let Some((text, kind, used)) = made else {
            return Ok(());
        };
        if let Some(usage) = used {
            // A summary call is spent on the turn's behalf: it counts in the session's usage.
            let ctx = self.ctx;
            let place = memory::CallPlace {
                user: &ctx.user_id,
                session: &ctx.session_id,
                turn: &ctx.turn_id,
            };
            rt.journal
                .record_usage(place, self.provider.model(), usage)
                .await;
        }
        let upto = self.entries[cut - 1].seq;
        let expected = self.summary.as_ref().map_or(0, |s| s.epoch);
        let session = &self.ctx.session_id;
        if rt
            .journal
            .swap_summary(session, expected, &text, upto)
            .await?
        {
            tracing::info!(
                ?kind,
                upto,
                epoch = expected + 1,
                "summarised older history"
            );
            self.summary = Some(SummaryState {
                epoch: expected + 1,
                summary: text,
                upto_seq: upto,
            });
        } else {
            tracing::info!("another turn summarised this session first; using its summary");
            self.summary = rt.journal.summary(session).await?;
        }
        let upto = self.summary.as_ref().map_or(0, |s| s.upto_seq);
        let user_seq = self.user_seq;
        // This turn's messages stay, whatever another summariser covered.
        self.entries.retain(|e| e.seq > upto || e.seq >= user_seq);
        Ok(())
    }

    async fn complete(
        &mut self,
        text: String,
        status: TurnStatus,
    ) -> Result<TurnOutcome, RuntimeError> {
        self.record(Message::assistant(text.clone())).await?;
        self.emitter
            .send(TurnEvent::TurnCompleted {
                message: text.clone(),
                usage: self.usage,
            })
            .await;
        Ok(self.outcome(status, text))
    }

    /// Leaves the session consistent after cancellation: partial text kept and marked, or a note.
    /// (Tool calls already have their results: dispatch gives every call one.)
    async fn cancelled(&mut self, partial: String) -> Result<TurnOutcome, RuntimeError> {
        let text = if partial.trim().is_empty() {
            CANCELLED_NOTE.to_owned()
        } else {
            format!("{partial}\n\n{CANCELLED_MARK}")
        };
        self.record(Message::assistant(text.clone())).await?;
        self.emitter
            .send(TurnEvent::TurnCancelled { usage: self.usage })
            .await;
        Ok(self.outcome(TurnStatus::Cancelled, text))
    }

    fn outcome(&self, status: TurnStatus, message: String) -> TurnOutcome {
        TurnOutcome {
            status,
            message,
            usage: self.usage,
            tool_rounds: self.rounds,
        }
    }
}
