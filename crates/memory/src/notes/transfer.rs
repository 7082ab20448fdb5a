//! Moving a user's notes in and out whole: export (ids and timestamps kept) and import (notes whose
//! id already exists are skipped, so importing the same file twice is harmless). A checked import
//! ([`MemoryStore::import`]) also leaves out notes the user already has (exact or,
//! unless allowed, near duplicates) and records each note's provenance as an import.

use std::collections::HashSet;

use serde::Serialize;
use types::{AuditTag, NoteId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::duplicates::{DuplicateCheck, Similar, SimilarNote, normalize};
use crate::notes::indexing::prepare_many;
use crate::notes::note::{ExportedNote, NoteWrite, insert_note, note_exists, validate};
use crate::notes::provenance::{Origin, Provenance};
use crate::notes::receipts::CallKey;
use crate::store::{begin, finish};
use crate::time::to_text;

impl MemoryStore {
    /// The user's notes, for `export`; ids and timestamps are kept.
    pub async fn export_notes(&self, user: &UserId) -> Result<Vec<ExportedNote>, MemoryError> {
        self.list_notes(user).await
    }

    /// Imports `notes` as they are (no duplicate check); with `audit` (a governed import) each
    /// added note records its audit row in the transaction of its batch. Returns how many were
    /// added.
    async fn import_notes_audited(
        &self,
        user: &UserId,
        notes: Vec<ExportedNote>,
        audit: Option<&AuditTag>,
    ) -> Result<usize, MemoryError> {
        // Reject a bad file before writing anything (metadata checked like a save's).
        let mut notes = notes;
        for note in &mut notes {
            validate(&note.content)?;
            note.metadata = std::mem::take(&mut note.metadata).validated()?;
        }
        let mut added = 0;
        let batch_size = self.inner.batch_size;
        let mut pending = notes.into_iter().peekable();
        while pending.peek().is_some() {
            let notes: Vec<ExportedNote> = pending.by_ref().take(batch_size).collect();
            let contents: Vec<&str> = notes
                .iter()
                .map(|n| validate(&n.content))
                .collect::<Result<_, _>>()?;
            // One embedding call for the whole batch (the builtin model and remote endpoints
            // are far cheaper per text in batches).
            let prepared =
                prepare_many(self.inner.embedder.as_ref(), &contents, batch_size).await?;
            let contents: Vec<String> = contents.into_iter().map(str::to_owned).collect();
            let batch: Vec<NoteWrite> = notes
                .into_iter()
                .zip(contents)
                .zip(prepared)
                .map(|((note, content), prepared)| NoteWrite {
                    note_id: note.note_id,
                    content,
                    metadata: note.metadata,
                    created_at: to_text(note.created_at),
                    updated_at: to_text(note.updated_at),
                    prepared,
                })
                .collect();
            let (user, index, audit) = (user.clone(), self.inner.index.clone(), audit.cloned());
            let one_trip = self.inner.db.is_remote();
            added += self
                .write(move |conn| async move {
                    if one_trip
                        && let Some(added) =
                            crate::notes::one_trip::import(&conn, &user, &batch, audit.as_ref())
                                .await?
                    {
                        return Ok(added);
                    }
                    let tx = begin(&conn).await?;
                    let mut changes = Vec::new();
                    let outcome = async {
                        let mut added = 0;
                        for write in &batch {
                            if !note_exists(&tx, &write.note_id).await? {
                                insert_note(&tx, &user, write, &mut changes).await?;
                                crate::notes::audit::record_write(
                                    &tx,
                                    &user,
                                    audit.as_ref(),
                                    Some(&write.note_id),
                                )
                                .await?;
                                added += 1;
                            }
                        }
                        Ok(added)
                    }
                    .await;
                    let added = finish(tx, outcome).await?;
                    index.apply(&changes);
                    Ok(added)
                })
                .await?;
        }
        self.checkpoint().await?;
        tracing::info!(user = %user, added, "imported notes");
        Ok(added)
    }

    /// Imports notes for `user`, keeping their ids and timestamps. Notes whose id already exists
    /// are skipped, so importing the same file twice is harmless. Unless `similar` is
    /// [`Similar::Unchecked`], also without duplicates: a note whose text the user already has
    /// (or that repeats an earlier line of the file) is left out, and so is a near-duplicate
    /// unless `similar` is [`Similar::Allow`]; both are reported. Every imported note's
    /// provenance says `import` (a note the file marks unconfirmed stays unconfirmed). With
    /// an audited `call` (a governed import) each imported note records its audit row in the
    /// transaction that adds it. A note whose id the store already has is left out and listed
    /// (`already_present`). What the file said of the note's session and turn is dropped (they
    /// are another store's); `from` (a file name) is kept as `imported_from`.
    pub async fn import(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        notes: Vec<ExportedNote>,
        similar: Similar,
        from: Option<&str>,
    ) -> Result<ImportReport, MemoryError> {
        let audit = call.and_then(CallKey::audit);
        if similar == Similar::Unchecked {
            let imported = self.import_notes_audited(user, notes, audit).await?;
            return Ok(ImportReport {
                imported,
                ..ImportReport::default()
            });
        }
        let mut report = ImportReport::default();
        let mut keep = Vec::with_capacity(notes.len());
        let mut seen = HashSet::new();
        let ids: Vec<NoteId> = notes.iter().map(|n| n.note_id.clone()).collect();
        let present = self.present_ids(ids).await?;
        for mut note in notes {
            validate(&note.content)?;
            if present.contains(&note.note_id) {
                report.already_present.push(note.note_id);
                continue;
            }
            if !seen.insert(normalize(&note.content)) {
                report.duplicates.push(ImportSkip {
                    note_id: note.note_id,
                    existing: None,
                });
                continue;
            }
            match self.check_duplicate(user, &note.content).await? {
                // The same note already imported: `import_notes` skips it by id.
                DuplicateCheck::Duplicate { note_id } if note_id == note.note_id => {}
                DuplicateCheck::Duplicate { note_id } => {
                    report.duplicates.push(ImportSkip {
                        note_id: note.note_id,
                        existing: Some(note_id),
                    });
                    continue;
                }
                DuplicateCheck::Similar { notes } if similar == Similar::Refuse => {
                    report.similar.push(ImportSimilar {
                        note_id: note.note_id,
                        similar: notes,
                    });
                    continue;
                }
                _ => {}
            }
            let confirmed = note
                .metadata
                .provenance
                .as_ref()
                .is_none_or(|p| p.confirmed);
            note.metadata.provenance = Some(Provenance {
                confirmed,
                imported_from: from.map(str::to_owned),
                ..Provenance::outside_turn(Origin::Import)
            });
            keep.push(note);
        }
        report.imported = self.import_notes_audited(user, keep, audit).await?;
        Ok(report)
    }
}

impl MemoryStore {
    /// Those of `ids` the store holds (live or deleted: an id is never reused).
    async fn present_ids(&self, ids: Vec<NoteId>) -> Result<HashSet<NoteId>, MemoryError> {
        if ids.is_empty() {
            return Ok(HashSet::new());
        }
        self.read(move |conn| async move {
            let mut present = HashSet::new();
            for chunk in ids.chunks(500) {
                let marks = vec!["?"; chunk.len()].join(", ");
                let sql = format!("SELECT note_id FROM notes WHERE note_id IN ({marks})");
                let params: Vec<libsql::Value> = chunk
                    .iter()
                    .map(|id| libsql::Value::Text(id.to_string()))
                    .collect();
                let ctx = "reading which notes exist";
                let mut rows = conn
                    .query(&sql, params)
                    .await
                    .map_err(MemoryError::db(ctx))?;
                while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                    let id: String = row.get(0).map_err(MemoryError::db(ctx))?;
                    if let Ok(id) = NoteId::parse(&id) {
                        present.insert(id);
                    }
                }
            }
            Ok(present)
        })
        .await
    }
}

/// What a checked import did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// Notes added.
    pub imported: usize,
    /// Notes left out: the store has a note with their id already (the file imported before).
    pub already_present: Vec<NoteId>,
    /// Notes left out: the user (or an earlier line) already has the same text.
    pub duplicates: Vec<ImportSkip>,
    /// Notes left out as near-duplicates of these stored notes.
    pub similar: Vec<ImportSimilar>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportSkip {
    /// The id the file gave the note.
    pub note_id: NoteId,
    /// The stored note with the same text (`None`: an earlier line of the file).
    pub existing: Option<NoteId>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportSimilar {
    pub note_id: NoteId,
    pub similar: Vec<SimilarNote>,
}
