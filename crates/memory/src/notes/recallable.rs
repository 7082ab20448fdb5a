//! What automatic recall may show of a note: only text the user can vouch for.
//!
//! A note saved after untrusted input is unconfirmed and left out until the user confirms it
//! (see [`crate::Provenance`]). An *update* made after untrusted input leaves the note
//! unconfirmed too, but the user had vouched for the text it replaced: recall shows that last
//! confirmed text (from `note_versions`) instead, so a planted "the user now likes peanuts" neither
//! reaches the model as the user's fact nor drops the fact the user gave. Once the user confirms
//! the edit, recall shows the note as it is.

use libsql::{Connection, Value};
use types::{NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::note::{Note, note_from_row};
use crate::search::query::{HitSource, SearchHit};
use crate::time::{self, now_text};

/// A note as automatic recall may show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recallable {
    /// The note's text, metadata and save time as the user last vouched for them: the note as it
    /// is, or (when `later_edit_unconfirmed`) its newest confirmed earlier version.
    pub note: Note,
    /// The note was changed after untrusted input and the change awaits the user's confirmation;
    /// `note` holds the text it replaced.
    pub later_edit_unconfirmed: bool,
}

/// `coalesce(..)`: a note written before provenance was recorded is the user's.
const CONFIRMED: &str = "coalesce(json_extract(metadata_json, '$.provenance.confirmed'), 1) != 0";

impl MemoryStore {
    /// The notes among `ids` that automatic recall may show (see the module doc): `user`'s live,
    /// unexpired notes, each as the user last confirmed it, in the order of `ids`. A note never
    /// confirmed is left out.
    pub async fn recallable_notes(
        &self,
        user: &UserId,
        ids: &[NoteId],
    ) -> Result<Vec<Recallable>, MemoryError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let session = SessionId::user_memory(user);
        let ids: Vec<NoteId> = ids.to_vec();
        let found = self
            .read(move |conn| async move {
                let notes = live_notes(&conn, &session, &ids).await?;
                let mut shown = Vec::with_capacity(notes.len());
                for (note, confirmed) in notes {
                    if confirmed {
                        shown.push(Recallable {
                            note,
                            later_edit_unconfirmed: false,
                        });
                    } else if let Some(earlier) = last_confirmed(&conn, &session, note).await? {
                        shown.push(Recallable {
                            note: earlier,
                            later_edit_unconfirmed: true,
                        });
                    }
                }
                Ok((ids, shown))
            })
            .await;
        let (ids, mut shown) = found?;
        shown.sort_by_key(|r| ids.iter().position(|id| *id == r.note.note_id));
        Ok(shown)
    }
}

impl MemoryStore {
    /// For each of `ids` (notes of `user`'s) changed after untrusted input and awaiting the
    /// user's confirmation, its id and the text the user last confirmed: what recall shows
    /// until then, and what every view shows beside the change.
    pub async fn confirmed_texts(
        &self,
        user: &UserId,
        ids: &[NoteId],
    ) -> Result<Vec<(NoteId, String)>, MemoryError> {
        Ok(self
            .recallable_notes(user, ids)
            .await?
            .into_iter()
            .filter(|r| r.later_edit_unconfirmed)
            .map(|r| (r.note.note_id, r.note.content))
            .collect())
    }

    /// Sets, on each of `hits` that is an unconfirmed note of `user`'s changed after untrusted
    /// input, the text the user last confirmed ([`SearchHit::confirmed_text`]): whoever reads the
    /// note back (the model, through its search) sees what the user said beside what was
    /// written over it. A note never confirmed has no such text.
    pub async fn add_confirmed_texts(
        &self,
        user: &UserId,
        hits: &mut [SearchHit],
    ) -> Result<(), MemoryError> {
        let ids: Vec<NoteId> = hits
            .iter()
            .filter(|h| h.unconfirmed && h.source == HitSource::UserMemory)
            .filter_map(|h| h.note_id.clone())
            .collect();
        for (id, text) in self.confirmed_texts(user, &ids).await? {
            for hit in hits.iter_mut() {
                if hit.note_id.as_ref() == Some(&id) {
                    hit.confirmed_text = Some(text.clone());
                }
            }
        }
        Ok(())
    }
}

/// `session`'s live, unexpired notes among `ids`, each with whether it is confirmed.
async fn live_notes(
    conn: &Connection,
    session: &SessionId,
    ids: &[NoteId],
) -> Result<Vec<(Note, bool)>, MemoryError> {
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!(
        "SELECT note_id, content, metadata_json, created_at, updated_at, event_seq, {CONFIRMED}
         FROM notes WHERE session_id = ? AND (expires_at IS NULL OR expires_at > ?)
         AND note_id IN ({marks})"
    );
    let mut params = vec![Value::Text(session.to_string()), Value::Text(now_text())];
    params.extend(ids.iter().map(|id| Value::Text(id.to_string())));
    let ctx = "reading notes to recall";
    let mut rows = conn
        .query(&sql, params)
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut notes = Vec::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        let confirmed = row.get::<i64>(6).map_err(MemoryError::db(ctx))? != 0;
        notes.push((note_from_row(&row)?.note, confirmed));
    }
    Ok(notes)
}

/// `note` as its newest confirmed earlier version, if it has one.
async fn last_confirmed(
    conn: &Connection,
    session: &SessionId,
    note: Note,
) -> Result<Option<Note>, MemoryError> {
    let ctx = "reading a note's confirmed version";
    let sql = format!(
        "SELECT content, metadata_json, saved_at FROM note_versions
         WHERE note_id = ?1 AND session_id = ?2 AND {CONFIRMED}
         ORDER BY version DESC LIMIT 1"
    );
    let mut rows = conn
        .query(&sql, [note.note_id.as_str(), session.as_str()])
        .await
        .map_err(MemoryError::db(ctx))?;
    let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? else {
        return Ok(None);
    };
    let text = |i| row.get::<String>(i).map_err(MemoryError::db(ctx));
    Ok(Some(Note {
        content: text(0)?,
        metadata: serde_json::from_str(&text(1)?).map_err(MemoryError::corrupt("note metadata"))?,
        updated_at: time::parse(&text(2)?)?,
        ..note
    }))
}
