//! The benches' hooks (the `bench` feature): each leg of hybrid search alone — the approximate and exact vector legs
//! compared (time and recall), and the keyword leg's own time, without the other leg, fusion and
//! grouping around them.

use types::SessionId;

use crate::memory_store::MemoryStore;
use memory_index::vector_index::VectorLeg;

impl MemoryStore {
    /// The `limit` chunks of `sessions` closest to the unit vector `query` (no filters), best
    /// first, as `(chunk id, cosine)`, found with `leg` whatever the store's own leg is. Blocks for
    /// the length of the search: for benches, which time it; searches go through `hybrid_query`.
    pub fn vector_leg_alone(
        &self,
        sessions: &[SessionId],
        query: &[f32],
        limit: usize,
        leg: VectorLeg,
    ) -> Vec<(i64, f32)> {
        let sessions: Vec<String> = sessions.iter().map(ToString::to_string).collect();
        self.inner
            .index
            .search_with(leg, &sessions, query, limit, None)
    }

    /// The `limit` chunks of `sessions` that best match `text` by keywords (no filters), best
    /// first, as `(chunk id, BM25)`. Blocks for the length of the search: for benches, which time
    /// it; searches go through `hybrid_query`.
    pub fn keyword_leg_alone(
        &self,
        sessions: &[SessionId],
        text: &str,
        limit: usize,
    ) -> Vec<(i64, f64)> {
        let sessions: Vec<String> = sessions.iter().map(ToString::to_string).collect();
        let terms = memory_index::terms::query_index_terms(text);
        memory_index::keyword::keyword_leg(
            self.inner.index.keywords(),
            &terms,
            &sessions,
            limit,
            &|_, _| true,
        )
    }

    /// Switches how the vector leg finds its candidates (binary codes are built or dropped now). For
    /// benches; stores opened from config take [`OpenOptions::vector_leg`].
    pub fn set_vector_leg(&self, leg: VectorLeg) {
        self.inner.index.set_leg(leg);
    }

    /// Counts `query` towards the live recall probes as a search does, and runs the probe now
    /// when one is due (benches: their timed searches go through
    /// [`MemoryStore::vector_leg_alone`], which does not count).
    pub fn probe_vector_leg(&self, sessions: &[SessionId], query: &[f32]) {
        let sessions: Vec<String> = sessions.iter().map(ToString::to_string).collect();
        let index = &self.inner.index;
        if index
            .search_counted(index.leg(), &sessions, query, 10, None, true)
            .1
        {
            index.check_recall(&sessions, query);
        }
    }

    /// Runs the live recall probe on each of `queries` now, in order (benches: the first pass's
    /// reach then comes from these queries, whichever searches before happened to be probed).
    pub fn settle_vector_leg(&self, sessions: &[SessionId], queries: &[Vec<f32>]) {
        let sessions: Vec<String> = sessions.iter().map(ToString::to_string).collect();
        for query in queries {
            self.inner.index.check_recall(&sessions, query);
        }
    }

    /// Per session of `sessions` with binary codes: its rows and the share of them its first pass
    /// keeps at least (benches).
    pub fn vector_reach(&self, sessions: &[SessionId]) -> Vec<(usize, f64)> {
        let sessions: Vec<String> = sessions.iter().map(ToString::to_string).collect();
        self.inner.index.reach(&sessions)
    }
}
