//! The per-call context handed to every tool.

use crate::{
    CancellationToken, NoteChanges, ProgressSink, SessionId, TurnId, UserId, WorkspacePaths,
};

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
    /// Untrusted content in the model's context when the call is made (set by the runtime for
    /// each call from the context it sends, earlier turns included until they are summarised
    /// away; set by governance for an untrusted MCP client). Memory writes made with it are
    /// recorded as coming from that source and stay unconfirmed until the user confirms them.
    pub untrusted_input: Option<UntrustedInput>,
    /// Which surface the call came through (the agent's own model, an MCP client, the CLI, a
    /// gateway frame) and the client's name: governance (permissions, PII, rate limits, audit)
    /// is configured per surface. Set by whoever builds the context, never from arguments.
    pub surface: CallSurface,
    /// Set by the registry's governance stage for a governed memory call, so that the write it
    /// makes records its audit row in the write's own transaction. `None` everywhere else.
    pub audit: Option<AuditTag>,
    /// What this caller may read, as the governance stage decided for the call: a write whose
    /// answer would show stored text (a near-duplicate's, an exact duplicate's id) shows none to
    /// a caller that may not read it, and a search leaves out what it may not read. Everything
    /// outside a governed call.
    pub reads: ReadGrant,
    /// Where the memory tools record what the call changed (the runtime gives each call its own
    /// and reports them with the call's `tool_finished`, for the client's undo lines).
    pub changes: NoteChanges,
    /// Where a long call reports how far it got (the runtime gives each call one that becomes
    /// `tool_progress` events; nobody listens elsewhere).
    pub progress: ProgressSink,
}

/// The namespaces a caller may read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ReadGrant {
    /// No read at all (the surface or a rule refuses the read class).
    pub denied: bool,
    /// Pattern lists that each must match (one per rule naming namespaces; see
    /// [`namespace_matches`]). Empty: any namespace.
    pub namespaces: Vec<Vec<String>>,
}

impl ReadGrant {
    /// Nothing may be read.
    pub fn none() -> Self {
        Self {
            denied: true,
            namespaces: Vec::new(),
        }
    }

    /// Whether the caller may read what is stored in `namespace`.
    pub fn permits(&self, namespace: &str) -> bool {
        !self.denied
            && self
                .namespaces
                .iter()
                .all(|patterns| patterns.iter().any(|p| namespace_matches(p, namespace)))
    }
}

/// `pattern` is an exact namespace or a prefix ending in `*` (`session.*` matches `session.a`
/// and `session.a.b`; `*` matches every namespace).
pub fn namespace_matches(pattern: &str, namespace: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => namespace.starts_with(prefix),
        None => pattern == namespace,
    }
}

/// Text someone other than the user may have written, in the model's context when it writes (a
/// tool's output still in the context, from this turn or an earlier one), or sent by an
/// untrusted client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UntrustedInput {
    /// A file's contents, a file listing or a file search result.
    File,
    /// A shell command's output.
    Shell,
    /// A web page.
    Web,
    /// A note read back that the user has not confirmed (itself written after untrusted input).
    Note,
    /// What an MCP client sends, on a surface not configured `trusted`: another program's text.
    Client,
    /// What one of the user's MCP servers returned from a tool call.
    Mcp,
}

impl ToolExecutionContext {
    /// A context for one call or turn of `user_id`: the agent's own surface, not cancelled, no
    /// call id, no audit tag, no untrusted input read yet. Callers that differ set the field.
    pub fn new(
        user_id: UserId,
        session_id: SessionId,
        turn_id: TurnId,
        workspace: WorkspacePaths,
    ) -> Self {
        Self {
            user_id,
            session_id,
            turn_id,
            workspace,
            cancellation: CancellationToken::default(),
            call_id: None,
            surface: CallSurface::default(),
            audit: None,
            untrusted_input: None,
            reads: ReadGrant::default(),
            changes: NoteChanges::default(),
            progress: ProgressSink::default(),
        }
    }
}

/// The ways a user's memory is reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Surface {
    /// The agent's own model, in a turn.
    #[default]
    Agent,
    /// An MCP client (another agent, a desktop assistant).
    Mcp,
    /// The operator's `runner` command line.
    Cli,
    /// The user's own gateway frames (TUI, WebSocket clients).
    Gateway,
    /// The runtime's background capture call, proposing what to remember after a turn.
    Capture,
}

impl Surface {
    pub const ALL: [Surface; 5] = [
        Surface::Agent,
        Surface::Mcp,
        Surface::Cli,
        Surface::Gateway,
        Surface::Capture,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Agent => "agent",
            Surface::Mcp => "mcp",
            Surface::Cli => "cli",
            Surface::Gateway => "gateway",
            Surface::Capture => "capture",
        }
    }
}

/// The surface of a call and, when known, the client's own name (an MCP client's
/// `clientInfo.name`, `oxydra-tui`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CallSurface {
    pub kind: Surface,
    pub client: Option<String>,
}

impl CallSurface {
    pub fn new(kind: Surface) -> Self {
        Self { kind, client: None }
    }

    pub fn with_client(mut self, client: impl Into<String>) -> Self {
        self.client = Some(client.into());
        self
    }
}

/// What the audit row of a governed write records besides the note it touched: the surface and
/// client, the tool, the operation, the namespace and key, and how many values of each kind of
/// PII or secret were redacted (never the text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AuditTag {
    pub surface: CallSurface,
    pub tool: String,
    /// `read`, `write` or `delete`.
    pub operation: &'static str,
    pub namespace: Option<String>,
    pub key: Option<String>,
    /// Kind (`email`, `phone`, `card`, `iban`, `national_id`, `secret`) and count.
    pub redactions: Vec<(String, u32)>,
}
