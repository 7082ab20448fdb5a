//! Keys, pastes and slash commands.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use types::ClientFrame;

use super::{App, ConnState, Entry, TurnState};
use crate::command::{self, COMMANDS, Command};

/// The keys, for `/help`.
pub const KEYS: [(&str, &str); 11] = [
    ("Enter", "send"),
    ("Alt+Enter, Ctrl+J", "new line"),
    (
        "Up / Down",
        "previous / next message (on the first / last line)",
    ),
    (
        "Esc, Ctrl+C",
        "stop the running reply (Ctrl+C on an empty idle line quits)",
    ),
    ("Ctrl+T", "show or hide tool details"),
    ("Ctrl+Z", "undo the latest memory change that can be undone"),
    ("PageUp / PageDown", "scroll; Ctrl+L jumps to the newest"),
    ("Ctrl+A / Ctrl+E", "start / end of line"),
    (
        "Ctrl+U / Ctrl+K / Ctrl+W",
        "delete to start / to end / the word before",
    ),
    (
        "y/1, a/2, n/3 then Enter",
        "approval: allow once, allow for this session, deny (Esc denies)",
    ),
    ("Ctrl+D", "quit (on an empty line)"),
];

impl App {
    /// Applies a key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<ClientFrame> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if let Some(frames) = self.approval_key(key) {
            return frames;
        }
        match key.code {
            KeyCode::Char('c') if ctrl => {
                if self.turn.is_active() {
                    return self.cancel();
                } else if self.editor.is_empty() {
                    self.quit = true;
                } else {
                    self.editor.clear();
                }
            }
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    self.quit = true;
                } else {
                    self.editor.delete();
                }
            }
            KeyCode::Esc if self.turn.is_active() => return self.cancel(),
            KeyCode::Char('t') if ctrl => self.show_details = !self.show_details,
            KeyCode::Char('z') if ctrl => return self.undo_latest(),
            KeyCode::Char('l') if ctrl => self.scroll = 0,
            KeyCode::Char('j') if ctrl => self.editor.newline(),
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('u') if ctrl => self.editor.delete_to_start(),
            KeyCode::Char('k') if ctrl => self.editor.delete_to_end(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::Backspace if alt || ctrl => self.editor.delete_word(),
            KeyCode::Enter if alt || key.modifiers.contains(KeyModifiers::SHIFT) => {
                self.editor.newline();
            }
            KeyCode::Enter => return self.submit(),
            KeyCode::Char(c) if !ctrl => self.editor.insert_char(c),
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up => self.editor.up(),
            KeyCode::Down => self.editor.down(),
            KeyCode::PageUp => self.scroll = (self.scroll + self.page / 2).min(self.max_scroll),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(self.page / 2),
            _ => {}
        }
        Vec::new()
    }

    /// Inserts pasted text into the input (never sends it).
    pub fn on_paste(&mut self, text: &str) {
        self.editor.insert_str(text);
    }

    fn submit(&mut self) -> Vec<ClientFrame> {
        let text = self.editor.text();
        if text.trim().is_empty() {
            return Vec::new();
        }
        match command::parse(&text) {
            Some(Ok(cmd)) => {
                self.editor.take();
                self.run(cmd)
            }
            Some(Err(e)) => {
                self.editor.take();
                self.push(Entry::error(e.0));
                Vec::new()
            }
            None => self.send_message(),
        }
    }

    fn send_message(&mut self) -> Vec<ClientFrame> {
        let Some(session) = self.online_session() else {
            return Vec::new();
        };
        if self.turn.is_active() {
            self.push(Entry::info(
                "Wait for the reply to finish, or press Esc to stop it. Your message is still in the box.",
            ));
            return Vec::new();
        }
        let text = command::unescape(self.editor.text().trim()).to_owned();
        let client_turn_id = format!("c-{}", self.turns_sent + 1);
        let frame = ClientFrame::SendTurn {
            session_id: session,
            text,
            client_turn_id: client_turn_id.clone(),
        };
        let size = serde_json::to_vec(&frame).map_or(usize::MAX, |v| v.len());
        if size > types::MAX_FRAME_BYTES {
            self.push(Entry::error(too_long(size)));
            return Vec::new();
        }
        let ClientFrame::SendTurn { text, .. } = &frame else {
            return Vec::new();
        };
        self.editor.take();
        self.turns_sent += 1;
        self.pending_turn = Some(client_turn_id);
        self.turn = TurnState::Sending;
        self.scroll = 0;
        self.push(Entry::User(text.clone()));
        vec![frame]
    }

    /// Ctrl+Z: undo the latest memory change that can be, once connected.
    fn undo_latest(&mut self) -> Vec<ClientFrame> {
        match self.online_session() {
            Some(_) => self.undo(None),
            None => Vec::new(),
        }
    }

    /// The current session if connected; otherwise says so and returns `None`.
    fn online_session(&mut self) -> Option<types::SessionId> {
        match (&self.conn, &self.session) {
            (ConnState::Online, Some(s)) => Some(s.session_id.clone()),
            _ => {
                self.push(Entry::error(
                    "Not connected yet: the message stays in the box until the connection is back.",
                ));
                None
            }
        }
    }

    fn run(&mut self, cmd: Command) -> Vec<ClientFrame> {
        match cmd {
            Command::Help => {
                self.push(Entry::info(help_text()));
                return Vec::new();
            }
            Command::Quit => {
                self.quit = true;
                return Vec::new();
            }
            Command::Details => {
                self.show_details = !self.show_details;
                return Vec::new();
            }
            Command::Cancel => {
                if self.turn.is_active() {
                    return self.cancel();
                }
                self.push(Entry::info("Nothing is running."));
                return Vec::new();
            }
            _ => {}
        }
        if self.online_session().is_none() {
            return Vec::new();
        }
        match cmd {
            Command::New { title } => self.new_session(title),
            Command::Sessions => vec![ClientFrame::ListSessions],
            Command::Switch { target } => match self.session_named(&target) {
                Ok(session_id) => vec![ClientFrame::SwitchSession {
                    session_id,
                    last_seq: None,
                }],
                Err(e) => {
                    self.push(Entry::error(e));
                    Vec::new()
                }
            },
            Command::Continue => vec![self.find_latest(super::Finding::Asked)],
            Command::History => self.older_history(),
            Command::Memory(command) => self.memory_command(command),
            Command::Search { query } => {
                vec![ClientFrame::SearchConversations { query, limit: 10 }]
            }
            Command::SearchOpen { n } => self.open_found(n),
            Command::Schedules(command) => self.schedules_command(command),
            Command::Undo { n } => self.undo(n),
            Command::Export { format, path } => self.export(format, path),
            Command::Model { name } => self.model_command(name),
            Command::Usage => self.usage_command(),
            Command::Help | Command::Quit | Command::Details | Command::Cancel => Vec::new(),
        }
    }

    fn cancel(&mut self) -> Vec<ClientFrame> {
        if self.turn == TurnState::Cancelling {
            return Vec::new();
        }
        let Some(session) = self.current_session_id().cloned() else {
            return Vec::new();
        };
        if self.conn != ConnState::Online {
            self.push(Entry::error(
                "Not connected: the reply cannot be stopped right now.",
            ));
            return Vec::new();
        }
        self.turn = TurnState::Cancelling;
        vec![ClientFrame::CancelTurn {
            session_id: session,
        }]
    }
}

/// Why a message of `size` bytes (as a frame) is not sent.
fn too_long(size: usize) -> String {
    let limit_kib = types::MAX_FRAME_BYTES / 1024;
    format!(
        "Not sent: this message is {} KiB, and the agent takes at most {limit_kib} KiB per message. \
         It is still in the box: shorten it, or send it in parts.",
        size.div_ceil(1024)
    )
}

fn help_text() -> String {
    let mut text = String::from("Keys:");
    for (key, what) in KEYS {
        text.push_str(&format!("\n  {key:<26} {what}"));
    }
    text.push_str("\nCommands:");
    for (cmd, what) in COMMANDS {
        text.push_str(&format!("\n  {cmd:<26} {what}"));
    }
    text.push_str("\nStart a message with // to send text beginning with /.");
    text
}
