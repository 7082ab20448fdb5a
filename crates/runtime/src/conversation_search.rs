//! The user's search of their past conversations (the gateway's `search_conversations`, the
//! TUI's `/search`): one hybrid query over every conversation session of the user, each hit with
//! its session, title, date, speaker and the turns around it — a governed read
//! (`memory_search`) of the caller's surface, like the user's search of their notes.

use memory::HybridQuery;
use tools::MemoryAccess;
use types::{ConversationHitView, NearbyTurnView, ToolExecutionContext, memory_ops};

use crate::RuntimeError;
use crate::notes::{Searched, note_error};
use crate::runtime::AgentRuntime;

/// Most hits one search returns.
pub const MAX_CONVERSATION_HITS: usize = 50;
/// Messages shown on each side of a hit.
const NEIGHBOURS: usize = 2;

impl AgentRuntime {
    /// Messages of the caller's past conversations best matching `query`, at most `limit`
    /// (1 to [`MAX_CONVERSATION_HITS`]), with how its words about time were read.
    pub async fn search_conversations(
        &self,
        ctx: &ToolExecutionContext,
        query: &str,
        limit: usize,
    ) -> Result<Searched<ConversationHitView>, RuntimeError> {
        if limit == 0 || limit > MAX_CONVERSATION_HITS {
            return Err(RuntimeError::InvalidNoteRequest(format!(
                "limit must be between 1 and {MAX_CONVERSATION_HITS}"
            )));
        }
        let query = query.trim();
        if query.is_empty() || query.len() > HybridQuery::MAX_TEXT_BYTES {
            return Err(RuntimeError::InvalidNoteRequest(format!(
                "give a few words to look for (at most {} bytes)",
                HybridQuery::MAX_TEXT_BYTES
            )));
        }
        let store = self.notes_store()?;
        let user = &ctx.user_id;
        // Now and the dates of the hits in the user's time zone: "yesterday" is read in it, and
        // a hit's date says the day the user lived it (in UTC a message said at 08:00 in Tokyo
        // showed the day before).
        let now = tools::query_time(self.timezone);
        let search = |_| async move {
            let sessions = store.conversation_sessions(user).await?;
            let mut q = HybridQuery::new(sessions, query, limit);
            q.weights = memory::Weights::from(&self.retrieval);
            q.time = Some(now);
            let time = store.read_and_settle_time(&mut q).await?;
            if q.sessions.is_empty() {
                return Ok(Searched {
                    hits: Vec::new(),
                    time,
                });
            }
            let found = store.search(&q).await?;
            let wanted: Vec<_> = found
                .iter()
                .map(|hit| (hit.session_id.clone(), hit.event_seq))
                .collect();
            let places = store
                .conversation_contexts(user, &wanted, NEIGHBOURS)
                .await?;
            let mut hits = Vec::new();
            for (hit, place) in found.into_iter().zip(places) {
                let Some(place) = place else { continue };
                hits.push(ConversationHitView {
                    session_id: hit.session_id.as_str().to_owned(),
                    title: place.title,
                    seq: hit.event_seq,
                    speaker: place.speaker,
                    text: hit.text,
                    date: place
                        .at
                        .with_timezone(&now.tz)
                        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    context: place
                        .neighbours
                        .into_iter()
                        .map(|n| NearbyTurnView {
                            speaker: n.speaker,
                            text: n.text,
                        })
                        .collect(),
                });
            }
            Ok(Searched { hits, time })
        };
        self.govern(
            ctx,
            memory_ops::SEARCH,
            MemoryAccess::notes_read(),
            |c| async {
                search(c)
                    .await
                    .map_err(note_error("searching conversations"))
            },
        )
        .await
    }
}
