//! Dating an event named as the anchor of a time ("before the trip", see
//! [`crate::search::when_events`]): before the main search, a keyword lookup of the event's words
//! in the query's own sessions (the same scope: notes, and past conversations when the query
//! covers them — never another user's memory). The best match that is not the question itself
//! (and, for an event that must match whole, holds every one of its words) dates the event: the
//! date its text states, else when it was saved or said. No match: the query has no time, and its
//! words are searched as words. Deterministic: the keyword leg breaks ties by chunk id.

use memory_index::terms::{query_index_terms, text_terms};
use types::TimeReadView;

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::search::hits::chunk_details_on;
use crate::search::legs::Legs;
use crate::search::query::{HitSource, HybridQuery, QueryFilters, Weights};
use crate::search::when::{TimeRange, event_anchor, event_date, time_range};
use crate::time;

/// Best keyword matches of the event read, to find one that is not the question itself.
const EVENT_CANDIDATES: usize = 8;

impl MemoryStore {
    /// The span of time `query`'s words speak of, read at its `time` in its time zone: a date
    /// ("last week", "before 3 May"), else an event as anchor ("before the trip") dated by the
    /// user's memory in the query's sessions. `None` when the query has no `time`, no time in its
    /// words, or an event no memory matches. The search reads the same span.
    pub async fn read_time(&self, query: &HybridQuery) -> Result<Option<TimeRange>, MemoryError> {
        let mut sessions: Vec<String> = query.sessions.iter().map(|s| s.to_string()).collect();
        sessions.sort();
        sessions.dedup();
        self.time_in(query, &sessions).await
    }

    /// Reads `query`'s time ([`MemoryStore::read_time`]) and hands it to the query
    /// ([`HybridQuery::settle_time`]); the reading as a search door shows it, in the query's
    /// zone.
    pub async fn read_and_settle_time(
        &self,
        query: &mut HybridQuery,
    ) -> Result<Option<TimeReadView>, MemoryError> {
        let Some(at) = query.time else {
            return Ok(None);
        };
        let range = self.read_time(query).await?;
        query.settle_time(range.as_ref());
        Ok(range.map(|r| r.view(at.tz)))
    }

    /// [`MemoryStore::read_time`] over `sessions` (sorted, distinct).
    pub(crate) async fn time_in(
        &self,
        query: &HybridQuery,
        sessions: &[String],
    ) -> Result<Option<TimeRange>, MemoryError> {
        let Some(at) = query.time else {
            return Ok(None);
        };
        if let Some(range) = time_range(&query.text, &at) {
            return Ok(Some(range));
        }
        let Some(anchor) = event_anchor(&query.text) else {
            return Ok(None);
        };
        let terms = query_index_terms(&anchor.event);
        if terms.is_empty() || sessions.is_empty() {
            return Ok(None);
        }
        let legs = Legs {
            sessions,
            searched: self.inner.index.keywords().searched(sessions),
            candidates: EVENT_CANDIDATES,
            vector: None,
            terms: terms.clone(),
            // The event's own words: a related word would date another event.
            related: Vec::new(),
            names: self.inner.index.keywords().names_among(&terms),
        };
        let lookup = HybridQuery {
            weights: Weights {
                vector: 0.0,
                fts: 1.0,
            },
            filters: QueryFilters::default(),
            ..query.clone()
        };
        let found: Vec<i64> = self
            .fused(&lookup, &legs, &lookup.filters)
            .await
            .into_iter()
            .take(EVENT_CANDIDATES)
            .map(|(id, _)| id)
            .collect();
        if found.is_empty() {
            return Ok(None);
        }
        let details = self
            .read_small({
                let ids = found.clone();
                move |conn| async move { chunk_details_on(&conn, &ids).await }
            })
            .await?;
        // A message asking about the event relative to itself ("what did I pack before the
        // trip?") is the question, not the event. An event that must match whole ("after
        // surgery", "at the wedding") is dated only by a memory holding all its words.
        let question = normal(&anchor.phrase);
        let holds_all = |text: &str| {
            let held = text_terms(text).terms;
            terms
                .iter()
                .all(|t| held.binary_search_by(|(h, _)| h.as_str().cmp(t)).is_ok())
        };
        let best = found
            .iter()
            .filter_map(|id| details.get(id))
            .filter(|d| !anchor.whole || holds_all(&d.text))
            .find(|d| !normal(&d.text).contains(&question));
        let Some(best) = best else {
            return Ok(None);
        };
        let saved_at = time::parse(&best.meta.created_at)?;
        let source = HitSource::parse(&best.meta.source);
        let event = event_date(&best.text, source, saved_at, at.tz);
        Ok(anchor.range(event, at.tz))
    }
}

/// Lowercase words, one space apart.
fn normal(text: &str) -> String {
    text.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}
