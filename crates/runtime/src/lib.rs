//! The agent turn loop.
//!
//! [`AgentRuntime::run_turn`] answers one user message: it stores the message, assembles the
//! context (system prompt with the memory-tool guide, the user's most relevant saved notes, the
//! rolling summary, as much recent history as fits the window, the tool schemas), streams the
//! model's reply, runs the tools it calls (read-only ones in parallel, privileged ones through the
//! approval policy) and loops until the model answers, the tool-round limit is hit, the turn is
//! cancelled or a call fails. Every message is stored as it happens; progress is reported as
//! [`TurnEvent`]s. The per-turn [`types::ToolExecutionContext`] is handed unchanged to every tool
//! call: the runtime keeps no per-user or per-turn state of its own. Callers read sessions and
//! history through it ([`AgentRuntime::conversations`], [`AgentRuntime::history_page`]), never from
//! the store directly.
//!
//! It does not serve network clients (that is the gateway), speak wire formats (provider), or
//! implement tools (tools).
//!
//! Modules:
//! - `runtime` — [`AgentRuntime`]: construction and [`AgentRuntime::run_turn`]
//! - `turn` — the loop of one turn, context assembly, summary trigger, cancellation handling
//! - `reply` — one streamed model reply with cancellation
//! - `dispatch` — running tool calls: parallel read-only groups, approvals, results
//! - `approval` — [`Approver`], [`PendingApprovals`], [`SessionGrants`]
//! - `events` — [`TurnOutcome`], the delivery rules for [`TurnEvent`]s (declared in `types`)
//! - `history` — provider-safe history: repair, fitting the budget
//! - `summary` — the rolling summary (model-written or extractive)
//! - `capture` — after a turn, the background call that proposes what to remember
//!   (`record_memories`), applied through the governed pipeline or kept for the user
//! - `recall` — saved notes recalled for the message
//! - `prompt` — the built-in system prompt and memory guide
//! - `budget` — [`ModelLimits`] and token estimates
//! - `journal` — where history lives (the memory store, or process memory)
//! - `sessions` — session and history reads for callers ([`Conversation`], [`HistoryEntry`])
//! - `conversation_search` — the user's search of their past conversations
//! - `notes` — the user's own view of their notes: list, search, read, edit, delete (the protocol's one note shape, `types::NoteView`)
//! - `note_lifecycle` — history, deleted notes, restore, confirm, governed as the caller's surface
//! - `scheduler` — [`Scheduler`]: one user's due schedules run as turns of their own ([`RunHost`])
//! - `scheduled_run` — one scheduled run: its context, input, retries and notification
//! - `schedule_ops` — the user's list, cancel, pause and resume of schedules, governed
//! - `error` — [`RuntimeError`]

mod approval;
mod budget;
mod capture;
mod conversation_search;
mod dispatch;
mod error;
mod events;
mod forget_gate;
mod history;
mod journal;
mod models;
mod note_lifecycle;
mod notes;
mod prompt;
mod recall;
mod reply;
mod runtime;
mod schedule_ops;
mod scheduled_run;
mod scheduler;
mod sessions;
mod summary;
mod turn;
mod untrusted;

pub use approval::{
    ApprovalDecision, ApprovalFuture, ApprovalRequest, Approver, PendingApprovals, SessionGrants,
};
pub use budget::{ModelLimits, estimate_message, estimate_text, estimate_tools};
pub use capture::UserReport;
pub use conversation_search::MAX_CONVERSATION_HITS;
pub use error::RuntimeError;
pub use events::{TurnOutcome, TurnStatus};
pub use models::{ModelInfo, ModelOption, Spend};
pub use note_lifecycle::NoteTimeline;
pub use notes::{MAX_NOTES_PAGE, NoteListing, Searched, rfc3339};
pub use prompt::{DEFAULT_SYSTEM_PROMPT, FILES_MEMORY_GUIDE, MEMORY_GUIDE};
pub use runtime::AgentRuntime;
pub use scheduled_run::{notification_view, schedule_session};
pub use scheduler::{LATE_AFTER, MAX_SLEEP, RunHost, Scheduler};
pub use sessions::{Conversation, HistoryEntry};
pub use types::TurnEvent;
