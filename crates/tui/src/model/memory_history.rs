//! A note's past in the transcript: `/memory history <n>` lists the versions of a listed note
//! and `/memory revert <v>` makes one current again (a new version); `/memory deleted` lists the
//! deleted notes still restorable and `/memory restore <n>` brings one back; `/memory confirm <n>`
//! vouches for a note saved after untrusted tool output. `/undo` (Ctrl+Z) lives here too: every
//! change listed after a turn is taken back with one of these requests (see `memory`).

use types::{ClientFrame, DeletedNoteView, NoteRequest, NoteVersionView, NoteView, ProvenanceView};

use super::memory::{Undo, excerpt, short_id};
use super::{App, Entry};

impl App {
    /// `/undo [n]` (Ctrl+Z: the latest change that can still be taken back).
    pub(super) fn undo(&mut self, n: Option<usize>) -> Vec<ClientFrame> {
        let latest = || {
            self.memory
                .changes
                .iter()
                .rposition(|c| c.undo.is_pending())
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
            // First the history, to check the note still says what the change wrote.
            Undo::Delete { note_id, .. } | Undo::PreviousVersion { note_id, .. } => {
                ClientFrame::Note(NoteRequest::NoteHistory { note_id })
            }
            Undo::Revert {
                note_id,
                text,
                edit_token,
            } => ClientFrame::Note(NoteRequest::EditNote {
                note_id,
                content: text,
                edit_token,
            }),
            Undo::Restore { note_id } => ClientFrame::Note(NoteRequest::RestoreNote {
                note_id,
                version: None,
            }),
            Undo::Done => {
                self.push(Entry::info(format!("Change {n} was already undone.")));
                return Vec::new();
            }
        };
        self.memory.undoing = Some(n - 1);
        vec![frame]
    }

    /// `/memory restore <n>`: the deleted note `n` of the last `/memory deleted`.
    pub(super) fn restore_deleted(&mut self, n: usize) -> Vec<ClientFrame> {
        let Some(deleted) = self.numbered(
            |app| &app.memory.deleted,
            n,
            || format!("Deleted note {n} is restored already: /memory lists your notes."),
            || format!("There is no deleted note {n}: /memory deleted lists them."),
        ) else {
            return Vec::new();
        };
        let note_id = deleted.note.note_id.clone();
        self.memory.restoring = Some((note_id.clone(), None));
        vec![ClientFrame::Note(NoteRequest::RestoreNote {
            note_id,
            version: None,
        })]
    }

    /// `/memory revert <v>`: version `v` of the note whose history was shown last.
    pub(super) fn revert_to(&mut self, version: u32) -> Vec<ClientFrame> {
        let Some((note_id, versions)) = &self.memory.history else {
            self.push(Entry::error(
                "No history shown: /memory history <n> lists a note's versions first.",
            ));
            return Vec::new();
        };
        let last = versions.last().map_or(0, |v| v.version);
        if !versions.iter().any(|v| v.version == version) {
            self.push(Entry::error(format!(
                "This note has versions 1 to {last}: /memory revert <v> takes one of them."
            )));
            return Vec::new();
        }
        let current = versions.last().map(|v| v.text.clone());
        let note_id = note_id.clone();
        self.memory.restoring = Some((note_id.clone(), current));
        vec![ClientFrame::Note(NoteRequest::RestoreNote {
            note_id,
            version: Some(version),
        })]
    }

    /// `/memory confirm <n>`.
    pub(super) fn confirm(&mut self, n: usize) -> Vec<ClientFrame> {
        match self.shown_note(n) {
            Some(note) => vec![ClientFrame::Note(NoteRequest::ConfirmNote {
                note_id: note.note_id,
            })],
            None => Vec::new(),
        }
    }

    /// A note's history: the second step of undoing a save or an update, or a list to revert
    /// from.
    pub(super) fn on_history(
        &mut self,
        note_id: String,
        versions: Vec<NoteVersionView>,
        deleted_at: Option<String>,
        purge_after: Option<String>,
    ) -> Vec<ClientFrame> {
        let undoing = self.memory.undoing.and_then(|i| {
            let undo = &self.memory.changes.get(i)?.undo;
            undo.checked()
                .is_some_and(|(id, _)| id == note_id)
                .then(|| (i, undo.clone()))
        });
        if let Some((i, undo)) = undoing {
            return self.undo_unchanged(i, &undo, &versions, deleted_at.is_some());
        }
        let state = match (&deleted_at, &purge_after) {
            (Some(at), Some(until)) => {
                format!(" (deleted {}, restorable until {})", day(at), day(until))
            }
            _ => String::new(),
        };
        let mut text = format!("History of {}{state}, oldest first:", short_id(&note_id));
        let last = versions.last().map_or(0, |v| v.version);
        for v in &versions {
            let current = if v.version == last && deleted_at.is_none() {
                " (current)"
            } else {
                ""
            };
            text.push_str(&format!(
                "\n  v{} · {} · {} · {}{current}",
                v.version,
                day(&v.saved_at),
                origin(v.provenance.as_ref()),
                excerpt(&v.text)
            ));
        }
        text.push_str("\n/memory revert <v> makes a version current again.");
        self.push(Entry::info(text));
        self.memory.history = Some((note_id, versions));
        Vec::new()
    }

    /// The second step of undoing change `i`, a save or an update, given the note's history:
    /// while the note's current text is still the one the change wrote, deletes the note or makes
    /// the version before current again; otherwise sends nothing and says why.
    fn undo_unchanged(
        &mut self,
        i: usize,
        undo: &Undo,
        versions: &[NoteVersionView],
        deleted: bool,
    ) -> Vec<ClientFrame> {
        let current = versions.last().filter(|_| !deleted);
        let unchanged = undo
            .checked()
            .and_then(|(_, text)| current.filter(|v| v.text.trim() == text));
        let frame = match (undo, unchanged) {
            (Undo::Delete { note_id, .. }, Some(_)) => NoteRequest::DeleteNote {
                note_id: note_id.clone(),
            },
            (Undo::PreviousVersion { note_id, .. }, Some(v)) if v.version > 1 => {
                NoteRequest::RestoreNote {
                    note_id: note_id.clone(),
                    version: Some(v.version - 1),
                }
            }
            _ => {
                self.memory.undoing = None;
                // A save whose note is gone already has nothing left to take back: done, so
                // that Ctrl+Z goes on to the change before it.
                let gone = matches!(undo, Undo::Delete { .. }) && deleted;
                if let Some(change) = self.memory.changes.get_mut(i).filter(|_| gone) {
                    change.undo = Undo::Done;
                }
                self.push(match gone {
                    true => Entry::info(format!(
                        "Change {}: the note is already deleted; nothing to undo.",
                        i + 1
                    )),
                    false => Entry::error(format!(
                        "Change {} was not undone: the note changed since. /memory history \
                         shows its versions.",
                        i + 1
                    )),
                });
                return Vec::new();
            }
        };
        vec![ClientFrame::Note(frame)]
    }

    pub(super) fn show_deleted(&mut self, notes: Vec<DeletedNoteView>) {
        if notes.is_empty() {
            self.push(Entry::info("Deleted notes:\n  (none)"));
        } else {
            let mut text = format!("Deleted notes ({}), most recent first:", notes.len());
            for (i, d) in notes.iter().enumerate() {
                text.push_str(&format!(
                    "\n  {}. {} · deleted {} · restorable until {}",
                    i + 1,
                    excerpt(&d.note.text),
                    day(&d.deleted_at),
                    day(&d.purge_after)
                ));
            }
            text.push_str("\n/memory restore <n> brings one back.");
            self.push(Entry::info(text));
        }
        self.memory.deleted = notes.into_iter().map(Some).collect();
    }

    /// A note restored or confirmed: an undo done, or a change of its own (itself undoable).
    pub(super) fn on_restored(&mut self, note: NoteView) {
        if let Some(i) = self.memory.undoing.take() {
            self.undone(i);
            return;
        }
        for shown in self.memory.shown.iter_mut().flatten() {
            if shown.note_id == note.note_id {
                *shown = note.clone();
            }
        }
        for slot in &mut self.memory.deleted {
            if slot
                .as_ref()
                .is_some_and(|d| d.note.note_id == note.note_id)
            {
                *slot = None;
            }
        }
        self.memory.history = None;
        let (line, undo) = match self.memory.restoring.take() {
            Some((_, Some(_))) => (
                format!("reverted to \"{}\"", excerpt(&note.text)),
                Undo::PreviousVersion {
                    note_id: note.note_id.clone(),
                    text: note.text.trim().to_owned(),
                },
            ),
            _ => (
                format!("restored \"{}\"", excerpt(&note.text)),
                Undo::Delete {
                    note_id: note.note_id.clone(),
                    text: note.text.trim().to_owned(),
                },
            ),
        };
        self.record(line, undo);
        self.report_changes();
    }

    pub(super) fn on_confirmed(&mut self, note: NoteView) {
        for shown in self.memory.shown.iter_mut().flatten() {
            if shown.note_id == note.note_id {
                *shown = note.clone();
            }
        }
        self.push(Entry::info(format!(
            "Confirmed \"{}\": recall may use it now.",
            excerpt(&note.text)
        )));
    }
}

/// The date of an RFC 3339 time.
fn day(time: &str) -> &str {
    time.get(..10).unwrap_or(time)
}

/// `user`, `file, unconfirmed`, or `unknown` for text saved before provenance was kept.
fn origin(provenance: Option<&ProvenanceView>) -> String {
    match provenance {
        Some(p) if !p.confirmed => format!("{}, unconfirmed", p.origin),
        Some(p) => p.origin.clone(),
        None => "unknown".to_owned(),
    }
}
