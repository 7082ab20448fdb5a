//! The UI model: pure state and the reducer over what happens — server frames, connection
//! changes, keys and pastes. Nothing here does I/O; each handler returns the frames to send.
//!
//! - `transcript` — the entries shown and stored history as entries
//! - `tool_line` — one compact line per tool call
//! - `frames` — the reducer over [`ServerFrame`]s (dedup by `seq`, resume, sessions)
//! - `keys` — keys, pastes and slash commands
//! - `sessions` — the session list, `/switch` targets, `--continue`, `/new`
//! - `approval` — the focused approval prompt ([`ApprovalChoice`])
//! - `memory` — `/memory` (browse, search, edit, delete notes), memory changes
//! - `memory_history` — versions, deleted notes, revert, restore, confirm, and `/undo`
//! - `captured` — what capture changed (undoable like the agent's changes) and proposes
//! - `mcp` — the user's own MCP servers (`mcp_status`): which are down, notices
//! - `tool_calls` — a call that finished, a running call's progress

mod approval;
mod captured;
mod export;
mod frames;
mod keys;
mod mcp;
mod memory;
mod memory_history;
mod numbered;
mod schedules;
mod sessions;
mod spend;
pub mod tool_calls;
pub mod tool_line;
pub mod transcript;

#[cfg(test)]
mod approval_tests;
#[cfg(test)]
mod mcp_tests;
#[cfg(test)]
mod sessions_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod undo_tests;

use std::time::Duration;

use types::{ClientFrame, ServerFrame, SessionId, SessionSummary, TurnId, Usage, UserId};

use crate::editor::Editor;
pub use approval::{ARM_DELAY, ApprovalChoice, PendingApproval};
pub use export::ExportFile;
pub use memory::{MemoryChange, Undo};
pub use schedules::{SchedulesCommand, notification_line, parse_schedules};
pub(crate) use spend::status as spend_status;
pub use spend::{Spend, money};
pub use tool_line::ToolState;
pub use transcript::{Entry, Level};

/// The connection, as the status bar shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnState {
    Connecting {
        attempt: u32,
    },
    Online,
    /// Lost; the next attempt is in `retry_in`.
    Offline {
        reason: String,
        retry_in: Duration,
    },
    /// Will not retry (wrong token, unknown user, other protocol version).
    Failed {
        reason: String,
    },
}

/// What the current turn is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnState {
    Idle,
    /// Sent; the gateway has not started it yet.
    Sending,
    Thinking,
    /// The model did not answer and is asked again: attempt `attempt` of `max_attempts`.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        reason: String,
    },
    Writing,
    Tool(String),
    Approval,
    Cancelling,
}

impl TurnState {
    pub fn is_active(&self) -> bool {
        *self != TurnState::Idle
    }
}

/// What the network client reports.
#[derive(Debug, Clone, PartialEq)]
pub enum ConnEvent {
    Connecting { attempt: u32 },
    Frame(ServerFrame),
    Offline { reason: String, retry_in: Duration },
    Failed { reason: String },
}

/// Where to resume after a reconnect: the session and the last `seq` seen on it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resume {
    pub session: Option<SessionId>,
    pub last_seq: Option<u64>,
}

/// Who asked for the most recent conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finding {
    /// `--continue`, once signed in: only while nothing was typed in the new session yet.
    AtStart,
    /// `/continue`.
    Asked,
}

/// How far back the stored history of the current session is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HistoryCursor {
    /// Not asked for yet, or a page is on its way.
    Loading,
    /// More before message `number`.
    Before(u64),
    /// Everything is shown.
    Start,
}

/// The whole state of the client.
#[derive(Debug)]
pub struct App {
    pub user: UserId,
    pub model: Option<String>,
    pub conn: ConnState,
    /// The session the connection is on (once known).
    pub session: Option<SessionSummary>,
    /// A session asked for (the `--session` flag), before `hello_ok` confirms it.
    wanted_session: Option<SessionId>,
    last_seq: u64,
    pub turn: TurnState,
    active_turn: Option<TurnId>,
    /// The `client_turn_id` of the turn we sent and the gateway has not started yet.
    pending_turn: Option<String>,
    turns_sent: u64,
    pub entries: Vec<Entry>,
    pub editor: Editor,
    pub approval: Option<PendingApproval>,
    /// Keys pressed this soon after an approval prompt appears do not count ([`ARM_DELAY`];
    /// tests set zero).
    pub arm_delay: Duration,
    pub show_details: bool,
    /// Lines scrolled up from the bottom (0: follow new text).
    pub scroll: usize,
    /// The entry `/search open` went to (an index in `entries`), drawn marked.
    pub found_entry: Option<usize>,
    /// The next draw scrolls so that `found_entry` starts at the top of the transcript.
    pub reveal_found: bool,
    page: usize,
    max_scroll: usize,
    sessions: Vec<SessionSummary>,
    /// A quiet `list_sessions` is on its way to learn the current session's new title.
    title_refresh: bool,
    /// A `--session` the gateway did not know, to mention once the new session is attached.
    missing_session: Option<SessionId>,
    /// The session a reconnect could not resume (the agent restarted without it) and whether
    /// it was still empty, to mention once the new session is attached.
    lost_session: Option<(SessionId, bool)>,
    /// An `/export` fetching the conversation, and the file it made, for the app loop to write.
    exporting: Option<export::Exporting>,
    export_file: Option<ExportFile>,
    /// The session's model and what it has spent, as the gateway last said (`get_usage`).
    pub spend: Option<Spend>,
    /// `/usage` was typed: show the next `usage` answer.
    usage_asked: bool,
    /// Continue the most recent conversation once signed in (`--continue`).
    pub continue_last: bool,
    /// A quiet `list_sessions` is on its way to find the most recent conversation.
    finding_latest: Option<Finding>,
    /// The title was asked for once in this session already.
    title_asked: bool,
    history: HistoryCursor,
    pub last_usage: Option<Usage>,
    memory: memory::MemoryView,
    /// The ids of the last `/schedules` list, by number.
    schedule_ids: Vec<String>,
    /// The user's own MCP servers, as the gateway last said (`mcp_status`).
    pub mcp_servers: Vec<types::McpServerView>,
    pub quit: bool,
}

impl App {
    pub fn new(user: UserId, session: Option<SessionId>, model: Option<String>) -> Self {
        Self {
            user,
            model,
            conn: ConnState::Connecting { attempt: 1 },
            session: None,
            wanted_session: session,
            last_seq: 0,
            turn: TurnState::Idle,
            active_turn: None,
            pending_turn: None,
            turns_sent: 0,
            entries: vec![Entry::info(frames::WELCOME)],
            editor: Editor::default(),
            approval: None,
            arm_delay: ARM_DELAY,
            show_details: false,
            scroll: 0,
            found_entry: None,
            reveal_found: false,
            page: 10,
            max_scroll: 0,
            sessions: Vec::new(),
            title_refresh: false,
            missing_session: None,
            lost_session: None,
            exporting: None,
            export_file: None,
            spend: None,
            usage_asked: false,
            continue_last: false,
            finding_latest: None,
            title_asked: false,
            history: HistoryCursor::Start,
            last_usage: None,
            memory: memory::MemoryView::default(),
            schedule_ids: Vec::new(),
            mcp_servers: Vec::new(),
            quit: false,
        }
    }

    /// What a reconnect should ask for.
    pub fn resume(&self) -> Resume {
        match &self.session {
            Some(s) => Resume {
                session: Some(s.session_id.clone()),
                last_seq: (self.last_seq > 0).then_some(self.last_seq),
            },
            None => Resume {
                session: self.wanted_session.clone(),
                last_seq: None,
            },
        }
    }

    /// The last `seq` seen on the current session.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Applies a connection event.
    pub fn on_conn(&mut self, event: ConnEvent) -> Vec<ClientFrame> {
        match event {
            ConnEvent::Connecting { attempt } => {
                self.conn = ConnState::Connecting { attempt };
                Vec::new()
            }
            ConnEvent::Frame(frame) => self.on_frame(frame),
            ConnEvent::Offline { reason, retry_in } => {
                if self.conn == ConnState::Online {
                    self.push(Entry::error(format!(
                        "Lost the connection ({reason}); reconnecting. Nothing you saw is lost."
                    )));
                }
                if self.turn == TurnState::Sending {
                    self.pending_turn = None;
                    self.turn = TurnState::Idle;
                    self.push(Entry::error(
                        "Your last message may not have reached the agent: if no reply comes after reconnecting, send it again (Up recalls it).",
                    ));
                }
                self.conn = ConnState::Offline { reason, retry_in };
                Vec::new()
            }
            ConnEvent::Failed { reason } => {
                self.push(Entry::error(reason.clone()));
                self.conn = ConnState::Failed { reason };
                self.turn = TurnState::Idle;
                Vec::new()
            }
        }
    }

    /// Tells the model how the transcript was laid out: its height, how far it can scroll and
    /// how far it was scrolled (further than asked when it scrolled to a search hit).
    pub fn set_layout(&mut self, page: usize, max_scroll: usize, scroll: usize) {
        self.page = page.max(1);
        self.max_scroll = max_scroll;
        self.scroll = scroll.min(max_scroll);
        self.reveal_found = false;
    }

    fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
    }

    /// The memory changes made in this run, numbered from 1 for `/undo`.
    pub fn memory_changes(&self) -> &[MemoryChange] {
        &self.memory.changes
    }

    fn current_session_id(&self) -> Option<&SessionId> {
        self.session.as_ref().map(|s| &s.session_id)
    }
}
