//! Two small lifts of the fused score that neither leg gives: a chunk that names whom the query
//! names, and a chunk that says more.
//!
//! - **Names.** A query term the user's own text only ever writes as a name (capitalised inside
//!   a sentence, never in lowercase: [`memory_index::KeywordIndex::names_among`]) is a name,
//!   however the query writes it ("what did caroline say" as "What did Caroline say?"): the
//!   question is about that person. The keyword leg
//!   rates such a name low (IDF) exactly when the memory speaks of them often, and the vector leg
//!   barely sees one word among twenty; a chunk holding every name of the query gets
//!   [`NAME_LIFT`].
//! - **Length.** A chunk that says more is likelier to hold what was asked (on LoCoMo the turns
//!   that answer have a median of 35 words, all turns 23); BM25's low `b` already says so in the
//!   keyword leg, the vector leg (a mean of token vectors) cannot. A chunk gets [`LENGTH_LIFT`]
//!   times its length over twice the searched chunks' average, at most 1.
//!
//! Scores stay in `0..=1` (divided by one plus both lifts). The cost is a lookup per fused chunk
//! in the keyword index (its slot in the pool, or in the few sessions with lists of their own;
//! then one binary search per name): no scan, no session asked by name.

use memory_index::Searched;

use crate::memory_store::MemoryStore;

/// The lift of a chunk holding every name of the query (LoCoMo, with [`LENGTH_LIFT`]: multi-hop
/// +0.024 ± 0.007; 0.15 no better than 0.05).
pub(crate) const NAME_LIFT: f64 = 0.05;
/// The lift of a chunk at least twice as long as the average (0.15 loses 0.02 overall).
pub(crate) const LENGTH_LIFT: f64 = 0.05;

impl MemoryStore {
    /// `fused` (best first) lifted by the names the query gives and the chunks' lengths, best
    /// first again.
    pub(crate) fn lifted(
        &self,
        searched: &Searched,
        names: &[String],
        fused: Vec<(i64, f64)>,
    ) -> Vec<(i64, f64)> {
        if fused.is_empty() {
            return fused;
        }
        let keywords = self.inner.index.keywords();
        // A name no chunk holds: no chunk is named by all of them.
        let name_ids: Option<Vec<u32>> = keywords
            .term_ids(names.iter().map(String::as_str))
            .into_iter()
            .collect();
        let locked = searched.lock(keywords);
        let view = locked.view();
        let docs = view.docs();
        let total = view.total_len();
        let long = 2.0 * (total as f64 / docs.max(1) as f64).max(1.0);
        let name_lift = if names.is_empty() { 0.0 } else { NAME_LIFT };
        let whole = 1.0 + LENGTH_LIFT + name_lift;
        let mut out: Vec<(i64, f64)> = fused
            .into_iter()
            .map(|(id, s)| {
                let Some(len) = view.chunk_len(id).map(f64::from) else {
                    return (id, s / whole);
                };
                let named = !names.is_empty()
                    && name_ids
                        .as_ref()
                        .is_some_and(|ids| ids.iter().all(|&n| view.holds(id, n)));
                let lift =
                    LENGTH_LIFT * (len / long).min(1.0) + if named { name_lift } else { 0.0 };
                (id, (s + lift) / whole)
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}
