//! Moving a user's notes in and out whole: export (ids and timestamps kept) and import (notes whose
//! id already exists are skipped, so importing the same file twice is harmless).

use types::UserId;

use crate::error::MemoryError;
use crate::indexing::prepare_many;
use crate::notes::{ExportedNote, NoteWrite, insert_note, note_exists, validate};
use crate::store::{MemoryStore, begin, finish};
use crate::time::to_text;

impl MemoryStore {
    /// The user's notes, for `export`; ids and timestamps are kept.
    pub async fn export_notes(&self, user: &UserId) -> Result<Vec<ExportedNote>, MemoryError> {
        self.list_notes(user).await
    }

    /// Imports notes for `user`, keeping their ids and timestamps. Notes whose id already exists
    /// are skipped, so importing the same file twice is harmless. Returns how many were added.
    pub async fn import_notes(
        &self,
        user: &UserId,
        notes: Vec<ExportedNote>,
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
            let (user, index) = (user.clone(), self.inner.index.clone());
            added += self
                .write(move |conn| async move {
                    let tx = begin(&conn).await?;
                    let mut changes = Vec::new();
                    let outcome = async {
                        let mut added = 0;
                        for write in &batch {
                            if !note_exists(&tx, &write.note_id).await? {
                                insert_note(&tx, &user, write, &mut changes).await?;
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
}
