//! Capture in the transcript: the changes capture made after a turn are listed like the agent's
//! own, one line each with the `/undo <n>` that takes it back; what it proposes (mode
//! `suggest`) is listed with `/memory accept|reject <n>`; `/memory pending` lists it again.
//! `/search <words>` lists what the user said in past conversations (saying how it read their
//! words about time); `/search open <n>` goes to one: it switches to the hit's session, pages its
//! history back until the hit's message is in, marks that message and scrolls to it.

use types::{
    CapturedChange, ClientFrame, ConversationHitView, HistoryEvent, PendingMemory, ServerFrame,
    SessionId, TimeReadView,
};

use super::memory::{Undo, excerpt, short_id, time_read};
use super::{App, Entry};

impl App {
    /// Applies a capture frame.
    pub(super) fn on_capture_frame(&mut self, frame: ServerFrame) -> Vec<ClientFrame> {
        match frame {
            ServerFrame::MemoryCaptured { report } => {
                for change in &report.changes {
                    self.captured(change, "captured");
                }
                if !report.pending.is_empty() {
                    self.show_pending(report.pending, "Capture proposes:");
                }
            }
            ServerFrame::PendingMemories { memories } if memories.is_empty() => {
                self.memory.pending.clear();
                self.push(Entry::info("No proposals are waiting."));
            }
            ServerFrame::PendingMemories { memories } => {
                self.show_pending(memories, "Waiting for you:");
            }
            ServerFrame::MemoryAccepted { id, change } => {
                self.decided(id);
                match change {
                    Some(change) => self.captured(&change, "accepted"),
                    None => self.push(Entry::info("Accepted: your notes already said it.")),
                }
            }
            ServerFrame::MemoryRejected { id } => {
                self.decided(id);
                self.push(Entry::info("Rejected: nothing was saved."));
            }
            ServerFrame::ConversationResults { query, hits, time } => {
                self.show_found(&query, hits, time.as_ref());
            }
            _ => {}
        }
        Vec::new()
    }

    fn show_found(
        &mut self,
        query: &str,
        hits: Vec<ConversationHitView>,
        time: Option<&TimeReadView>,
    ) {
        let time = time_read(time);
        if hits.is_empty() {
            self.push(Entry::info(format!(
                "Nothing in your past conversations matches \"{}\"{time}.",
                excerpt(query)
            )));
        }
        let mut text = format!("In your past conversations (\"{}\"){time}:", excerpt(query));
        for (i, hit) in hits.iter().enumerate() {
            let date = hit.date.get(..10).unwrap_or(&hit.date);
            let title = hit.title.as_deref().unwrap_or(&hit.session_id);
            text.push_str(&format!(
                "\n  {}. {date} · {} · {}: \"{}\"",
                i + 1,
                excerpt(title),
                hit.speaker,
                excerpt(&hit.text)
            ));
        }
        if !hits.is_empty() {
            text.push_str("\n/search open <n> goes to that conversation.");
            self.push(Entry::info(text));
        }
        self.memory.found = hits;
    }

    /// `/search open <n>`: switches to the session of hit `n`.
    pub(super) fn open_found(&mut self, n: usize) -> Vec<ClientFrame> {
        let hit = n
            .checked_sub(1)
            .and_then(|i| self.memory.found.get(i))
            .cloned();
        let session = hit
            .as_ref()
            .and_then(|h| types::SessionId::parse(&h.session_id).ok());
        match (hit, session) {
            (Some(hit), Some(session_id)) => {
                self.push(Entry::info(format!(
                    "Opening the conversation of \"{}\" (message {}).",
                    excerpt(&hit.text),
                    hit.seq
                )));
                self.memory.opening = Some((session_id.clone(), hit.seq));
                vec![ClientFrame::SwitchSession {
                    session_id,
                    last_seq: None,
                }]
            }
            _ => {
                self.push(Entry::error(format!(
                    "There is no result {n}: /search <words> lists them."
                )));
                Vec::new()
            }
        }
    }

    /// After a history page of `session` was added in front of the transcript (`events`, and the
    /// cursor of the page before it): when `/search open` looks for a message of that session,
    /// marks it and has the next draw scroll to it once the page holds it, or asks for the page
    /// before while the page starts after it.
    pub(super) fn find_opened(
        &mut self,
        session: &SessionId,
        events: &[HistoryEvent],
        next: Option<u64>,
    ) -> Vec<ClientFrame> {
        let Some(seq) = self
            .memory
            .opening
            .as_ref()
            .filter(|(s, _)| s == session)
            .map(|(_, seq)| *seq)
        else {
            return Vec::new();
        };
        if let Some(at) = events.iter().position(|e| e.number == seq) {
            // The page's entries before the hit, after the "earlier messages" line if any.
            let before = super::transcript::from_history(&events[..at]).len();
            let index = before + usize::from(next.is_some());
            self.found_entry = Some(index.min(self.entries.len().saturating_sub(1)));
            self.reveal_found = true;
            self.memory.opening = None;
            return Vec::new();
        }
        match next {
            Some(before) if events.first().is_some_and(|e| e.number > seq) => {
                vec![ClientFrame::GetHistory {
                    session_id: session.clone(),
                    before: Some(before),
                    limit: super::frames::HISTORY_PAGE,
                }]
            }
            _ => {
                self.memory.opening = None;
                self.push(Entry::info(format!(
                    "Message {seq} is no longer in this conversation."
                )));
                Vec::new()
            }
        }
    }

    /// `/memory accept|reject <n>`.
    pub(super) fn decide(&mut self, n: usize, accept: bool) -> Vec<ClientFrame> {
        let Some(id) = self
            .numbered(
                |app| &app.memory.pending,
                n,
                || format!("Proposal {n} is decided already: /memory pending lists those waiting."),
                || format!("There is no proposal {n}: /memory pending lists them."),
            )
            .map(|p| p.id)
        else {
            return Vec::new();
        };
        match accept {
            true => vec![ClientFrame::AcceptMemory { id }],
            false => vec![ClientFrame::RejectMemory { id }],
        }
    }

    /// Proposal `id` was accepted or rejected: its number is not given to another. Shifting
    /// the list up made `/memory accept 1` then `/memory accept 2` take the proposal listed
    /// third, one the user had not chosen.
    fn decided(&mut self, id: i64) {
        for slot in &mut self.memory.pending {
            if slot.as_ref().is_some_and(|p| p.id == id) {
                *slot = None;
            }
        }
    }

    /// One change capture made, recorded with its undo and listed.
    fn captured(&mut self, change: &CapturedChange, how: &str) {
        let text = excerpt(&change.text);
        let unconfirmed = match change.confirmed {
            true => "",
            false => " (unconfirmed: /memory confirm it to have it recalled)",
        };
        let (line, undo) = match change.action.as_str() {
            "added" => (
                format!("{how}: saved \"{text}\"{unconfirmed}"),
                Undo::Delete {
                    note_id: change.note_id.clone(),
                    text: change.text.trim().to_owned(),
                },
            ),
            "updated" => (
                format!("{how}: updated \"{text}\"{unconfirmed}"),
                Undo::PreviousVersion {
                    note_id: change.note_id.clone(),
                    text: change.text.trim().to_owned(),
                },
            ),
            _ => (
                format!("{how}: deleted {} \"{text}\"", short_id(&change.note_id)),
                Undo::Restore {
                    note_id: change.note_id.clone(),
                },
            ),
        };
        self.record(line.clone(), undo);
        let n = self.memory.changes.len();
        self.push(Entry::info(format!(
            "Memory {n}: {line} · /undo {n} takes it back"
        )));
    }

    fn show_pending(&mut self, memories: Vec<PendingMemory>, title: &str) {
        let mut text = title.to_owned();
        for (i, p) in memories.iter().enumerate() {
            let what = p.content.as_deref().map(excerpt).unwrap_or_default();
            // What an update or delete would replace or forget, as capture was shown it.
            let was = p
                .note_text
                .as_deref()
                .map(|t| format!(" \"{}\"", excerpt(t)))
                .unwrap_or_default();
            let line = match (p.action.as_str(), p.note_id.as_deref()) {
                ("add", _) => format!("remember \"{what}\""),
                ("update", Some(id)) => format!("change {}{was} to \"{what}\"", short_id(id)),
                (_, id) => format!("forget {}{was}", short_id(id.unwrap_or_default())),
            };
            // Proposed after the conversation read text the user did not write: it may restate it.
            let after = p
                .untrusted
                .as_deref()
                .map(|from| {
                    format!(
                        " (proposed after reading {}: check it)",
                        untrusted_source(from)
                    )
                })
                .unwrap_or_default();
            text.push_str(&format!("\n  {}. {line}{after}", i + 1));
        }
        text.push_str("\n/memory accept <n> saves one; /memory reject <n> drops it.");
        self.push(Entry::info(text));
        self.memory.pending = memories.into_iter().map(Some).collect();
    }
}

/// What a proposal's untrusted input was, in words.
fn untrusted_source(from: &str) -> &str {
    match from {
        "file" => "a file",
        "shell" => "shell output",
        "web" => "a web page",
        "note" => "an unconfirmed note",
        "client" => "text from another client",
        "mcp" => "an MCP tool's answer",
        _ => "text you did not write",
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use crate::command::MemoryCommand;
    use types::CaptureReport;

    fn report() -> CaptureReport {
        CaptureReport {
            session_id: "s-1".into(),
            turn_id: "t-1".into(),
            changes: vec![CapturedChange {
                action: "added".into(),
                note_id: "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f".into(),
                text: "The user's dog is called Biscuit".into(),
                confirmed: true,
            }],
            pending: vec![PendingMemory {
                id: 9,
                action: "add".into(),
                note_id: None,
                content: Some("The user plays the cello".into()),
                note_text: None,
                session_id: "s-1".into(),
                created_at: "2026-11-28T09:00:00.000Z".into(),
                untrusted: None,
            }],
        }
    }

    #[test]
    fn captured_changes_are_undoable_and_proposals_decided() {
        let user = types::UserId::parse("alice").expect("user");
        let mut app = App::new(user, None, None);
        app.on_capture_frame(ServerFrame::MemoryCaptured { report: report() });
        assert_eq!(
            app.memory.changes.last().map(|c| &c.undo),
            Some(&Undo::Delete {
                note_id: "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f".into(),
                text: "The user's dog is called Biscuit".into()
            })
        );
        assert_eq!(
            app.memory_command(MemoryCommand::Accept { n: 1 }),
            vec![ClientFrame::AcceptMemory { id: 9 }]
        );
        assert_eq!(
            app.memory_command(MemoryCommand::Reject { n: 1 }),
            vec![ClientFrame::RejectMemory { id: 9 }]
        );
        assert!(
            app.memory_command(MemoryCommand::Accept { n: 2 })
                .is_empty()
        );
        app.on_capture_frame(ServerFrame::MemoryRejected { id: 9 });
        assert_eq!(app.memory.pending, [None]);
        assert!(
            app.memory_command(MemoryCommand::Accept { n: 1 })
                .is_empty()
        );
    }

    /// The numbers the user read stay theirs: after proposal 1 is accepted, `/memory accept 2`
    /// is still the proposal listed second (it took the third when the list shifted up), and
    /// a decided one is not taken again.
    #[test]
    fn a_decided_proposal_keeps_the_numbers_of_the_others() {
        let user = types::UserId::parse("alice").expect("user");
        let mut app = App::new(user, None, None);
        let proposal = |id: i64, content: &str| PendingMemory {
            id,
            action: "add".into(),
            note_id: None,
            content: Some(content.into()),
            note_text: None,
            session_id: "s-1".into(),
            created_at: "2026-11-28T09:00:00.000Z".into(),
            untrusted: None,
        };
        app.on_capture_frame(ServerFrame::PendingMemories {
            memories: vec![
                proposal(4, "The user plays the cello"),
                proposal(5, "The user's son Leo is six"),
                proposal(6, "The user lives in Porto"),
            ],
        });
        assert_eq!(
            app.memory_command(MemoryCommand::Accept { n: 1 }),
            vec![ClientFrame::AcceptMemory { id: 4 }]
        );
        app.on_capture_frame(ServerFrame::MemoryAccepted {
            id: 4,
            change: None,
        });
        assert_eq!(
            app.memory_command(MemoryCommand::Accept { n: 2 }),
            vec![ClientFrame::AcceptMemory { id: 5 }]
        );
        app.on_capture_frame(ServerFrame::MemoryRejected { id: 6 });
        assert_eq!(
            app.memory_command(MemoryCommand::Reject { n: 1 }),
            Vec::<ClientFrame>::new()
        );
        assert_eq!(
            app.memory_command(MemoryCommand::Reject { n: 3 }),
            Vec::<ClientFrame>::new()
        );
        // Listed again, the waiting ones are numbered afresh.
        app.on_capture_frame(ServerFrame::PendingMemories {
            memories: vec![proposal(5, "The user's son Leo is six")],
        });
        assert_eq!(
            app.memory_command(MemoryCommand::Reject { n: 1 }),
            vec![ClientFrame::RejectMemory { id: 5 }]
        );
    }

    /// A pending update or delete says what it would replace or forget, not only the note's id;
    /// one proposed after untrusted input says so.
    #[test]
    fn pending_changes_show_the_text_they_replace_or_forget() {
        let user = types::UserId::parse("alice").expect("user");
        let mut app = App::new(user, None, None);
        let about = |action: &str, content: Option<&str>, untrusted: Option<&str>| PendingMemory {
            id: 3,
            action: action.into(),
            note_id: Some("note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f".into()),
            content: content.map(str::to_owned),
            note_text: Some("The user lives in Porto".into()),
            session_id: "s-1".into(),
            created_at: "2026-11-28T09:00:00.000Z".into(),
            untrusted: untrusted.map(str::to_owned),
        };
        app.on_capture_frame(ServerFrame::PendingMemories {
            memories: vec![
                about("update", Some("The user lives in Lisbon"), None),
                about("delete", None, Some("web")),
            ],
        });
        assert_eq!(
            app.entries.last(),
            Some(&Entry::info(
                "Waiting for you:\n  \
                 1. change note-3f2b5c1e… \"The user lives in Porto\" to \"The user lives in Lisbon\"\n  \
                 2. forget note-3f2b5c1e… \"The user lives in Porto\" \
                 (proposed after reading a web page: check it)\n\
                 /memory accept <n> saves one; /memory reject <n> drops it."
            ))
        );
    }
}
