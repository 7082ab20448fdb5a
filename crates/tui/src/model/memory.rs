//! The user's memory in the transcript: `/memory` browses the saved notes (newest first, by
//! category, by search, saying how a search read its words about time), edits and deletes them; `/memory history|deleted|revert|restore`
//! (in `memory_history`) show a note's versions and the deleted notes and bring them back; after
//! each turn that changed memory, one line per change with the `/undo <n>` that takes it back
//! (Ctrl+Z: the latest that can be).
//!
//! Every change can be undone, never overwriting a later one:
//! - a note saved (by the agent, capture or a restore here): undo reads the note's history and,
//!   if its current text is still the one saved, deletes it (a tombstone, itself restorable);
//!   otherwise it says the note changed since, or is already deleted;
//! - an edit made here: undo puts the old text back, only at the version the edit produced;
//! - a delete (the agent's or one here): undo restores the note with its id;
//! - an update by the agent (or a revert here): undo reads the note's history and, if its
//!   current text is still the one that change wrote, makes the version before it current again
//!   (a new version: history is never rewritten); otherwise it says the note changed since.

use types::{
    ClientFrame, DeletedNoteView, NoteChange, NoteRequest, NoteVersionView, NoteView, ServerFrame,
    TimeReadView,
};

use super::{App, Entry};
use crate::command::MemoryCommand;

/// Notes shown per `/memory` page or search.
pub(super) const NOTES_PAGE: u32 = 20;

/// Longest excerpt of a note in a list line, in characters.
const EXCERPT_CHARS: usize = 60;

/// One change to memory, as listed after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryChange {
    pub line: String,
    pub undo: Undo,
}

/// How a change is taken back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    /// A new note that said `text`: delete it, if the note's text is still `text`.
    Delete { note_id: String, text: String },
    /// An edit: put `text` back, if the note's text is still the one of `edit_token`.
    Revert {
        note_id: String,
        text: String,
        edit_token: String,
    },
    /// A delete: restore the note.
    Restore { note_id: String },
    /// An update that wrote `text`: make the version before it current again, if the note's
    /// text is still `text`.
    PreviousVersion { note_id: String, text: String },
    /// Already taken back.
    Done,
}

impl Undo {
    /// Whether there is still something to take back.
    pub fn is_pending(&self) -> bool {
        !matches!(self, Undo::Done)
    }

    /// The note and the text a save or an update wrote: such an undo reads the note's history
    /// first, and goes on only while the note still says that text.
    pub(super) fn checked(&self) -> Option<(&str, &str)> {
        match self {
            Undo::Delete { note_id, text } | Undo::PreviousVersion { note_id, text } => {
                Some((note_id, text))
            }
            _ => None,
        }
    }
}

/// Memory state of the client.
#[derive(Debug, Default)]
pub(super) struct MemoryView {
    /// The notes last listed, numbered from 1 for `/memory edit|delete <n>`; one deleted since
    /// is `None`, so the others keep the numbers the user read (shifted up, `/memory delete 1`
    /// then `/memory edit 2 …` edited the note listed third).
    pub(super) shown: Vec<Option<NoteView>>,
    /// The category of the last list asked for.
    category: Option<String>,
    /// The cursor of the next page of the last list, and its category.
    next: Option<(Option<String>, String)>,
    /// Changes made in this run, numbered from 1 for `/undo <n>`.
    pub(super) changes: Vec<MemoryChange>,
    /// Changes of the running turn, listed when it ends.
    turn_changes: usize,
    /// An edit on its way: the note's text before it.
    editing: Option<(String, String)>,
    /// An undo on its way: which change.
    pub(super) undoing: Option<usize>,
    /// The deleted notes last listed, numbered from 1 for `/memory restore <n>`; one restored
    /// since is `None` (the others keep their numbers).
    pub(super) deleted: Vec<Option<DeletedNoteView>>,
    /// The note whose history was last shown, and its versions, for `/memory revert <v>`.
    pub(super) history: Option<(String, Vec<NoteVersionView>)>,
    /// A restore asked for here (not an undo): the note's text before it, `None` for a deleted
    /// note.
    pub(super) restoring: Option<(String, Option<String>)>,
    /// Capture's proposals last listed, numbered from 1 for `/memory accept|reject <n>`; one
    /// decided since is `None`, so the numbers of the others stay the ones the user read.
    pub(super) pending: Vec<Option<types::PendingMemory>>,
    /// The past-conversation hits last listed, numbered from 1 for `/search open <n>`.
    pub(super) found: Vec<types::ConversationHitView>,
    /// The message `/search open` is paging the session's history back to: session and number.
    pub(super) opening: Option<(types::SessionId, u64)>,
}

impl App {
    /// Runs a `/memory` command.
    pub(super) fn memory_command(&mut self, command: MemoryCommand) -> Vec<ClientFrame> {
        match command {
            MemoryCommand::List { category } => {
                self.memory.next = None;
                self.memory.category.clone_from(&category);
                vec![ClientFrame::Note(NoteRequest::ListNotes {
                    category,
                    cursor: None,
                    limit: NOTES_PAGE,
                })]
            }
            MemoryCommand::More => match self.memory.next.take() {
                Some((category, cursor)) => vec![ClientFrame::Note(NoteRequest::ListNotes {
                    category,
                    cursor: Some(cursor),
                    limit: NOTES_PAGE,
                })],
                None => {
                    self.push(Entry::info(
                        "No more notes: /memory lists them from the newest.",
                    ));
                    Vec::new()
                }
            },
            MemoryCommand::Search { query } => vec![ClientFrame::Note(NoteRequest::SearchNotes {
                query,
                limit: NOTES_PAGE,
            })],
            MemoryCommand::Show { n } => match self.shown_note(n) {
                Some(note) => vec![ClientFrame::Note(NoteRequest::GetNote {
                    note_id: note.note_id,
                })],
                None => Vec::new(),
            },
            MemoryCommand::Edit { n, text } => match self.shown_note(n) {
                Some(note) => {
                    self.memory.editing = Some((note.note_id.clone(), note.text));
                    vec![ClientFrame::Note(NoteRequest::EditNote {
                        note_id: note.note_id,
                        content: text,
                        edit_token: note.edit_token,
                    })]
                }
                None => Vec::new(),
            },
            MemoryCommand::Delete { n } => match self.shown_note(n) {
                Some(note) => vec![ClientFrame::Note(NoteRequest::DeleteNote {
                    note_id: note.note_id,
                })],
                None => Vec::new(),
            },
            MemoryCommand::History { n } => match self.shown_note(n) {
                Some(note) => vec![ClientFrame::Note(NoteRequest::NoteHistory {
                    note_id: note.note_id,
                })],
                None => Vec::new(),
            },
            MemoryCommand::Deleted => vec![ClientFrame::Note(NoteRequest::ListDeletedNotes)],
            MemoryCommand::Restore { n } => self.restore_deleted(n),
            MemoryCommand::Revert { version } => self.revert_to(version),
            MemoryCommand::Confirm { n } => self.confirm(n),
            MemoryCommand::Pending => vec![ClientFrame::ListPendingMemories],
            MemoryCommand::Accept { n } => self.decide(n, true),
            MemoryCommand::Reject { n } => self.decide(n, false),
        }
    }

    pub(super) fn shown_note(&mut self, n: usize) -> Option<NoteView> {
        self.numbered(
            |app| &app.memory.shown,
            n,
            || {
                format!(
                    "Note {n} was deleted since the list: /memory deleted lists what can be \
                     restored."
                )
            },
            || format!("There is no note {n} in the last list: /memory lists your notes."),
        )
    }

    /// Applies a note frame; returns the next request of an undo in two steps.
    pub(super) fn on_note_frame(&mut self, frame: ServerFrame) -> Vec<ClientFrame> {
        match frame {
            ServerFrame::NoteList {
                notes,
                total,
                next_cursor,
            } => {
                let category = self.memory.category.clone();
                let more = next_cursor.is_some();
                self.memory.next = next_cursor.map(|c| (category, c));
                let title = format!("Your notes ({total}), newest first:");
                self.show_notes(&title, notes, more);
            }
            ServerFrame::NoteResults { query, notes, time } => {
                self.memory.next = None;
                let title = format!("Notes matching \"{query}\"{}:", time_read(time.as_ref()));
                self.show_notes(&title, notes, false);
            }
            ServerFrame::Note { note } => {
                self.push(Entry::info(format!(
                    "{} · {}{} · version {}{}\n{}",
                    note.note_id,
                    note.category.as_deref().unwrap_or("no category"),
                    tags(&note),
                    note.edit_token,
                    unconfirmed(&note),
                    note.text
                )));
            }
            ServerFrame::NoteEdited { note } => self.on_edited(note),
            ServerFrame::NoteDeleted { note_id } => self.on_deleted(note_id),
            ServerFrame::NoteVersions {
                note_id,
                versions,
                deleted_at,
                purge_after,
            } => return self.on_history(note_id, versions, deleted_at, purge_after),
            ServerFrame::DeletedNotes { notes } => self.show_deleted(notes),
            ServerFrame::NoteRestored { note } => self.on_restored(note),
            ServerFrame::NoteConfirmed { note } => self.on_confirmed(note),
            _ => {}
        }
        Vec::new()
    }

    /// `note_edited`: the end of an undo, or an edit of the user's to record (with how to undo
    /// it).
    fn on_edited(&mut self, note: NoteView) {
        if let Some(i) = self.memory.undoing.take() {
            self.undone(i);
            return;
        }
        let old = self.memory.editing.take();
        for shown in self.memory.shown.iter_mut().flatten() {
            if shown.note_id == note.note_id {
                *shown = note.clone();
            }
        }
        let undo = match old {
            Some((id, text)) if id == note.note_id => Undo::Revert {
                note_id: id,
                text,
                edit_token: note.edit_token.clone(),
            },
            _ => Undo::PreviousVersion {
                note_id: note.note_id.clone(),
                text: note.text.trim().to_owned(),
            },
        };
        self.record(format!("edited \"{}\"", excerpt(&note.text)), undo);
        self.report_changes();
    }

    /// `note_deleted`: the end of an undo, or a deletion to record (undone by a restore).
    fn on_deleted(&mut self, note_id: String) {
        let text = self
            .memory
            .shown
            .iter()
            .flatten()
            .find(|n| n.note_id == note_id)
            .map(|n| excerpt(&n.text));
        for slot in &mut self.memory.shown {
            if slot.as_ref().is_some_and(|n| n.note_id == note_id) {
                *slot = None;
            }
        }
        if let Some(i) = self.memory.undoing.take() {
            self.undone(i);
            return;
        }
        let line = match text {
            Some(text) => format!("deleted \"{text}\""),
            None => format!("deleted {}", short_id(&note_id)),
        };
        self.record(line, Undo::Restore { note_id });
        self.report_changes();
    }

    /// A note request failed: nothing is pending any more.
    pub(super) fn note_request_failed(&mut self) {
        self.memory.editing = None;
        self.memory.undoing = None;
        self.memory.restoring = None;
    }

    pub(super) fn undone(&mut self, i: usize) {
        if let Some(change) = self.memory.changes.get_mut(i) {
            change.undo = Undo::Done;
            let line = format!("Undone: {} (change {}).", change.line, i + 1);
            self.push(Entry::info(line));
        }
    }

    fn show_notes(&mut self, title: &str, notes: Vec<NoteView>, more: bool) {
        if notes.is_empty() {
            self.push(Entry::info(format!("{title}\n  (none)")));
            self.memory.shown = Vec::new();
            return;
        }
        let mut text = title.to_owned();
        for (i, note) in notes.iter().enumerate() {
            let category = note
                .category
                .as_deref()
                .map(|c| format!("[{c}] "))
                .unwrap_or_default();
            let date = note.updated_at.get(..10).unwrap_or(&note.updated_at);
            text.push_str(&format!(
                "\n  {}. {category}{} · {date}{}",
                i + 1,
                excerpt(&note.text),
                unconfirmed(note)
            ));
        }
        if more {
            text.push_str("\n/memory more shows the next page.");
        }
        if notes.iter().any(|n| !unconfirmed(n).is_empty()) {
            text.push_str(
                "\nUnconfirmed notes were saved or changed after the agent read a file, a \
                 command's output or a web page; recall leaves them out (or shows the text you \
                 last confirmed, see /memory history <n>) until /memory confirm <n>.",
            );
        }
        text.push_str("\n/memory show|edit|delete|history <n> acts on a note.");
        self.push(Entry::info(text));
        self.memory.shown = notes.into_iter().map(Some).collect();
    }

    /// Notes what a tool call of the running turn changed in memory (the `changes` of its
    /// `tool_finished`, whichever memory tool or dialect made them): one line each after the turn.
    pub(super) fn note_changes(&mut self, changes: Vec<NoteChange>) {
        for change in changes {
            let (line, undo) = match change {
                NoteChange::Saved {
                    note_id,
                    text,
                    path,
                } => (
                    format!("saved {}", what(&text, path.as_deref())),
                    Undo::Delete {
                        note_id,
                        text: text.trim().to_owned(),
                    },
                ),
                NoteChange::Updated {
                    note_id,
                    text,
                    path,
                } => (
                    format!("updated {}", what(&text, path.as_deref())),
                    Undo::PreviousVersion {
                        note_id,
                        text: text.trim().to_owned(),
                    },
                ),
                NoteChange::Deleted { note_id, path } => (
                    format!("deleted {}", path.unwrap_or_else(|| short_id(&note_id))),
                    Undo::Restore { note_id },
                ),
            };
            self.record(line, undo);
            self.memory.turn_changes += 1;
        }
    }

    pub(super) fn record(&mut self, line: String, undo: Undo) {
        self.memory.changes.push(MemoryChange { line, undo });
    }

    /// After a turn (or an edit here): one line per change not listed yet.
    pub(super) fn report_changes(&mut self) {
        let count = std::mem::take(&mut self.memory.turn_changes).max(1);
        let start = self.memory.changes.len().saturating_sub(count);
        let lines: Vec<String> = self.memory.changes[start..]
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let n = start + i + 1;
                let how = match c.undo.is_pending() {
                    true => format!("/undo {n} takes it back"),
                    false => "undone".to_owned(),
                };
                format!("Memory {n}: {} · {how}", c.line)
            })
            .collect();
        for line in lines {
            self.push(Entry::info(line));
        }
    }

    /// Whether the running turn changed memory.
    pub(super) fn turn_changed_memory(&self) -> bool {
        self.memory.turn_changes > 0
    }
}

/// A changed note in a line: its file's path (files dialect), or an excerpt of its text.
fn what(text: &str, path: Option<&str>) -> String {
    match path {
        Some(path) => path.to_owned(),
        None => format!("\"{}\"", excerpt(text)),
    }
}

/// `note-0a1b2c3d…`: enough to tell notes apart in a line.
pub(super) fn short_id(id: &str) -> String {
    match id.get(..13) {
        Some(head) if id.len() > 13 => format!("{head}…"),
        _ => id.to_owned(),
    }
}

pub(super) fn excerpt(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.chars().count() > EXCERPT_CHARS || text.trim().lines().count() > 1 {
        let cut: String = line.chars().take(EXCERPT_CHARS).collect();
        format!("{}…", cut.trim_end())
    } else {
        line.to_owned()
    }
}

/// ` (read "last week" as …)`: how a search read its words about time; empty when they named
/// none.
pub(super) fn time_read(time: Option<&TimeReadView>) -> String {
    time.map_or(String::new(), |t| format!(" ({})", t.read))
}

/// ` · unconfirmed (from a file)` for a note recall leaves out until the user confirms it, and
/// ` · unconfirmed (from a file; was "…")` for a change awaiting confirmation, with the text the
/// user last confirmed (what recall shows until then).
fn unconfirmed(note: &NoteView) -> String {
    match (&note.provenance, &note.confirmed_text) {
        (Some(p), Some(before)) if !p.confirmed => format!(
            " · unconfirmed (from {}; was \"{}\")",
            source(&p.origin),
            excerpt(before)
        ),
        (Some(p), None) if !p.confirmed => format!(" · unconfirmed (from {})", source(&p.origin)),
        _ => String::new(),
    }
}

/// What an untrusted origin read, in words.
fn source(origin: &str) -> &str {
    match origin {
        "file" => "a file",
        "shell" => "a command's output",
        "web" => "a web page",
        other => other,
    }
}

fn tags(note: &NoteView) -> String {
    if note.tags.is_empty() {
        String::new()
    } else {
        format!(" · tags {}", note.tags.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_names_its_file_or_an_excerpt_of_its_text() {
        let check = |text: &str, path: Option<&str>, expected: &str| {
            assert_eq!(what(text, path), expected, "{text:?} {path:?}");
        };
        check("Lives in Porto", None, "\"Lives in Porto\"");
        check("Lives in Porto\nsince 2020", None, "\"Lives in Porto…\"");
        check("anything", Some("/memories/home.md"), "/memories/home.md");
    }
}
