//! The approval prompt: while a privileged call waits, keys go to a focused prompt instead of
//! the input. An answer is an explicit choice confirmed with Enter — `y`/`1` allow once,
//! `a`/`2` allow for this session, `n`/`3` deny, Up/Down cycle — so typing "why" never approves
//! anything: a choice key is a key on its own, so one that follows other typed characters (the
//! `y` of "why", the `n` of "no thanks") picks nothing. Keys pressed within [`App::arm_delay`] of
//! the prompt appearing are ignored (they were meant for the input); Esc declines.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use types::{ApprovalScope, ClientFrame};

use super::{App, Entry, TurnState};

/// How long after a prompt appears keys still do not count.
pub const ARM_DELAY: Duration = Duration::from_millis(500);

/// An answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalChoice {
    /// Run this call.
    Once,
    /// Run this call and later calls of the same tool in this session without asking.
    Session,
    Deny,
}

impl ApprovalChoice {
    pub const ALL: [ApprovalChoice; 3] = [
        ApprovalChoice::Once,
        ApprovalChoice::Session,
        ApprovalChoice::Deny,
    ];

    /// The frame that sends this answer.
    fn frame(self, call_id: String) -> ClientFrame {
        let (approved, scope) = match self {
            ApprovalChoice::Once => (true, None),
            ApprovalChoice::Session => (true, Some(ApprovalScope::Session)),
            ApprovalChoice::Deny => (false, None),
        };
        ClientFrame::Approve {
            call_id,
            approved,
            scope,
        }
    }

    fn index(self) -> usize {
        match self {
            ApprovalChoice::Once => 0,
            ApprovalChoice::Session => 1,
            ApprovalChoice::Deny => 2,
        }
    }
}

/// A call waiting for the user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingApproval {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    /// Why the runtime asks about this call when its tool alone would not be asked about.
    pub reason: Option<String>,
    /// The highlighted answer (none until the user picks one).
    pub choice: Option<ApprovalChoice>,
    /// Enter was pressed without a choice (or text was typed): the prompt says how to choose.
    pub hint: bool,
    /// The last key was a character that is not a choice: the user is typing words, and the
    /// next letter is part of them, not an answer.
    typing: bool,
    /// When the prompt appeared.
    pub since: Instant,
}

impl PendingApproval {
    pub fn new(call_id: String, name: String, arguments: String, reason: Option<String>) -> Self {
        Self {
            call_id,
            name,
            arguments,
            reason,
            choice: None,
            hint: false,
            typing: false,
            since: Instant::now(),
        }
    }
}

/// What a key does to the prompt.
enum PromptKey {
    /// Not the prompt's: handled as usual (Ctrl+C stops the turn, scrolling, ...).
    Pass,
    /// Swallowed (a stray key, or too early to count).
    Ignore,
    Pick(ApprovalChoice),
    /// A character that answers nothing.
    Stray,
    Cycle(isize),
    Confirm,
    Decline,
}

impl App {
    /// Applies `key` to the waiting approval. `None` when the key is not the prompt's.
    pub(super) fn approval_key(&mut self, key: KeyEvent) -> Option<Vec<ClientFrame>> {
        let pending = self.approval.as_mut()?;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let action = match key.code {
            // Ctrl+C stops the turn, Ctrl+D quits, Ctrl+T details, Ctrl+L newest; other editing
            // keys would change the hidden input.
            KeyCode::Char('c' | 'd' | 't' | 'l') if ctrl => PromptKey::Pass,
            KeyCode::Char(_) if ctrl => PromptKey::Ignore,
            KeyCode::PageUp | KeyCode::PageDown => PromptKey::Pass,
            _ if pending.since.elapsed() < self.arm_delay => PromptKey::Ignore,
            KeyCode::Char('y' | 'Y' | '1') => PromptKey::Pick(ApprovalChoice::Once),
            KeyCode::Char('a' | 'A' | '2') => PromptKey::Pick(ApprovalChoice::Session),
            KeyCode::Char('n' | 'N' | '3') => PromptKey::Pick(ApprovalChoice::Deny),
            KeyCode::Up | KeyCode::Left | KeyCode::BackTab => PromptKey::Cycle(-1),
            KeyCode::Down | KeyCode::Right | KeyCode::Tab => PromptKey::Cycle(1),
            KeyCode::Enter => PromptKey::Confirm,
            KeyCode::Esc => PromptKey::Decline,
            KeyCode::Char(_) => PromptKey::Stray,
            _ => PromptKey::Ignore,
        };
        let after_text = std::mem::replace(&mut pending.typing, false);
        match action {
            PromptKey::Pass => return None,
            PromptKey::Ignore => {}
            PromptKey::Pick(_) | PromptKey::Stray if after_text => {
                pending.typing = true;
            }
            PromptKey::Pick(choice) => {
                pending.choice = Some(choice);
                pending.hint = false;
            }
            PromptKey::Stray => {
                pending.choice = None;
                pending.typing = true;
                pending.hint = true;
            }
            PromptKey::Cycle(step) => {
                let next = match pending.choice {
                    None if step > 0 => 0,
                    None => ApprovalChoice::ALL.len() - 1,
                    Some(c) => (c.index() as isize + step)
                        .rem_euclid(ApprovalChoice::ALL.len() as isize)
                        as usize,
                };
                pending.choice = ApprovalChoice::ALL.get(next).copied();
                pending.hint = false;
            }
            PromptKey::Confirm => match pending.choice {
                Some(choice) => return Some(self.answer(choice)),
                None => pending.hint = true,
            },
            PromptKey::Decline => return Some(self.answer(ApprovalChoice::Deny)),
        }
        Some(Vec::new())
    }

    /// Sends `choice` for the waiting call and marks it in the transcript.
    pub(super) fn answer(&mut self, choice: ApprovalChoice) -> Vec<ClientFrame> {
        let Some(pending) = self.approval.take() else {
            return Vec::new();
        };
        for entry in self.entries.iter_mut().rev() {
            if let Entry::Approval {
                call_id, answer, ..
            } = entry
                && *call_id == pending.call_id
            {
                *answer = Some(choice);
                break;
            }
        }
        if self.turn == TurnState::Approval {
            self.turn = TurnState::Thinking;
        }
        vec![choice.frame(pending.call_id)]
    }
}
