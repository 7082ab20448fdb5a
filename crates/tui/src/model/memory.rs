//! The user's memory in the transcript: `/memory` browses the saved notes (newest first, by
//! category, by search), edits and deletes them; after each turn that changed memory, one line
//! per change with the `/undo <n>` that takes it back (Ctrl+Z: the latest that can be).
//!
//! What can be undone: a note the agent saved (undo deletes it) and an edit made here (undo puts
//! the old text back, at the version the edit produced, so a later change is never overwritten).
//! The agent's own updates and deletes are listed too; taking them back needs the note's history,
//! which this gateway does not offer yet, and the line says so.

use types::{ClientFrame, NoteView, ServerFrame};

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
    /// A new note: delete it.
    Delete { note_id: String },
    /// An edit: put `text` back, if the note is still at `version`.
    Revert {
        note_id: String,
        text: String,
        version: String,
    },
    /// Needs the note's history (not offered yet).
    Unavailable,
    /// Already taken back.
    Done,
}

/// Memory state of the client.
#[derive(Debug, Default)]
pub(super) struct MemoryView {
    /// The notes last listed, numbered from 1 for `/memory edit|delete <n>`.
    shown: Vec<NoteView>,
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
    undoing: Option<usize>,
}

impl App {
    /// Runs a `/memory` command.
    pub(super) fn memory_command(&mut self, command: MemoryCommand) -> Vec<ClientFrame> {
        match command {
            MemoryCommand::List { category } => {
                self.memory.next = None;
                self.memory.category.clone_from(&category);
                vec![ClientFrame::ListNotes {
                    category,
                    cursor: None,
                    limit: NOTES_PAGE,
                }]
            }
            MemoryCommand::More => match self.memory.next.take() {
                Some((category, cursor)) => vec![ClientFrame::ListNotes {
                    category,
                    cursor: Some(cursor),
                    limit: NOTES_PAGE,
                }],
                None => {
                    self.push(Entry::info(
                        "No more notes: /memory lists them from the newest.",
                    ));
                    Vec::new()
                }
            },
            MemoryCommand::Search { query } => vec![ClientFrame::SearchNotes {
                query,
                limit: NOTES_PAGE,
            }],
            MemoryCommand::Show { n } => match self.shown_note(n) {
                Some(note) => vec![ClientFrame::GetNote {
                    note_id: note.note_id,
                }],
                None => Vec::new(),
            },
            MemoryCommand::Edit { n, text } => match self.shown_note(n) {
                Some(note) => {
                    self.memory.editing = Some((note.note_id.clone(), note.text));
                    vec![ClientFrame::EditNote {
                        note_id: note.note_id,
                        content: text,
                        version: note.version,
                    }]
                }
                None => Vec::new(),
            },
            MemoryCommand::Delete { n } => match self.shown_note(n) {
                Some(note) => vec![ClientFrame::DeleteNote {
                    note_id: note.note_id,
                }],
                None => Vec::new(),
            },
        }
    }

    fn shown_note(&mut self, n: usize) -> Option<NoteView> {
        let note = n
            .checked_sub(1)
            .and_then(|i| self.memory.shown.get(i))
            .cloned();
        if note.is_none() {
            self.push(Entry::error(format!(
                "There is no note {n} in the last list: /memory lists your notes."
            )));
        }
        note
    }

    /// `/undo [n]` (Ctrl+Z: the latest change).
    pub(super) fn undo(&mut self, n: Option<usize>) -> Vec<ClientFrame> {
        // Without a number: the latest change that can be taken back.
        let latest = || {
            let undoable =
                |c: &MemoryChange| matches!(c.undo, Undo::Delete { .. } | Undo::Revert { .. });
            self.memory
                .changes
                .iter()
                .rposition(undoable)
                .map_or(0, |i| i + 1)
        };
        let n = n.unwrap_or_else(latest);
        let Some(change) = n
            .checked_sub(1)
            .and_then(|i| self.memory.changes.get(i))
            .cloned()
        else {
            self.push(Entry::info("No memory change to undo."));
            return Vec::new();
        };
        let frame = match change.undo {
            Undo::Delete { note_id } => ClientFrame::DeleteNote { note_id },
            Undo::Revert {
                note_id,
                text,
                version,
            } => ClientFrame::EditNote {
                note_id,
                content: text,
                version,
            },
            Undo::Unavailable => {
                self.push(Entry::info(format!(
                    "Change {n} cannot be undone here yet (it needs the note's history)."
                )));
                return Vec::new();
            }
            Undo::Done => {
                self.push(Entry::info(format!("Change {n} was already undone.")));
                return Vec::new();
            }
        };
        self.memory.undoing = Some(n - 1);
        vec![frame]
    }

    /// Applies a note frame.
    pub(super) fn on_note_frame(&mut self, frame: ServerFrame) {
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
            ServerFrame::NoteResults { query, notes } => {
                self.memory.next = None;
                self.show_notes(&format!("Notes matching \"{query}\":"), notes, false);
            }
            ServerFrame::Note { note } => {
                self.push(Entry::info(format!(
                    "{} · {}{} · version {}\n{}",
                    note.note_id,
                    note.category.as_deref().unwrap_or("no category"),
                    tags(&note),
                    note.version,
                    note.text
                )));
            }
            ServerFrame::NoteEdited { note } => {
                if let Some(i) = self.memory.undoing.take() {
                    self.undone(i);
                    return;
                }
                let old = self.memory.editing.take();
                for shown in &mut self.memory.shown {
                    if shown.note_id == note.note_id {
                        *shown = note.clone();
                    }
                }
                let undo = match old {
                    Some((id, text)) if id == note.note_id => Undo::Revert {
                        note_id: id,
                        text,
                        version: note.version.clone(),
                    },
                    _ => Undo::Unavailable,
                };
                self.record(format!("edited \"{}\"", excerpt(&note.text)), undo);
                self.report_changes();
            }
            ServerFrame::NoteDeleted { note_id } => {
                self.memory.shown.retain(|n| n.note_id != note_id);
                if let Some(i) = self.memory.undoing.take() {
                    self.undone(i);
                    return;
                }
                self.push(Entry::info(format!(
                    "Deleted {note_id}. (Restoring deleted notes needs note history, not offered yet.)"
                )));
            }
            _ => {}
        }
    }

    /// A note request failed: nothing is pending any more.
    pub(super) fn note_request_failed(&mut self) {
        self.memory.editing = None;
        self.memory.undoing = None;
    }

    fn undone(&mut self, i: usize) {
        if let Some(change) = self.memory.changes.get_mut(i) {
            change.undo = Undo::Done;
            let line = format!("Undone: {} (change {}).", change.line, i + 1);
            self.push(Entry::info(line));
        }
    }

    fn show_notes(&mut self, title: &str, notes: Vec<NoteView>, more: bool) {
        if notes.is_empty() {
            self.push(Entry::info(format!("{title}\n  (none)")));
            self.memory.shown = notes;
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
                "\n  {}. {category}{} · {date}",
                i + 1,
                excerpt(&note.text)
            ));
        }
        if more {
            text.push_str("\n/memory more shows the next page.");
        }
        text.push_str("\n/memory show|edit|delete <n> acts on a note.");
        self.push(Entry::info(text));
        self.memory.shown = notes;
    }

    /// Notes a memory tool call of the running turn that succeeded (its arguments come from its
    /// `tool_started`).
    pub(super) fn note_tool_call(&mut self, call_id: &str, name: &str, summary: &str) {
        let arguments = self.entries.iter().rev().find_map(|e| match e {
            Entry::Tool {
                call_id: id,
                arguments,
                ..
            } if id == call_id => Some(arguments.as_str()),
            _ => None,
        });
        let args: serde_json::Value = arguments
            .and_then(|a| serde_json::from_str(a).ok())
            .unwrap_or_default();
        let arg = |key: &str| args.get(key).and_then(|v| v.as_str()).unwrap_or("");
        let (line, undo) = match name {
            "memory_save" => {
                let Some(note_id) = saved_note(summary) else {
                    return;
                };
                let line = format!("saved \"{}\"", excerpt(arg("content")));
                (line, Undo::Delete { note_id })
            }
            "memory_update" => (
                format!("updated \"{}\"", excerpt(arg("content"))),
                Undo::Unavailable,
            ),
            "memory_delete" => (
                format!("deleted {}", short_id(arg("note_id"))),
                Undo::Unavailable,
            ),
            _ => return,
        };
        self.record(line, undo);
        self.memory.turn_changes += 1;
    }

    fn record(&mut self, line: String, undo: Undo) {
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
                let how = match c.undo {
                    Undo::Delete { .. } | Undo::Revert { .. } => format!("/undo {n} takes it back"),
                    Undo::Unavailable => "cannot be undone yet".to_owned(),
                    Undo::Done => "undone".to_owned(),
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

/// The id of the note a save created, from its summary (`note-…: Saved. …`). Anything else (a
/// save that stored nothing new, say) is not a change to undo by deleting.
fn saved_note(summary: &str) -> Option<String> {
    let (id, message) = summary.split_once(':')?;
    let id = id.trim();
    let created = message.trim_start().starts_with("Saved.");
    (created && types::NoteId::parse(id).is_ok()).then(|| id.to_owned())
}

/// `note-0a1b2c3d…`: enough to tell notes apart in a line.
fn short_id(id: &str) -> String {
    match id.get(..13) {
        Some(head) if id.len() > 13 => format!("{head}…"),
        _ => id.to_owned(),
    }
}

fn excerpt(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.chars().count() > EXCERPT_CHARS || text.trim().lines().count() > 1 {
        let cut: String = line.chars().take(EXCERPT_CHARS).collect();
        format!("{}…", cut.trim_end())
    } else {
        line.to_owned()
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
    fn only_a_created_note_is_undone_by_deleting_it() {
        let id = "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f";
        let check = |summary: &str, expected: Option<&str>| {
            assert_eq!(saved_note(summary).as_deref(), expected, "{summary}");
        };
        check(&format!("{id}: Saved. Use this note_id …"), Some(id));
        check(
            &format!("{id}: Already saved as this note; nothing stored"),
            None,
        );
        check("note-1: Saved.", None);
        check(r#"{"note_id":"x","message":"Saved."}"#, None);
        check("1 result", None);
    }
}
