//! Recall: the user's saved notes most relevant to the current message, put into the context so the
//! model knows them without searching.
//!
//! Best effort: a failed search is logged and the turn goes on without recalled notes.
//!
//! Recall is a read of the user's memory like any other: it passes the governance stages as the
//! operation `memory_recall` on the turn's surface (permission, rate limit, an audit row,
//! metrics); refused, the turn goes on without recalled notes.
//!
//! Only text the user can vouch for is recalled: an unconfirmed note (saved in a turn that had
//! read untrusted tool output, see `memory::Provenance`) stays out until the user confirms it, and
//! a note edited in such a turn is recalled as it was before the edit (`memory::Recallable`). The
//! notes reach the model as quoted data, not instructions (see [`crate::prompt::notes_message`]).

use chrono::{DateTime, FixedOffset};
use chrono_tz::Tz;
use memory::{HybridQuery, MemoryStore, Weights};
use tools::MemoryAccess;
use types::{NoteId, RetrievalConfig, RuntimeConfig, SessionId, ToolExecutionContext, UserId};

use crate::budget::{clip, estimate_text};
use crate::runtime::AgentRuntime;

impl AgentRuntime {
    /// [`recall`] for the turn of `ctx`, through the governance stages (see the module doc).
    pub(crate) async fn governed_recall(
        &self,
        ctx: &ToolExecutionContext,
        store: &MemoryStore,
        message: &str,
    ) -> Vec<RecalledNote> {
        if self.config.recall_notes == 0 {
            return Vec::new();
        }
        let run = |_| async {
            Ok(recall(
                store,
                &ctx.user_id,
                message,
                (&self.config, &self.retrieval),
                self.zone(),
            )
            .await)
        };
        match self
            .govern(
                ctx,
                types::memory_ops::RECALL,
                MemoryAccess::notes_read(),
                run,
            )
            .await
        {
            Ok(notes) => notes,
            Err(_) => {
                tracing::info!("recall refused by governance; the turn goes on without it");
                Vec::new()
            }
        }
    }
}

/// Longest query text sent to the search, in bytes (long messages are cut): the one cap.
const MAX_QUERY_BYTES: usize = HybridQuery::MAX_TEXT_BYTES;

/// A saved note recalled for this turn.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct RecalledNote {
    pub(crate) note_id: NoteId,
    pub(crate) text: String,
    /// When the text shown was saved, in the user's zone.
    pub(crate) saved: DateTime<FixedOffset>,
    /// Where it came from (`user`, `model`, `import`, ...), when recorded.
    pub(crate) provenance: Option<String>,
    /// The note was edited after untrusted input and the edit awaits the user's confirmation:
    /// `text` is the text it replaced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) later_edit_unconfirmed: bool,
}

/// Up to `runtime.recall_notes` notes scoring at least `recall_min_score`, best first, within
/// `recall_token_budget` (a note that does not fit is skipped, a later shorter one may still fit),
/// dated in the user's zone `tz`.
pub(crate) async fn recall(
    store: &MemoryStore,
    user: &UserId,
    message: &str,
    (config, retrieval): (&RuntimeConfig, &RetrievalConfig),
    tz: Tz,
) -> Vec<RecalledNote> {
    if config.recall_notes == 0 {
        return Vec::new();
    }
    let mut end = message.len().min(MAX_QUERY_BYTES);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    // More candidates than needed: unconfirmed notes are dropped below.
    let mut query = HybridQuery::new(
        vec![SessionId::user_memory(user)],
        &message[..end],
        config.recall_notes.saturating_mul(2),
    );
    query.weights = Weights::from(retrieval);
    let hits = match store.search(&query).await {
        Ok(hits) => hits,
        Err(e) => {
            tracing::warn!(error = %e, "recall failed; continuing without recalled notes");
            return Vec::new();
        }
    };
    let ids: Vec<NoteId> = hits
        .iter()
        .filter(|h| h.score >= config.recall_min_score)
        .filter_map(|h| h.note_id.clone())
        .collect();
    let allowed = match store.recallable_notes(user, &ids).await {
        Ok(notes) => notes,
        Err(e) => {
            tracing::warn!(error = %e, "recall failed; continuing without recalled notes");
            return Vec::new();
        }
    };
    let mut used = 0u32;
    let mut notes = Vec::new();
    for hit in hits {
        let Some(note_id) = hit.note_id else { continue };
        let Some(shown) = allowed.iter().find(|r| r.note.note_id == note_id) else {
            continue;
        };
        let note = &shown.note;
        // The hit's text is the note as it is now; an edit awaiting confirmation shows the text
        // the user vouched for instead.
        let text = match shown.later_edit_unconfirmed {
            false => clip(&hit.text, config.recall_token_budget),
            true => clip(&note.content, config.recall_token_budget),
        };
        let provenance = note.metadata.provenance.as_ref().map(|p| p.describe());
        let cost = estimate_text(&text)
            + estimate_text(note_id.as_str())
            + provenance.as_deref().map_or(0, estimate_text)
            + match shown.later_edit_unconfirmed {
                true => estimate_text(crate::prompt::LATER_EDIT),
                false => 0,
            }
            + 16;
        if used.saturating_add(cost) > config.recall_token_budget {
            continue;
        }
        used += cost;
        notes.push(RecalledNote {
            note_id,
            text,
            saved: note.updated_at.with_timezone(&tz).fixed_offset(),
            provenance,
            later_edit_unconfirmed: shown.later_edit_unconfirmed,
        });
        if notes.len() == config.recall_notes {
            break;
        }
    }
    tracing::debug!(recalled = notes.len(), "recall");
    notes
}
