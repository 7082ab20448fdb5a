//! How a turn ends ([`TurnOutcome`]), and the delivery rules for what it reports while it runs
//! ([`TurnEvent`], declared in `types` so the gateway's frames carry it as it is).
//!
//! Events go to a bounded `tokio::sync::mpsc::Sender<TurnEvent>` owned by the caller:
//! - **Text deltas never block.** They are offered with `try_send`; while the channel is full they
//!   are coalesced into one pending delta, delivered before the next event. No text is lost, and
//!   the model's stream keeps being read however slow the consumer is.
//! - **Every other event waits for room** (backpressure: a slow consumer slows the turn, in order,
//!   without losing anything), but never past cancellation: once the turn is cancelled, events
//!   that do not fit are handed to a background task that delivers them in order. So a consumer that
//!   stops reading can always end the turn by cancelling it.
//! - **Progress never blocks either.** A running call's `ToolProgress` is offered with `try_send`
//!   at most every [`PROGRESS_EVERY`] per call and dropped while the channel is full or once the
//!   turn is cancelled: the next report says the same and more.
//! - A dropped receiver is fine: the turn runs to its end without events.

use serde::Serialize;
use tokio::sync::mpsc::{self, error::TrySendError};
use types::{CancellationToken, ProgressSink, ToolCall, ToolProgress, TurnEvent, Usage};

/// The shortest time between two progress events of one call.
pub(crate) const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// How a turn ended (when it did not fail).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model gave its final answer.
    Completed,
    /// The model kept calling tools until `runtime.max_tool_rounds`; the agent stopped and said so.
    ToolRoundLimit,
    /// The turn was cancelled.
    Cancelled,
}

/// The result of [`crate::AgentRuntime::run_turn`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOutcome {
    pub status: TurnStatus,
    /// The last assistant text stored for the turn (for a cancelled turn, the partial text with
    /// its cancellation note).
    pub message: String,
    /// Tokens reported by the provider over every model call of the turn.
    pub usage: Usage,
    /// Rounds of tool calls run.
    pub tool_rounds: u32,
}

/// The turn's side of the event channel.
pub(crate) struct Emitter<'a> {
    tx: &'a mpsc::Sender<TurnEvent>,
    cancel: &'a CancellationToken,
    pending_text: String,
    /// Events that did not fit after cancellation, delivered by [`Emitter::close`].
    backlog: Vec<TurnEvent>,
    closed: bool,
}

impl<'a> Emitter<'a> {
    pub(crate) fn new(tx: &'a mpsc::Sender<TurnEvent>, cancel: &'a CancellationToken) -> Self {
        Self {
            tx,
            cancel,
            pending_text: String::new(),
            backlog: Vec::new(),
            closed: false,
        }
    }

    /// Where `call` reports its progress: `ToolProgress` events, offered without waiting.
    pub(crate) fn progress_sink(&self, call: &ToolCall) -> ProgressSink {
        let (tx, cancel) = (self.tx.clone(), self.cancel.clone());
        let (call_id, name) = (call.id.clone(), call.name.clone());
        let last = std::sync::Mutex::new(None::<std::time::Instant>);
        ProgressSink::new(move |p: ToolProgress| {
            if cancel.is_cancelled() {
                return;
            }
            let mut last = last
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|at| at.elapsed() < PROGRESS_EVERY) {
                return;
            }
            *last = Some(std::time::Instant::now());
            let _ = tx.try_send(TurnEvent::ToolProgress {
                call_id: call_id.clone(),
                name: name.clone(),
                progress: p.progress,
                total: p.total,
                message: p.message,
            });
        })
    }

    /// Offers a text delta without waiting.
    pub(crate) fn text(&mut self, text: &str) {
        if self.closed {
            return;
        }
        self.pending_text.push_str(text);
        if !self.backlog.is_empty() {
            return;
        }
        let event = TurnEvent::AssistantDelta {
            text: std::mem::take(&mut self.pending_text),
        };
        match self.tx.try_send(event) {
            Ok(()) => {}
            Err(TrySendError::Full(TurnEvent::AssistantDelta { text })) => self.pending_text = text,
            Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Closed(_)) => self.closed = true,
        }
    }

    /// Delivers `event` (after any pending text), waiting for room unless the turn is cancelled.
    pub(crate) async fn send(&mut self, event: TurnEvent) {
        if self.closed {
            return;
        }
        if !self.pending_text.is_empty() {
            let text = std::mem::take(&mut self.pending_text);
            self.deliver(TurnEvent::AssistantDelta { text }).await;
        }
        self.deliver(event).await;
    }

    async fn deliver(&mut self, event: TurnEvent) {
        if self.closed {
            return;
        }
        if !self.backlog.is_empty() {
            self.backlog.push(event);
            return;
        }
        if self.cancel.is_cancelled() {
            match self.tx.try_send(event) {
                Ok(()) => {}
                Err(TrySendError::Full(event)) => self.backlog.push(event),
                Err(TrySendError::Closed(_)) => self.closed = true,
            }
            return;
        }
        tokio::select! {
            biased;
            permit = self.tx.reserve() => match permit {
                Ok(permit) => permit.send(event),
                Err(_) => self.closed = true,
            },
            () = self.cancel.cancelled() => self.backlog.push(event),
        }
    }

    /// Ends the turn's delivery: anything still held is sent in order by a background task, so the
    /// turn never waits on a consumer that stopped reading.
    pub(crate) fn close(mut self) {
        if self.closed {
            return;
        }
        let mut rest = std::mem::take(&mut self.backlog);
        if !self.pending_text.is_empty() {
            let text = std::mem::take(&mut self.pending_text);
            rest.push(TurnEvent::AssistantDelta { text });
        }
        if rest.is_empty() {
            return;
        }
        let tx = self.tx.clone();
        tokio::spawn(async move {
            for event in rest {
                if tx.send(event).await.is_err() {
                    break;
                }
            }
        });
    }
}
