//! Both legs of one search under one set of filters, fused into one ranked list of chunks and
//! lifted by names and length ([`crate::search::priors`]); and
//! the query's time ([`crate::search::when`]): when its text names a span of time, the chunks
//! created in that span (both legs run again, filtered to it) are ranked ahead by
//! [`TIME_WEIGHT`], the others kept after them (a time in words is often loose: "in July" may be
//! told in early August). A narrow span's few chunks are listed once
//! ([`memory_index::vector_index::VectorIndex::chunks_within`]): the keyword leg checks its
//! candidates against the list, and an empty one ends the pass at once.

use std::collections::HashMap;

use memory_index::fusion::fuse;
use memory_index::keyword::{Allows, keyword_legs_in};
use memory_index::{FacetFilter, Searched};

use crate::memory_store::MemoryStore;
use crate::search::query::{HybridQuery, QueryFilters, Scope};
use crate::search::when::TimeRange;
use crate::time;

/// Share of the fused score given to being in the query's span of time (LoCoMo: 0.15, 0.3 and
/// 0.5 within noise of each other; 1.0, the span's chunks strictly first, loses 0.05).
pub(crate) const TIME_WEIGHT: f64 = 0.15;

/// The vector leg's candidates for the search within the query's span of time, as a share of
/// the whole search's: the span's chunks are ranked ahead by [`TIME_WEIGHT`], so only its best
/// reach the hits, and its gathering and rescoring is the time-aware search's largest extra
/// cost. LoCoMo (development half, both loadings): half gives the same NDCG@10 and recall to
/// the third decimal; a third loses 0.006 on multi-hop questions.
pub(crate) const SPAN_SHARE: usize = 2;

/// One set of filters as the keyword leg checks its candidates.
type Filter<'a> = Box<dyn Fn(&str, i64) -> bool + 'a>;

/// What both legs look for, prepared once per search.
pub(crate) struct Legs<'a> {
    pub sessions: &'a [String],
    /// The same sessions resolved once in the keyword index, for every step that reads it.
    pub searched: Searched,
    pub candidates: usize,
    pub vector: Option<Vec<f32>>,
    pub terms: Vec<String>,
    /// Further keyword terms with a share of their weight: the related words of the query's
    /// (`memory_index::related_words`).
    pub related: Vec<(String, f64)>,
    /// The names the query gives ([`crate::search::priors`]).
    pub names: Vec<String>,
}

impl MemoryStore {
    /// The fused chunks of both legs under `filters` (expired notes hidden), best first.
    pub(crate) async fn fused(
        &self,
        query: &HybridQuery,
        legs: &Legs<'_>,
        filters: &QueryFilters,
    ) -> Vec<(i64, f64)> {
        self.fused_each(query, legs, &[(filters, legs.candidates)])
            .await
            .pop()
            .unwrap_or_default()
    }

    /// [`Self::fused`] under several sets of filters at once, one list per set in their order,
    /// each with the vector leg's candidates for it (the keyword leg takes
    /// [`Legs::candidates`] for each: its walk costs the same whatever it keeps): each leg runs
    /// once for all of them (one walk of the distances and of the postings).
    pub(crate) async fn fused_each(
        &self,
        query: &HybridQuery,
        legs: &Legs<'_>,
        filters: &[(&QueryFilters, usize)],
    ) -> Vec<Vec<(i64, f64)>> {
        let sessions = legs.sessions;
        // Expired notes are hidden before ranking, like any filter; a scope without expired
        // notes keeps the unfiltered fast path.
        let index = &self.inner.index;
        let now = time::now_text();
        let keywords = index.keywords();
        let expired = legs.searched.lock(keywords).view().any_expired(&now);
        let mut out = vec![Vec::new(); filters.len()];
        // Each set's filter and, for a narrow span of time, its few chunks listed once; a set
        // whose span holds nothing of these sessions finds nothing, and is left out of the legs.
        let passes: Vec<(usize, Option<FacetFilter>, Option<Vec<i64>>)> = filters
            .iter()
            .enumerate()
            .filter_map(|(p, &(filters, _))| {
                let scope = Scope {
                    filters: filters.clone(),
                    expired_at: expired.then(|| now.clone()),
                };
                let filter = FacetFilter::of(scope);
                let within = filter
                    .as_ref()
                    .and_then(|f| index.chunks_within(sessions, f));
                (!within.as_ref().is_some_and(Vec::is_empty)).then_some((p, filter, within))
            })
            .collect();
        if passes.is_empty() {
            return out;
        }
        // Polled first: off a multi-threaded runtime a large scan is on the blocking pool before
        // the keyword leg starts here (on one, it runs in place: see `MemoryStore::vector_leg`).
        let vector_leg = async {
            match &legs.vector {
                Some(v) => {
                    let limits = passes.iter().map(|(p, _, _)| filters[*p].1).collect();
                    let filters = passes.iter().map(|(_, f, _)| f.clone()).collect();
                    self.vector_leg(sessions.to_vec(), v.clone(), limits, filters)
                        .await
                }
                None => vec![Vec::new(); passes.len()],
            }
        };
        let keyword_leg = async {
            // The vector index's facets are read (under its pool's lock) only when a set needs
            // them checked one by one.
            let check = passes
                .iter()
                .any(|(_, f, within)| f.is_some() && within.is_none())
                .then(|| index.facet_check());
            let allows: Vec<Filter<'_>> = passes
                .iter()
                .map(|(_, filter, within)| -> Filter<'_> {
                    match (within, filter) {
                        (Some(ids), _) => Box::new(move |_, id| ids.binary_search(&id).is_ok()),
                        (None, Some(f)) => Box::new(|session, id| {
                            check.as_ref().is_some_and(|c| c.allows(session, id, f))
                        }),
                        (None, None) => Box::new(|_, _| true),
                    }
                })
                .collect();
            let allows: Vec<Allows<'_>> = allows.iter().map(|a| &**a).collect();
            keyword_legs_in(
                keywords,
                &legs.searched,
                &legs.terms,
                &legs.related,
                legs.candidates,
                &allows,
            )
        };
        let (vector, keyword) = tokio::join!(vector_leg, keyword_leg);
        for (((p, _, _), vector), keyword) in passes.iter().zip(vector).zip(keyword) {
            tracing::debug!(
                sessions = sessions.len(),
                vector = vector.len(),
                keyword = keyword.len(),
                "hybrid query"
            );
            let fused = fuse(query.fusion, query.weights, &vector, &keyword);
            out[*p] = self.lifted(&legs.searched, &legs.names, fused);
        }
        out
    }
}

/// `filters` narrowed to `range`; `None` when nothing can be in both.
pub(crate) fn within(filters: &QueryFilters, range: &TimeRange) -> Option<QueryFilters> {
    let after = match (filters.created_after, range.start) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let before = match (filters.created_before, range.end) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if let (Some(a), Some(b)) = (after, before)
        && a >= b
    {
        return None;
    }
    Some(QueryFilters {
        created_after: after,
        created_before: before,
        ..filters.clone()
    })
}

/// `all` re-ranked: chunks of `inside` (the same search within the query's time) first by
/// [`TIME_WEIGHT`], with their score within it; scores stay in `0..=1`.
pub(crate) fn time_ranked(all: Vec<(i64, f64)>, inside: Vec<(i64, f64)>) -> Vec<(i64, f64)> {
    let w = TIME_WEIGHT;
    let inside: HashMap<i64, f64> = inside.into_iter().collect();
    let mut out: Vec<(i64, f64)> = all
        .into_iter()
        .filter(|(id, _)| !inside.contains_key(id))
        .map(|(id, s)| (id, s * (1.0 - w)))
        .chain(inside.iter().map(|(id, s)| (*id, s * (1.0 - w) + w)))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_in_the_span_come_first_and_scores_stay_in_range() {
        let all = vec![(1, 0.9), (2, 0.5), (3, 0.4)];
        let inside = vec![(3, 0.5), (4, 1.0)];
        let got = time_ranked(all, inside);
        let ids: Vec<i64> = got.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [4, 1, 3, 2]);
        assert!(got.iter().all(|(_, s)| (0.0..=1.0).contains(s)), "{got:?}");
    }

    #[test]
    fn the_span_narrows_the_filters_and_an_empty_one_is_none() {
        let t = |d: u32| chrono::DateTime::from_timestamp(i64::from(d) * 86_400, 0);
        let span = |a, b| TimeRange {
            start: t(a),
            end: t(b),
            phrase: "then".into(),
            event: None,
        };
        let asked = QueryFilters {
            created_after: t(10),
            tags_any: vec!["trip".into()],
            ..QueryFilters::default()
        };
        let got = within(&asked, &span(5, 20)).expect("overlap");
        assert_eq!((got.created_after, got.created_before), (t(10), t(20)));
        assert_eq!(got.tags_any, ["trip"]);
        assert_eq!(within(&asked, &span(1, 10)), None);
        let open = TimeRange {
            start: None,
            ..span(0, 30)
        };
        let got = within(&QueryFilters::default(), &open).expect("open span");
        assert_eq!((got.created_after, got.created_before), (None, t(30)));
    }
}
