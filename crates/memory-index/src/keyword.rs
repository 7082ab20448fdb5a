//! The keyword leg of hybrid search: BM25 over the in-memory postings of the searched sessions
//! (see [`crate::keyword_index`]), with a bounded amount of work per query.
//!
//! Cost is the number of postings scored, so the leg plans which terms to score (a
//! [`KeywordPlan`]): the rarest terms, `OR`ed, while their postings add up to at most
//! [`POSTING_BUDGET`]; when even the rarest term has more (every term is common in a large store),
//! the chunks holding *all* the terms (a sorted-list intersection, which costs the shortest list),
//! falling back to the rarest term alone when no chunk has them all. Terms found nowhere are
//! dropped. In a store whose query terms fit the budget this is plain BM25 over every match.
//!
//! Statistics (chunk count, average length, document frequency) are those of the searched
//! sessions. The scope's filters are applied to every candidate that could enter the top `limit`,
//! before it does: the result is the best `limit` chunks among those the filters allow.

use rustc_hash::FxHashMap;

use crate::keyword_index::searched::PoolPart;
use crate::keyword_index::{KeywordIndex, Posting, Searched, SessionPostings, View};
use crate::topk::TopK;

/// Postings the `OR` plan may score: ~50 ns each with the merge and the weights, so the plan's
/// work stays near 0.25 ms. Measured at 100k notes: 20,000 put the leg's p95 at ~1 ms. At 10k
/// notes every query term of the bench fits (plain BM25 over all matches).
const POSTING_BUDGET: usize = 5_000;
/// Postings the related terms of a query may add to an `Any` plan (within [`POSTING_BUDGET`]):
/// they weigh a fraction of a query term, so they get a fraction of the work. Measured at 10k
/// notes: the whole remaining budget cost the keyword-only search 0.13–0.26 ms at p50.
const RELATED_BUDGET: usize = POSTING_BUDGET / 5;
/// BM25's term-frequency saturation (the usual value).
const K1: f64 = 1.2;
/// BM25's length normalisation: low, where 0.75 is usual for long documents. Chunks are short
/// and bounded (one note, one message, or a chunk of a long note), and there a longer text holds
/// more of what was said rather than more padding; length still breaks ties. On LoCoMo's
/// development half, 0.75 → 0.1 raised hybrid NDCG@10 by 0.020 ± 0.005 (docs/benchmarks.md).
const B: f64 = 0.1;

/// A filter of the keyword leg's candidates: whether chunk `id` of `session` may be returned.
pub type Allows<'a> = &'a dyn Fn(&str, i64) -> bool;

/// Which terms to score.
#[derive(Debug, PartialEq)]
pub enum KeywordPlan<'t> {
    /// Chunks holding any of these.
    Any(Vec<&'t str>),
    /// Chunks holding all of these; if there are none, chunks holding `fallback`.
    All {
        terms: Vec<&'t str>,
        fallback: &'t str,
    },
}

/// (chunk id, relevance ≥ 0) best first, at most `limit`, each allowed by `allows(session, chunk
/// id)`. `terms` are index terms ([`crate::terms::query_index_terms`]).
pub fn keyword_leg(
    index: &KeywordIndex,
    terms: &[String],
    sessions: &[String],
    limit: usize,
    allows: &dyn Fn(&str, i64) -> bool,
) -> Vec<(i64, f64)> {
    keyword_leg_in(index, &index.searched(sessions), terms, limit, allows)
}

/// [`keyword_leg`] over sessions already resolved for the search.
pub fn keyword_leg_in(
    index: &KeywordIndex,
    searched: &Searched,
    terms: &[String],
    limit: usize,
    allows: &dyn Fn(&str, i64) -> bool,
) -> Vec<(i64, f64)> {
    keyword_legs_in(index, searched, terms, &[], limit, &[allows])
        .pop()
        .unwrap_or_default()
}

/// [`keyword_leg_in`] under several filters at once, one list per filter in their order: the
/// postings are walked and scored once, each candidate offered to every filter's top `limit`.
///
/// `related` are further terms with a share of their idf each
/// ([`crate::related_words::related_terms`]): they join an `Any` plan, rarest first, within a
/// fifth of the budget and what the query's terms leave of it, and never an `All` plan (a chunk
/// need not hold them); when no query term is found anywhere they are the plan.
pub fn keyword_legs_in(
    index: &KeywordIndex,
    searched: &Searched,
    terms: &[String],
    related: &[(String, f64)],
    limit: usize,
    allows: &[Allows<'_>],
) -> Vec<Vec<(i64, f64)>> {
    let nothing = || vec![Vec::new(); allows.len()];
    if (terms.is_empty() && related.is_empty()) || limit == 0 {
        return nothing();
    }
    let ids = index.term_ids(terms.iter().map(String::as_str));
    let related: Vec<(Option<u32>, f64)> = index
        .term_ids(related.iter().map(|(t, _)| t.as_str()))
        .into_iter()
        .zip(related.iter().map(|(_, share)| *share))
        .collect();
    let locked = searched.lock(index);
    let view = locked.view();
    let docs = view.docs();
    if docs == 0 {
        return nothing();
    }
    let stats = Stats {
        docs: docs as f64,
        avg_len: (view.total_len() as f64 / docs as f64).max(1.0),
    };
    let (counted, weights) = weigh(terms, ids, &view, stats);
    let plan = plan_from_counts(counted).unwrap_or(KeywordPlan::Any(Vec::new()));
    let resolve = |chosen: &[&str]| -> Vec<(u32, f64)> {
        chosen
            .iter()
            .filter_map(|t| weights.get(t).map(|&(id, idf, _)| (id, idf)))
            .collect()
    };
    // Ties at the floor go to the smaller chunk id, whatever order the chunks come in.
    let mut tops: Vec<TopK<i64>> = allows.iter().map(|_| TopK::new(limit)).collect();
    let mut offer = |session: &str, chunk_id: i64, score: f64| {
        for (top, allows) in tops.iter_mut().zip(allows) {
            if top.floor().is_none_or(|floor| score as f32 >= floor) && allows(session, chunk_id) {
                top.offer_ordered(score as f32, chunk_id);
            }
        }
    };
    let parts = parts(&view);
    match plan {
        KeywordPlan::Any(chosen) => {
            let spent = chosen
                .iter()
                .filter_map(|t| weights.get(t))
                .map(|w| w.2)
                .sum();
            let mut chosen = resolve(&chosen);
            chosen.extend(within_budget(&view, stats, &chosen, spent, &related));
            if chosen.is_empty() {
                return nothing();
            }
            for part in &parts {
                any_of(part, &chosen, stats, &mut offer);
            }
        }
        KeywordPlan::All { terms, fallback } => {
            let (terms, fallback) = (resolve(&terms), resolve(&[fallback]));
            let mut found = false;
            for part in &parts {
                all_of(part, &terms, stats, &mut |session, id, s| {
                    found = true;
                    offer(session, id, s);
                });
            }
            if !found {
                for part in &parts {
                    any_of(part, &fallback, stats, &mut offer);
                }
            }
        }
    }
    tops.into_iter()
        .map(|top| {
            let mut out: Vec<(i64, f64)> = top
                .into_sorted()
                .into_iter()
                .map(|(id, s)| (id, f64::from(s)))
                .collect();
            // Equal scores: the larger chunk id first (the order this leg has always returned).
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
            out
        })
        .collect()
}

/// The related terms an `Any` plan of `chosen` (holding `spent` postings) can still score (id,
/// weighted idf): found in the searched sessions, rarest first, while their postings add up to at
/// most [`RELATED_BUDGET`] and those of all the plan's terms to at most [`POSTING_BUDGET`].
fn within_budget(
    view: &View<'_>,
    stats: Stats,
    chosen: &[(u32, f64)],
    spent: usize,
    related: &[(Option<u32>, f64)],
) -> Vec<(u32, f64)> {
    if related.is_empty() {
        return Vec::new();
    }
    let mut total = spent;
    let mut found: Vec<(usize, u32, f64)> = related
        .iter()
        .filter_map(|&(id, share)| {
            let id = id?;
            let df = view.df(id);
            (df > 0 && chosen.iter().all(|&(c, _)| c != id)).then_some((df, id, share))
        })
        .collect();
    found.sort_by_key(|&(df, id, _)| (df, id));
    let mut out = Vec::new();
    let mut added = 0;
    for (df, id, share) in found {
        if total + df > POSTING_BUDGET || added + df > RELATED_BUDGET {
            break;
        }
        total += df;
        added += df;
        out.push((id, share * stats.idf(df)));
    }
    out
}

/// Each term's document frequency in the searched sessions (for the plan), and its id, idf and
/// document frequency by term. Terms no chunk holds are dropped here; the others are known by their ids from now on.
#[allow(
    clippy::type_complexity,
    reason = "the two views of one count, built together for one caller"
)]
fn weigh<'t>(
    terms: &'t [String],
    ids: Vec<Option<u32>>,
    view: &View<'_>,
    stats: Stats,
) -> (Vec<(usize, &'t str)>, FxHashMap<&'t str, (u32, f64, usize)>) {
    let known: Vec<(&str, u32)> = terms
        .iter()
        .zip(ids)
        .filter_map(|(t, id)| Some((t.as_str(), id?)))
        .collect();
    let counted: Vec<(usize, &str)> = known.iter().map(|&(t, id)| (view.df(id), t)).collect();
    let weights = known
        .iter()
        .zip(&counted)
        .map(|(&(t, id), &(df, _))| (t, (id, stats.idf(df), df)))
        .collect();
    (counted, weights)
}

#[derive(Debug, Clone, Copy)]
struct Stats {
    docs: f64,
    avg_len: f64,
}

impl Stats {
    /// Never negative, so that a term found in most chunks still adds a little.
    fn idf(self, df: usize) -> f64 {
        let df = df as f64;
        (1.0 + (self.docs - df + 0.5) / (df + 0.5)).ln()
    }

    fn weight(self, idf: f64, count: u16, len: u32) -> f64 {
        let tf = f64::from(count);
        let norm = K1 * (1.0 - B + B * f64::from(len) / self.avg_len);
        idf * tf * (K1 + 1.0) / (tf + norm)
    }
}

/// Lists to score: the pool's (only the searched sessions' slots) or one session's own.
enum Part<'v> {
    Pool(&'v PoolPart<'v>),
    Own(&'v str, &'v SessionPostings),
}

fn parts<'v>(view: &'v View<'_>) -> Vec<Part<'v>> {
    let own = view.own.iter().map(|(name, g)| Part::Own(name, g));
    std::iter::once(Part::Pool(view.pool)).chain(own).collect()
}

impl Part<'_> {
    fn list(&self, id: u32) -> Option<&[Posting]> {
        match self {
            Self::Pool(p) => p.list(id),
            Self::Own(_, g) => Some(g.postings(id)?.list()),
        }
    }

    /// The chunk id, length and session of a searched slot.
    fn doc(&self, slot: u32) -> Option<(i64, u32, &str)> {
        match self {
            Self::Pool(p) => p.doc(slot),
            Self::Own(name, g) => {
                let (id, len) = g.doc(slot);
                Some((id, len, name))
            }
        }
    }
}

/// The emitted chunks: (session, chunk id, score).
type Emit<'e> = dyn FnMut(&str, i64, f64) + 'e;

/// Scores every searched chunk of `part` holding any of `terms` (term ids with their idf).
fn any_of(part: &Part<'_>, terms: &[(u32, f64)], stats: Stats, emit: &mut Emit<'_>) {
    let lists: Vec<(&[Posting], f64)> = terms
        .iter()
        .filter_map(|&(id, idf)| Some((part.list(id)?, idf)))
        .collect();
    if let [(list, idf)] = lists.as_slice() {
        // One term: no accumulation needed.
        for p in *list {
            if let Some((chunk_id, len, session)) = part.doc(p.slot) {
                emit(session, chunk_id, stats.weight(*idf, p.count, len));
            }
        }
        return;
    }
    // The lists are sorted by slot: merge them, each slot's weights summed as it passes (in
    // the terms' order).
    let mut cursors = vec![0usize; lists.len()];
    loop {
        let next = lists
            .iter()
            .zip(&cursors)
            .filter_map(|((list, _), &at)| list.get(at).map(|p| p.slot))
            .min();
        let Some(slot) = next else {
            return;
        };
        let doc = part.doc(slot);
        let mut score = 0.0;
        for ((list, idf), at) in lists.iter().zip(cursors.iter_mut()) {
            if let Some(p) = list.get(*at).filter(|p| p.slot == slot) {
                if let Some((_, len, _)) = doc {
                    score += stats.weight(*idf, p.count, len);
                }
                *at += 1;
            }
        }
        if let Some((chunk_id, _, session)) = doc {
            emit(session, chunk_id, score);
        }
    }
}

/// Scores every searched chunk of `part` holding all of `terms`: walks the shortest list; each
/// other list keeps a cursor that only moves forward, by galloping (so the walk costs about the
/// shortest list's length per term, not a binary search over a whole list per posting). The
/// weights are summed in the terms' order.
fn all_of(part: &Part<'_>, terms: &[(u32, f64)], stats: Stats, emit: &mut Emit<'_>) {
    let mut lists = Vec::with_capacity(terms.len());
    for (at, &(id, _)) in terms.iter().enumerate() {
        match part.list(id) {
            Some(list) => lists.push((list, at)),
            // A term missing here: no chunk here holds them all.
            None => return,
        }
    }
    lists.sort_by_key(|(l, _)| l.len());
    let Some(((shortest, first_at), rest)) = lists.split_first() else {
        return;
    };
    let mut cursors = vec![0usize; rest.len()];
    let mut counts = vec![0u16; terms.len()];
    'slots: for first in *shortest {
        counts[*first_at] = first.count;
        for ((list, at), cursor) in rest.iter().zip(cursors.iter_mut()) {
            *cursor = gallop(list, *cursor, first.slot);
            match list.get(*cursor) {
                Some(p) if p.slot == first.slot => counts[*at] = p.count,
                Some(_) => continue 'slots,
                // This list is used up: no later slot can be in all of them.
                None => return,
            }
        }
        let Some((chunk_id, len, session)) = part.doc(first.slot) else {
            continue;
        };
        let mut score = 0.0;
        for (&(_, idf), &c) in terms.iter().zip(&counts) {
            score += stats.weight(idf, c, len);
        }
        emit(session, chunk_id, score);
    }
}

/// The first position at or after `from` whose slot is at least `target` (`slots` sorted).
fn gallop(slots: &[Posting], from: usize, target: u32) -> usize {
    let mut step = 1;
    let mut hi = from;
    while hi < slots.len() && slots[hi].slot < target {
        hi = from + step;
        step *= 2;
    }
    let lo = from + step / 4;
    let hi = hi.min(slots.len());
    let lo = lo.min(hi);
    lo + slots[lo..hi].partition_point(|p| p.slot < target)
}

/// The plan once the document frequency of every term is known (see the module's comment).
pub fn plan_from_counts(mut counted: Vec<(usize, &str)>) -> Option<KeywordPlan<'_>> {
    counted.retain(|(n, _)| *n > 0);
    // Stable: equally rare terms keep the query's order.
    counted.sort_by_key(|(n, _)| *n);
    let mut total = 0;
    let mut chosen = Vec::new();
    for (n, term) in &counted {
        if total + n > POSTING_BUDGET {
            break;
        }
        total += n;
        chosen.push(*term);
    }
    if !chosen.is_empty() {
        return Some(KeywordPlan::Any(chosen));
    }
    let rarest = counted.first()?.1;
    if counted.len() == 1 {
        return Some(KeywordPlan::Any(vec![rarest]));
    }
    Some(KeywordPlan::All {
        terms: counted.iter().map(|(_, t)| *t).collect(),
        fallback: rarest,
    })
}

#[cfg(test)]
#[path = "keyword_tests.rs"]
mod tests;
