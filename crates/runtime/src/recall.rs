//! Recall: the user's saved notes most relevant to the current message, put into the context so the
//! model knows them without searching.
//!
//! Best effort: a failed search is logged and the turn goes on without recalled notes.

use memory::{HybridQuery, MemoryStore, Weights};
use types::{NoteId, RetrievalConfig, RuntimeConfig, SessionId, UserId};

use crate::budget::{clip, estimate_text};

/// Longest query text sent to the search, in bytes (long messages are cut).
const MAX_QUERY_BYTES: usize = 2000;

/// A saved note recalled for this turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RecalledNote {
    pub(crate) note_id: NoteId,
    pub(crate) text: String,
}

/// Up to `runtime.recall_notes` notes scoring at least `recall_min_score`, best first, within
/// `recall_token_budget` (a note that does not fit is skipped, a later shorter one may still fit).
pub(crate) async fn recall(
    store: &MemoryStore,
    user: &UserId,
    message: &str,
    config: &RuntimeConfig,
    retrieval: &RetrievalConfig,
) -> Vec<RecalledNote> {
    if config.recall_notes == 0 {
        return Vec::new();
    }
    let mut end = message.len().min(MAX_QUERY_BYTES);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let mut query = HybridQuery::new(
        vec![SessionId::user_memory(user)],
        &message[..end],
        config.recall_notes,
    );
    query.weights = Weights::from(retrieval);
    let hits = match store.hybrid_query(&query).await {
        Ok(hits) => hits,
        Err(e) => {
            tracing::warn!(error = %e, "recall failed; continuing without recalled notes");
            return Vec::new();
        }
    };
    let mut used = 0u32;
    let mut notes = Vec::new();
    for hit in hits {
        let Some(note_id) = hit.note_id else { continue };
        if hit.score < config.recall_min_score {
            continue;
        }
        let text = clip(&hit.text, config.recall_token_budget);
        let cost = estimate_text(&text) + estimate_text(note_id.as_str()) + 4;
        if used.saturating_add(cost) > config.recall_token_budget {
            continue;
        }
        used += cost;
        notes.push(RecalledNote { note_id, text });
    }
    tracing::debug!(recalled = notes.len(), "recall");
    notes
}
