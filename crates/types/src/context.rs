//! The per-call context handed to every tool.

use crate::{CancellationToken, SessionId, TurnId, UserId, WorkspacePaths};

/// Who is asking, in which session and turn, where their files live, and whether the turn was
/// cancelled. Built fresh for each turn by the gateway or CLI and passed by reference to every tool
/// call; tools never read identity from anywhere else (no shared holders, globals or arguments).
#[derive(Debug, Clone)]
pub struct ToolExecutionContext {
    pub user_id: UserId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    pub workspace: WorkspacePaths,
    pub cancellation: CancellationToken,
    /// The model's id for the tool call being run, when there is one (set by the runtime for each
    /// call; `None` for a turn's shared context). Writes record it so that a retried call never
    /// writes twice.
    pub call_id: Option<String>,
    /// Untrusted content this turn has read before the call (set by the runtime for each call;
    /// `None` when the turn has read none, or outside a turn). Memory writes made after it are
    /// recorded as coming from that source and stay unconfirmed until the user confirms them.
    pub untrusted_input: Option<UntrustedInput>,
}

/// Text someone other than the user may have written, read by a tool during a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UntrustedInput {
    /// A file's contents, a file listing or a file search result.
    File,
    /// A shell command's output.
    Shell,
    /// A web page.
    Web,
}
