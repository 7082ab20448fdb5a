//! The reducer over server frames.
//!
//! Turn events of the current session are applied once each: an event whose `seq` is not newer
//! than the last one seen is a replay already shown and is dropped, so reconnecting (or resyncing
//! after `lagged`) never repeats text. Events of other sessions are ignored.

use types::{
    ClientFrame, ErrorCode, HistoryEvent, ServerFrame, SessionId, SessionSummary, TurnEvent,
    TurnId, Usage,
};

use super::transcript::from_history;
use super::{App, ConnState, Entry, HistoryCursor, PendingApproval, ToolState, TurnState};

/// The first notice of a new conversation.
pub(super) const WELCOME: &str = "Type a message and press Enter to send (Alt+Enter for a new line). /help lists keys and commands.";

/// Messages fetched per history page.
pub(super) const HISTORY_PAGE: u32 = 50;

impl App {
    /// Applies one server frame; returns the frames to send in answer.
    pub fn on_frame(&mut self, frame: ServerFrame) -> Vec<ClientFrame> {
        if let Some(seq) = frame.seq() {
            if frame.event_session() != self.current_session_id() || seq <= self.last_seq {
                return Vec::new();
            }
            self.last_seq = seq;
        }
        match frame {
            ServerFrame::TurnStarted {
                turn_id,
                client_turn_id,
                ..
            } => {
                if self.pending_turn.as_deref() == Some(client_turn_id.as_str()) {
                    self.pending_turn = None;
                }
                self.active_turn = Some(turn_id);
                self.turn = TurnState::Thinking;
                Vec::new()
            }
            ServerFrame::Turn { turn_id, event, .. } => self.on_turn_event(turn_id, event),
            ServerFrame::Error {
                code,
                message,
                reference,
            } => self.error(code, message, reference),
            s @ (ServerFrame::HelloOk { .. }
            | ServerFrame::SessionCreated { .. }
            | ServerFrame::SessionSwitched { .. }
            | ServerFrame::SessionList { .. }) => self.on_session_frame(s),
            m @ (ServerFrame::Models { .. }
            | ServerFrame::ModelSet { .. }
            | ServerFrame::Usage { .. }) => self.on_model_frame(m),
            ServerFrame::History {
                session_id,
                events,
                next_before,
            } => {
                if let Some(more) = self.export_page(&session_id, &events, next_before) {
                    return more;
                }
                self.history_page(&session_id, &events, next_before)
            }
            ServerFrame::Lagged { session_id, .. } => self.lagged(session_id),
            ServerFrame::Pong => Vec::new(),
            ServerFrame::McpStatus { servers } => self.mcp_status(servers),
            note @ (ServerFrame::NoteList { .. }
            | ServerFrame::NoteResults { .. }
            | ServerFrame::Note { .. }
            | ServerFrame::NoteEdited { .. }
            | ServerFrame::NoteDeleted { .. }
            | ServerFrame::NoteVersions { .. }
            | ServerFrame::DeletedNotes { .. }
            | ServerFrame::NoteRestored { .. }
            | ServerFrame::NoteConfirmed { .. }) => self.on_note_frame(note),
            s @ (ServerFrame::Notification { .. } | ServerFrame::Schedules { .. }) => {
                self.on_schedule_frame(s)
            }
            c @ (ServerFrame::MemoryCaptured { .. }
            | ServerFrame::PendingMemories { .. }
            | ServerFrame::MemoryAccepted { .. }
            | ServerFrame::MemoryRejected { .. }
            | ServerFrame::ConversationResults { .. }) => self.on_capture_frame(c),
        }
    }

    /// Applies one event of the current session's turn (already checked to be new).
    fn on_turn_event(&mut self, turn_id: TurnId, event: TurnEvent) -> Vec<ClientFrame> {
        match event {
            TurnEvent::AssistantDelta { text } => {
                self.turn = TurnState::Writing;
                self.append_text(turn_id, &text);
            }
            TurnEvent::ToolStarted {
                call_id,
                name,
                arguments,
            } => {
                self.end_streaming();
                self.turn = TurnState::Tool(name.clone());
                self.push(Entry::Tool {
                    call_id,
                    name,
                    arguments,
                    state: ToolState::Running,
                });
            }
            TurnEvent::ToolFinished {
                call_id,
                name,
                ok,
                summary,
                duration_ms,
                changes,
            } => {
                self.note_changes(changes);
                self.tool_finished(call_id, name, ok, summary, duration_ms);
            }
            TurnEvent::ToolProgress {
                name,
                progress,
                total,
                message,
                ..
            } => self.tool_progress(&name, progress, total, message.as_deref()),
            TurnEvent::ApprovalRequested {
                call_id,
                name,
                arguments,
                reason,
            } => self.approval_requested(call_id, name, arguments, reason),
            TurnEvent::ModelRetry {
                attempt,
                max_attempts,
                reason,
                ..
            } => {
                self.turn = TurnState::Retrying {
                    attempt,
                    max_attempts,
                    reason,
                };
            }
            TurnEvent::TurnCompleted { message, usage } => {
                return self.turn_completed(turn_id, &message, usage);
            }
            TurnEvent::TurnCancelled { usage } => {
                self.end_turn(Some(usage));
                self.push(Entry::info("Stopped."));
            }
            TurnEvent::TurnFailed { reason } => {
                self.end_turn(None);
                self.push(Entry::error(format!("The reply failed: {reason}")));
            }
        }
        Vec::new()
    }

    fn approval_requested(
        &mut self,
        call_id: String,
        name: String,
        arguments: String,
        reason: Option<String>,
    ) {
        self.end_streaming();
        self.turn = TurnState::Approval;
        self.approval = Some(PendingApproval::new(
            call_id.clone(),
            name.clone(),
            arguments.clone(),
            reason,
        ));
        self.push(Entry::Approval {
            call_id,
            name,
            arguments,
            answer: None,
        });
    }

    fn turn_completed(&mut self, turn_id: TurnId, message: &str, usage: Usage) -> Vec<ClientFrame> {
        let shown = self.entries.iter().any(|e| {
            matches!(e, Entry::Assistant { turn: Some(t), text, .. }
                if *t == turn_id && !text.trim().is_empty())
        });
        if !shown && !message.trim().is_empty() {
            self.append_text(turn_id, message);
        }
        self.end_turn(Some(usage));
        // What the session has spent now, and (with its first message) its title: quietly.
        let mut ask: Vec<ClientFrame> = self.ask_usage().into_iter().collect();
        if self.session.as_ref().is_some_and(|s| s.title.is_none()) && !self.title_refresh {
            self.title_refresh = true;
            ask.push(ClientFrame::ListSessions);
        }
        ask
    }

    /// This client fell behind on `session_id`: resync the current session from the last event
    /// shown.
    fn lagged(&mut self, session_id: SessionId) -> Vec<ClientFrame> {
        if Some(&session_id) != self.current_session_id() {
            return Vec::new();
        }
        vec![ClientFrame::Resync {
            session_id,
            after_seq: self.last_seq,
        }]
    }

    pub(super) fn hello_ok(&mut self, session: SessionSummary) -> Vec<ClientFrame> {
        self.conn = ConnState::Online;
        if self.current_session_id() == Some(&session.session_id) {
            if session.last_seq < self.last_seq {
                // The gateway restarted: its numbering starts again and no turn survived.
                self.last_seq = session.last_seq;
                if self.turn.is_active() {
                    self.end_turn(None);
                    self.push(Entry::error(
                        "The agent restarted and the reply was cut short: ask again if you need it.",
                    ));
                } else {
                    self.push(Entry::info("Reconnected (the agent restarted)."));
                }
            } else {
                self.push(Entry::info("Reconnected."));
            }
            self.session = Some(session);
            return Vec::new();
        }
        let wanted = self.wanted_session.take();
        let fresh = session.messages == 0;
        let mut load = self.attach(session);
        let missing = self.missing_session.take().or(wanted);
        if let Some(missing) = missing
            && Some(&missing) != self.current_session_id()
        {
            self.push(Entry::error(format!(
                "There is no session {missing} for {}: a new one was started instead. /sessions lists yours.",
                self.user
            )));
        }
        if let Some((lost, empty)) = self.lost_session.take() {
            let now = self.current_session_id().map(ToString::to_string);
            let now = now.unwrap_or_default();
            self.push(match empty {
                // An empty session is not stored, so a restart forgets it: nothing was lost.
                true => Entry::info(format!(
                    "Reconnected (the agent restarted): you are on session {now}; the empty one \
                     before it was not kept."
                )),
                false => Entry::error(format!(
                    "Reconnected, but session {lost} is gone: you are on a new session, {now}. \
                     /sessions lists yours."
                )),
            });
        }
        if fresh {
            self.push(Entry::info(WELCOME));
        }
        if std::mem::take(&mut self.continue_last) {
            load.push(self.find_latest(super::Finding::AtStart));
        }
        load.extend(self.ask_usage());
        load
    }

    /// Makes `session` the current one with an empty transcript; asks for its stored messages.
    pub(super) fn attach(&mut self, session: SessionSummary) -> Vec<ClientFrame> {
        self.entries.clear();
        self.found_entry = None;
        self.last_seq = 0;
        self.turn = TurnState::Idle;
        self.active_turn = None;
        self.pending_turn = None;
        self.approval = None;
        self.scroll = 0;
        self.title_asked = false;
        let load = session.messages > 0;
        let id = session.session_id.clone();
        self.session = Some(session);
        if load {
            self.history = HistoryCursor::Loading;
            vec![ClientFrame::GetHistory {
                session_id: id,
                before: None,
                limit: HISTORY_PAGE,
            }]
        } else {
            self.history = HistoryCursor::Start;
            Vec::new()
        }
    }

    fn error(
        &mut self,
        code: ErrorCode,
        message: String,
        reference: Option<String>,
    ) -> Vec<ClientFrame> {
        if reference.is_some() && reference == self.pending_turn {
            self.pending_turn = None;
            self.turn = TurnState::Idle;
        }
        if reference
            .as_deref()
            .is_some_and(|r| r.ends_with("_note") || r.ends_with("_notes") || r == "note_history")
        {
            self.note_request_failed();
        }
        match code {
            ErrorCode::EventsExpired => {
                self.push(Entry::error(
                    "Some of the reply was missed while disconnected; reloading the conversation.",
                ));
                if let Some(id) = self.current_session_id().cloned() {
                    self.entries.clear();
                    self.found_entry = None;
                    self.history = HistoryCursor::Loading;
                    return vec![ClientFrame::GetHistory {
                        session_id: id,
                        before: None,
                        limit: HISTORY_PAGE,
                    }];
                }
            }
            ErrorCode::SessionNotFound if self.conn != ConnState::Online => {
                // The resume failed: start afresh on the next attempt.
                let empty = !self.has_user_messages();
                let lost = self
                    .session
                    .take()
                    .map(|s| (s.session_id, s.messages == 0 && empty));
                let wanted = self.wanted_session.take();
                self.last_seq = 0;
                // Said once the new session is there (attaching clears the transcript).
                match (lost, wanted) {
                    (Some(lost), _) => self.lost_session = Some(lost),
                    (None, Some(id)) => self.missing_session = Some(id),
                    (None, None) => {}
                }
            }
            ErrorCode::SessionNotFound => self.push(Entry::error(
                "That session was not found: /sessions lists yours, /switch <number> opens one.",
            )),
            ErrorCode::NoActiveTurn => {
                if self.turn == TurnState::Cancelling {
                    self.turn = TurnState::Idle;
                }
                self.push(Entry::info("Nothing is running."));
            }
            ErrorCode::ApprovalNotFound => {
                self.approval = None;
                self.push(Entry::info(
                    "That request was already answered or has ended.",
                ));
            }
            _ => self.push(Entry::error(message)),
        }
        Vec::new()
    }

    fn history_page(
        &mut self,
        session: &SessionId,
        events: &[HistoryEvent],
        next: Option<u64>,
    ) -> Vec<ClientFrame> {
        if Some(session) != self.current_session_id() {
            return Vec::new();
        }
        let older = from_history(events);
        if older.is_empty() && next.is_none() && self.history != HistoryCursor::Loading {
            self.push(Entry::info("This is the start of the conversation."));
        }
        let mut entries = older;
        if next.is_some() {
            entries.insert(0, Entry::info("Earlier messages: /history"));
        }
        let added = entries.len();
        let mut removed = 0;
        // Drop the previous "earlier messages" marker: the page replaces it.
        if matches!(self.history, HistoryCursor::Before(_))
            && matches!(self.entries.first(), Some(Entry::Notice { text, .. }) if text == "Earlier messages: /history")
        {
            self.entries.remove(0);
            removed = 1;
        }
        self.history = next.map_or(HistoryCursor::Start, HistoryCursor::Before);
        entries.append(&mut self.entries);
        self.entries = entries;
        // The marked hit moves down by what came in before it.
        self.found_entry = self
            .found_entry
            .map(|i| (i + added).saturating_sub(removed));
        self.find_opened(session, events, next)
    }

    /// The history command: the page before what is shown.
    pub(super) fn older_history(&mut self) -> Vec<ClientFrame> {
        let Some(id) = self.current_session_id().cloned() else {
            return Vec::new();
        };
        match self.history {
            HistoryCursor::Before(before) => {
                vec![ClientFrame::GetHistory {
                    session_id: id,
                    before: Some(before),
                    limit: HISTORY_PAGE,
                }]
            }
            HistoryCursor::Start => {
                self.push(Entry::info("This is the start of the conversation."));
                Vec::new()
            }
            HistoryCursor::Loading => Vec::new(),
        }
    }

    /// Appends to the turn's streaming text; notices that came in between (a reconnect) do not
    /// split it.
    fn append_text(&mut self, turn_id: TurnId, text: &str) {
        let last = self
            .entries
            .iter_mut()
            .rev()
            .find(|e| !matches!(e, Entry::Notice { .. }));
        if let Some(Entry::Assistant {
            turn: Some(t),
            text: shown,
            streaming: true,
        }) = last
            && *t == turn_id
        {
            shown.push_str(text);
            return;
        }
        self.push(Entry::Assistant {
            turn: Some(turn_id),
            text: text.to_owned(),
            streaming: true,
        });
    }

    fn end_streaming(&mut self) {
        for entry in self.entries.iter_mut().rev().take(8) {
            if let Entry::Assistant { streaming, .. } = entry {
                *streaming = false;
            }
        }
    }

    fn end_turn(&mut self, usage: Option<Usage>) {
        self.end_streaming();
        if self.turn_changed_memory() {
            self.report_changes();
        }
        for entry in &mut self.entries {
            if let Entry::Tool { state, .. } = entry
                && *state == ToolState::Running
            {
                *state = ToolState::Finished {
                    ok: false,
                    summary: "stopped".into(),
                    duration_ms: None,
                };
            }
        }
        self.turn = TurnState::Idle;
        self.active_turn = None;
        self.approval = None;
        if usage.is_some() {
            self.last_usage = usage;
        }
    }

    pub(super) fn tool_state(&mut self, id: &str) -> Option<&mut ToolState> {
        self.entries.iter_mut().rev().find_map(|e| match e {
            Entry::Tool { call_id, state, .. } if call_id == id => Some(state),
            _ => None,
        })
    }
}
