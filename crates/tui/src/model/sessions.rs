//! Finding sessions again: the `/sessions` list, what `/switch` names, `--continue` and
//! `/continue` (the most recent conversation), and `/new` that does not pile up empty sessions.

use types::{ClientFrame, ServerFrame, SessionId, SessionSummary};

use super::{App, Entry, Finding, TurnState};

impl App {
    /// Applies a frame about the connection's sessions: `hello_ok`, `session_created`,
    /// `session_switched`, `session_list`.
    pub(super) fn on_session_frame(&mut self, frame: ServerFrame) -> Vec<ClientFrame> {
        match frame {
            ServerFrame::HelloOk { session, model, .. } => {
                // The gateway knows the model it talks to; older gateways do not say.
                if model.is_some() {
                    self.model = model;
                }
                self.hello_ok(session)
            }
            ServerFrame::SessionCreated { session } => {
                self.attach(session);
                self.push(Entry::info(
                    "New session. Your notes from other sessions are still remembered.",
                ));
                Vec::new()
            }
            ServerFrame::SessionSwitched { session } => {
                let name = session_name(&session);
                let load = self.attach(session);
                self.push(Entry::info(format!("Switched to {name}.")));
                load
            }
            ServerFrame::SessionList { sessions } => self.list(sessions),
            _ => Vec::new(),
        }
    }

    /// Applies a `session_list`: a quiet title refresh, the pick for `--continue`, or the list
    /// the user asked for.
    pub(super) fn list(&mut self, sessions: Vec<SessionSummary>) -> Vec<ClientFrame> {
        if std::mem::take(&mut self.title_refresh) {
            if let Some(current) = self.session.as_mut()
                && let Some(listed) = sessions.iter().find(|s| s.session_id == current.session_id)
            {
                current.title.clone_from(&listed.title);
            }
            return Vec::new();
        }
        if let Some(finding) = self.finding_latest.take() {
            return self.continue_latest(&sessions, finding);
        }
        if sessions.is_empty() {
            self.push(Entry::info("No stored sessions yet."));
            return Vec::new();
        }
        let current = self.current_session_id().cloned();
        let mut text = String::from("Your sessions, most recent first:");
        for (i, s) in sessions.iter().enumerate() {
            let when = s
                .last_active_at
                .get(..16)
                .unwrap_or(&s.last_active_at)
                .replace('T', " ");
            let mark = if Some(&s.session_id) == current.as_ref() {
                "  (current)"
            } else {
                ""
            };
            text.push_str(&format!(
                "\n  {}. {} · {} messages · {when} · {}{mark}",
                i + 1,
                session_name(s),
                s.messages,
                s.session_id
            ));
        }
        text.push_str("\n/switch <number> opens one.");
        self.push(Entry::info(text));
        self.sessions = sessions;
        Vec::new()
    }

    /// Asks for the session list to continue the most recent conversation (`--continue`,
    /// `/continue`).
    pub(super) fn find_latest(&mut self, finding: Finding) -> ClientFrame {
        self.finding_latest = Some(finding);
        ClientFrame::ListSessions
    }

    /// Switches to the most recently active session with messages, other than this one. At
    /// start, only while nothing was typed into the new session.
    fn continue_latest(
        &mut self,
        sessions: &[SessionSummary],
        finding: Finding,
    ) -> Vec<ClientFrame> {
        let current = self.current_session_id().cloned();
        let latest = sessions
            .iter()
            .find(|s| Some(&s.session_id) != current.as_ref() && s.messages > 0);
        let started = self.turn != TurnState::Idle || self.has_user_messages();
        match (latest, finding) {
            (Some(_), Finding::AtStart) if started => Vec::new(),
            (Some(s), _) => vec![ClientFrame::SwitchSession {
                session_id: s.session_id.clone(),
                last_seq: None,
            }],
            (None, Finding::AtStart) => {
                self.push(Entry::info(
                    "No earlier conversation to continue: this is a new session.",
                ));
                Vec::new()
            }
            (None, Finding::Asked) => {
                self.push(Entry::info(
                    "No other conversation to continue: /sessions lists yours.",
                ));
                Vec::new()
            }
        }
    }

    /// `/new`: a new session, unless this one is still empty and untitled (then it is the new one).
    pub(super) fn new_session(&mut self, title: Option<String>) -> Vec<ClientFrame> {
        let empty = self
            .session
            .as_ref()
            .is_some_and(|s| s.messages == 0 && s.title.is_none());
        if title.is_none() && empty && !self.turn.is_active() && !self.has_user_messages() {
            self.push(Entry::info(
                "This session is still empty: it is your new one. Type a message to start.",
            ));
            return Vec::new();
        }
        vec![ClientFrame::NewSession { title }]
    }

    pub(super) fn has_user_messages(&self) -> bool {
        self.entries.iter().any(|e| matches!(e, Entry::User(_)))
    }

    /// The session a `/switch` argument names: a number from the last list, a unique id prefix
    /// from it, or an id.
    pub(super) fn session_named(&self, target: &str) -> Result<SessionId, String> {
        if let Ok(n) = target.parse::<usize>() {
            return match n.checked_sub(1).and_then(|i| self.sessions.get(i)) {
                Some(s) => Ok(s.session_id.clone()),
                None => Err(format!(
                    "There is no session {n} in the last list: /sessions shows them."
                )),
            };
        }
        let matches: Vec<&SessionSummary> = self
            .sessions
            .iter()
            .filter(|s| s.session_id.as_str().starts_with(target))
            .collect();
        if let [one] = matches.as_slice() {
            return Ok(one.session_id.clone());
        }
        SessionId::parse(target).map_err(|_| {
            format!(
                "{target:?} is not a session id: /sessions lists yours, /switch <number> opens one."
            )
        })
    }
}

/// The title, or "untitled session".
pub fn session_name(session: &SessionSummary) -> String {
    match session.title.as_deref().map(str::trim) {
        Some(t) if !t.is_empty() => format!("\"{t}\""),
        _ => "untitled session".into(),
    }
}
