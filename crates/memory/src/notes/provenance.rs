//! Where a note came from, and whether the user has vouched for it.
//!
//! Every surface that writes a note records a [`Provenance`] in the note's metadata: its
//! [`Origin`] (the user's own words, the model's inference, a tool's output, an import, MCP, the
//! CLI), and the session and turn it was written in. A note written in a turn that had read
//! untrusted tool output (a file, a shell command, a web page) is *unconfirmed*: it is listed and
//! searchable, but automatic recall leaves it out until the user confirms it
//! ([`crate::MemoryStore::confirm`]). The provenance is set by the caller from its own
//! context (the turn, the CLI, the MCP token), never from a model's arguments.

use std::fmt;

use serde::{Deserialize, Serialize};
use types::{NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::audit::record_write;
use crate::notes::lifecycle::load_stored;
use crate::notes::note::Note;
use crate::notes::receipts::CallKey;
use crate::store::{begin, finish};

/// Who or what the text of a note came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The user said it in a conversation turn.
    User,
    /// The model inferred it in a conversation turn.
    Model,
    /// Saved in a turn that had read a file through a tool.
    File,
    /// Saved in a turn that had read a shell command's output.
    Shell,
    /// Saved in a turn that had read a web page.
    Web,
    /// Imported from a file (`runner memory import`).
    Import,
    /// Written by an MCP client, or saved in a turn that had read an MCP server's tool result.
    Mcp,
    /// Written by the operator with `runner memory`.
    Cli,
    /// Proposed by the runtime's capture call from what was said in a conversation.
    Captured,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Model => "model",
            Origin::File => "file",
            Origin::Shell => "shell",
            Origin::Web => "web",
            Origin::Import => "import",
            Origin::Mcp => "mcp",
            Origin::Cli => "cli",
            Origin::Captured => "captured",
        }
    }

    /// Whether text of this origin may have been written by someone other than the user.
    pub fn is_untrusted(self) -> bool {
        matches!(self, Origin::File | Origin::Shell | Origin::Web)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A note's origin, where it was written, and whether the user has confirmed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub origin: Origin,
    /// The conversation session the note was written in, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The turn the note was written in, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The file an imported note came from (its name only, never a host path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
    /// `false` for a note written after untrusted tool output was read in the same turn: it is
    /// kept out of automatic recall until the user confirms it.
    #[serde(default = "confirmed_by_default")]
    pub confirmed: bool,
}

fn confirmed_by_default() -> bool {
    true
}

impl Provenance {
    /// A note written outside any conversation (import, MCP, CLI): confirmed.
    pub fn outside_turn(origin: Origin) -> Self {
        Self {
            origin,
            session_id: None,
            turn_id: None,
            imported_from: None,
            confirmed: !origin.is_untrusted(),
        }
    }

    /// A note written in a conversation turn; unconfirmed when `origin` is untrusted.
    pub fn in_turn(origin: Origin, session_id: &str, turn_id: &str) -> Self {
        Self {
            origin,
            session_id: Some(session_id.to_owned()),
            turn_id: Some(turn_id.to_owned()),
            imported_from: None,
            confirmed: !origin.is_untrusted(),
        }
    }

    /// Short text for people and models: `user, session s1 turn t2` (`, unconfirmed`).
    pub fn describe(&self) -> String {
        let mut text = self.origin.as_str().to_owned();
        if let Some(session) = &self.session_id {
            text.push_str(&format!(", session {session}"));
        }
        if let Some(turn) = &self.turn_id {
            text.push_str(&format!(" turn {turn}"));
        }
        if let Some(file) = &self.imported_from {
            text.push_str(&format!(" from {file}"));
        }
        if !self.confirmed {
            text.push_str(", unconfirmed");
        }
        text
    }
}

/// The provenance a rewrite of a note to `text` leaves, `new` being the writer's: `new`, except
/// that a rewrite leaving the text as it was (`old`: the text and its provenance) keeps a
/// confirmed note confirmed — the text came from where it did before, and an untrusted writer
/// repeating it adds nothing the user has not vouched for (else a note rewritten unchanged after
/// untrusted input would leave recall, with no earlier confirmed text to stand in for it).
pub(crate) fn after_rewrite(
    (old_text, old): (&str, Option<&Provenance>),
    text: &str,
    new: Option<Provenance>,
) -> Option<Provenance> {
    let was_confirmed = old.is_none_or(|p| p.confirmed);
    let unconfirms = new.as_ref().is_some_and(|p| !p.confirmed);
    if old_text == text && was_confirmed && unconfirms {
        return old.cloned();
    }
    new
}

impl MemoryStore {
    /// Marks `note_id` as confirmed by the user, so automatic recall may use it. A note that was
    /// never unconfirmed (or is confirmed already) is returned unchanged and nothing is written.
    /// With an audited `call` (a governed call) a confirmation writes its audit row in its own
    /// transaction; one that changed nothing writes none.
    pub async fn confirm(
        &self,
        user: &UserId,
        call: Option<&CallKey>,
        note_id: &NoteId,
    ) -> Result<Note, MemoryError> {
        let (user, note_id) = (user.clone(), note_id.clone());
        let audit = call.and_then(CallKey::audit).cloned();
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let outcome = async {
                let session = SessionId::user_memory(&user);
                let mut stored = load_stored(&tx, &session, &note_id).await?;
                if stored.deleted_at.is_some() {
                    return Err(MemoryError::NoteNotFound(note_id.clone()));
                }
                if let Some(p) = stored.note.metadata.provenance.as_mut()
                    && !p.confirmed
                {
                    p.confirmed = true;
                    let metadata = serde_json::to_string(&stored.note.metadata)
                        .map_err(MemoryError::corrupt("note metadata"))?;
                    tx.execute(
                        "UPDATE notes SET metadata_json = ?2 WHERE note_id = ?1",
                        [note_id.as_str(), metadata.as_str()],
                    )
                    .await
                    .map_err(MemoryError::db("confirming a note"))?;
                    tracing::info!(user = %user, note_id = %note_id, "confirmed note");
                    // Only a change is a write worth an audit row: confirming a confirmed (or
                    // trusted) note changes nothing and records nothing.
                    record_write(&tx, &user, audit.as_ref(), Some(&note_id)).await?;
                }
                Ok(stored.note)
            }
            .await;
            finish(tx, outcome).await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_origins_start_unconfirmed() {
        for (origin, confirmed) in [
            (Origin::User, true),
            (Origin::Model, true),
            (Origin::File, false),
            (Origin::Shell, false),
            (Origin::Web, false),
        ] {
            assert_eq!(
                Provenance::in_turn(origin, "s", "t").confirmed,
                confirmed,
                "{origin}"
            );
        }
        assert_eq!(
            Provenance::in_turn(Origin::Shell, "s1", "t2").describe(),
            "shell, session s1 turn t2, unconfirmed"
        );
        let old: Provenance = serde_json::from_str(r#"{"origin":"cli"}"#).unwrap();
        assert_eq!(old, Provenance::outside_turn(Origin::Cli));
    }
}
