//! The in-memory keyword index that serves the keyword leg of hybrid search.
//!
//! One dictionary for the whole index (term → id). A session of [`APPROX_MIN_ROWS`] chunks or
//! more (a large notes session) has one posting list per term it holds (the chunks holding it,
//! as slots sorted ascending, with the term's count in each), keyed by the term's id, and per
//! slot the chunk's id, length and term ids (so that a removal knows which lists to leave). The
//! smaller sessions (a user's conversations) share one pool of lists, one per term, whose slots
//! carry their session's number (`keyword_pool.rs`): a search of hundreds of them looks each
//! term up once. A search resolves its sessions once (`keyword_searched.rs`). The index is kept
//! by the same calls as the vector index ([`crate::vector_index::VectorIndex::apply`]: the
//! writer after each commit, the catch-up from the change log, the load at open), from the chunk
//! text each change carries, so both legs always see the same chunks. Scoring is in
//! [`crate::keyword`].
//!
//! Memory: a posting is 8 bytes (slot `u32`, count `u16`); a list of one posting is held
//! inline, with no allocation. A pooled chunk adds its id, length and session number (16 bytes)
//! and an entry in the pool's id → slot map; a chunk of a large session its id, length and term
//! ids. Terms are never dropped from the dictionary (a vocabulary is small next to its
//! postings); a session's emptied lists are, and freed slots are reused (the pool's once purged).
//!
//! Locks: the dictionary, the map of large sessions and the pool's handle share one lock, taken
//! before the pool's own lock or a session's (never the other way round), none held across
//! `.await`, so a search resolves its terms and its sessions against the same generation.

use std::collections::{BTreeMap, HashMap};

use rustc_hash::FxHashMap;
use std::sync::{Arc, RwLock};

use crate::terms::TermBag;
use crate::vector_index::{read, write};
use crate::vector_leg::APPROX_MIN_ROWS;
use lists::Lists;
pub use pool::KeywordPool;
pub use searched::{Locked, Searched, View};

/// One chunk holding a term, and the term's count in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Posting {
    pub slot: u32,
    pub count: u16,
}

/// One term's postings in one session, sorted by slot; never empty.
#[derive(Debug)]
pub enum Postings {
    /// A single chunk holds the term: inline, no allocation.
    One([Posting; 1]),
    Many(Vec<Posting>),
}

impl Postings {
    pub fn list(&self) -> &[Posting] {
        match self {
            Self::One(one) => one,
            Self::Many(many) => many,
        }
    }

    pub fn len(&self) -> usize {
        self.list().len()
    }

    /// Whether chunk `slot` holds the term.
    pub fn holds(&self, slot: u32) -> bool {
        self.list().binary_search_by_key(&slot, |p| p.slot).is_ok()
    }

    fn insert(&mut self, posting: Posting) {
        let at = self.list().binary_search_by_key(&posting.slot, |p| p.slot);
        match (self, at) {
            (Self::One(one), Ok(_)) => one[0] = posting,
            (Self::Many(many), Ok(at)) => many[at] = posting,
            (this @ Self::One(_), Err(at)) => {
                let mut many = this.list().to_vec();
                many.insert(at, posting);
                *this = Self::Many(many);
            }
            (Self::Many(many), Err(at)) => many.insert(at, posting),
        }
    }

    /// Removes chunk `slot`; false when no posting is left.
    fn remove(&mut self, slot: u32) -> bool {
        let Self::Many(many) = self else {
            return self.list()[0].slot != slot;
        };
        if let Ok(at) = many.binary_search_by_key(&slot, |p| p.slot) {
            many.remove(at);
        }
        match many.as_slice() {
            [] => false,
            &[one] => {
                *self = Self::One([one]);
                true
            }
            _ => true,
        }
    }

    /// A list read back from a file: sorted, not empty (checked by the caller).
    pub(crate) fn from_sorted(list: &[Posting]) -> Self {
        match list {
            &[one] => Self::One([one]),
            _ => Self::Many(list.to_vec()),
        }
    }
}

#[derive(Debug, Default)]
struct Doc {
    chunk_id: i64,
    len: u32,
    /// The chunk's term ids, so that a removal knows which lists to leave; kept only once the
    /// session's lists are a hash map (a large session). A small session's removal looks in each
    /// of its at most 4,096 lists instead (tens of microseconds), which saves every message of a
    /// conversation its own allocation (~64 bytes).
    terms: Box<[u32]>,
    expires_at: Option<Box<str>>,
}

/// One session's postings.
#[derive(Debug, Default)]
pub struct SessionPostings {
    /// Term id (in the index's dictionary) → the chunks holding it.
    postings: Lists,
    docs: Vec<Doc>,
    slot_of: FxHashMap<i64, u32>,
    free: Vec<u32>,
    /// Sum of the live chunks' lengths.
    total_len: u64,
    /// Expiry times (as stored text) of the live chunks that have one, with their counts.
    expiries: BTreeMap<Box<str>, u32>,
}

impl SessionPostings {
    /// Indexes a chunk whose terms were resolved to ids (`(id, count)`).
    fn upsert(&mut self, chunk_id: i64, len: u32, terms: &[(u32, u16)], expires_at: Option<&str>) {
        self.remove(chunk_id);
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                let Ok(slot) = u32::try_from(self.docs.len()) else {
                    tracing::warn!(chunk_id, "keyword index full; chunk not indexed");
                    return;
                };
                self.docs.push(Doc::default());
                slot
            }
        };
        let sorted = self.postings.is_sorted();
        for &(id, count) in terms {
            let posting = Posting { slot, count };
            self.postings.insert(id, posting);
        }
        self.docs[slot as usize] = Doc {
            chunk_id,
            len,
            // A small session finds a chunk's lists by looking in each (see `Doc::terms`).
            terms: match self.postings.is_sorted() {
                true => Box::default(),
                false => terms.iter().map(|&(id, _)| id).collect(),
            },
            expires_at: expires_at.map(Into::into),
        };
        if sorted && !self.postings.is_sorted() {
            self.fill_doc_terms();
        }
        self.slot_of.insert(chunk_id, slot);
        self.total_len += u64::from(len);
        if let Some(at) = expires_at {
            *self.expiries.entry(at.into()).or_insert(0) += 1;
        }
    }

    fn remove(&mut self, chunk_id: i64) {
        let Some(slot) = self.slot_of.remove(&chunk_id) else {
            return;
        };
        let doc = std::mem::take(&mut self.docs[slot as usize]);
        match self.postings.is_sorted() {
            true => self.postings.remove_everywhere(slot),
            false => {
                for id in doc.terms.iter() {
                    self.postings.remove(*id, slot);
                }
            }
        }
        self.total_len -= u64::from(doc.len);
        if let Some(at) = doc.expires_at
            && let Some(n) = self.expiries.get_mut(&at)
        {
            *n -= 1;
            if *n == 0 {
                self.expiries.remove(&at);
            }
        }
        self.free.push(slot);
    }

    /// Gives every live chunk its term ids, from the lists (when they leave the sorted vector).
    fn fill_doc_terms(&mut self) {
        let mut terms: Vec<Vec<u32>> = vec![Vec::new(); self.docs.len()];
        for (id, list) in self.postings.sorted() {
            for p in list.list() {
                if let Some(t) = terms.get_mut(p.slot as usize) {
                    t.push(id);
                }
            }
        }
        for (doc, t) in self.docs.iter_mut().zip(terms) {
            doc.terms = t.into_boxed_slice();
        }
    }

    /// Live chunks.
    pub fn docs(&self) -> usize {
        self.slot_of.len()
    }

    pub fn total_len(&self) -> u64 {
        self.total_len
    }

    /// The chunks holding term `id` (see [`KeywordIndex::resolve`]).
    pub fn postings(&self, id: u32) -> Option<&Postings> {
        self.postings.get(id)
    }

    /// The chunk id and length of a live slot.
    pub fn doc(&self, slot: u32) -> (i64, u32) {
        self.docs
            .get(slot as usize)
            .map_or((0, 0), |d| (d.chunk_id, d.len))
    }

    /// The length in words of a live chunk.
    pub fn chunk_len(&self, chunk_id: i64) -> Option<u32> {
        let slot = *self.slot_of.get(&chunk_id)?;
        Some(self.docs.get(slot as usize)?.len)
    }

    /// Whether a live chunk holds term `id`: one binary search of its postings.
    pub fn holds(&self, chunk_id: i64, id: u32) -> bool {
        let Some(&slot) = self.slot_of.get(&chunk_id) else {
            return false;
        };
        self.postings(id).is_some_and(|p| p.holds(slot))
    }

    /// Whether some chunk expires at or before `now` (stored text, compared as text).
    fn any_expired(&self, now: &str) -> bool {
        self.expiries
            .first_key_value()
            .is_some_and(|(at, _)| &**at <= now)
    }
}

/// The dictionary, the sessions with lists of their own and the pool of the others (one lock:
/// see the module's comment; taken before the pool's).
#[derive(Debug, Default)]
struct Shared {
    terms: FxHashMap<Box<str>, u32>,
    /// How each term (by id) has been written in any chunk indexed since the dictionary was
    /// made ([`crate::terms::CAPITAL`], [`crate::terms::LOWER`]): a term only ever capitalised
    /// inside a sentence is a name, however a query writes it. Marks are never taken back (a
    /// term's history is small next to its postings, like the dictionary).
    cases: Vec<u8>,
    sessions: HashMap<String, Arc<RwLock<SessionPostings>>>,
    pool: Arc<RwLock<KeywordPool>>,
    /// Every session gets lists of its own (the unpooled form, which tests compare the pool to).
    own_only: bool,
}

/// Every session's postings.
#[derive(Debug, Default)]
pub struct KeywordIndex {
    shared: RwLock<Shared>,
}

/// Where a session's chunks are indexed.
enum Home {
    Own(Arc<RwLock<SessionPostings>>),
    Pool(Arc<RwLock<KeywordPool>>),
}

impl KeywordIndex {
    pub fn upsert(&self, session: &str, chunk_id: i64, bag: &TermBag, expires_at: Option<&str>) {
        let (terms, home) = self.intern(session, bag);
        match home {
            Home::Own(postings) => write(&postings).upsert(chunk_id, bag.len, &terms, expires_at),
            Home::Pool(pool) => {
                let full = {
                    let mut pool = write(&pool);
                    pool.upsert(session, chunk_id, bag.len, &terms, expires_at)
                        .is_some_and(|n| pool.docs_of(n) >= APPROX_MIN_ROWS)
                };
                if full {
                    self.move_out(session);
                }
            }
        }
    }

    pub fn remove(&self, session: &str, chunk_id: i64) {
        let home = {
            let shared = read(&self.shared);
            match shared.sessions.get(session) {
                Some(p) => Home::Own(Arc::clone(p)),
                None => Home::Pool(Arc::clone(&shared.pool)),
            }
        };
        match home {
            Home::Own(postings) => write(&postings).remove(chunk_id),
            Home::Pool(pool) => write(&pool).remove(session, chunk_id),
        }
    }

    /// Moves a pooled session that reached [`APPROX_MIN_ROWS`] chunks to lists of its own.
    fn move_out(&self, session: &str) {
        let mut shared = write(&self.shared);
        let pool = Arc::clone(&shared.pool);
        let mut pool = write(&pool);
        let Some(n) = pool.number(session) else {
            return;
        };
        if pool.docs_of(n) < APPROX_MIN_ROWS {
            return;
        }
        let own = pool.take(n);
        shared
            .sessions
            .insert(session.to_owned(), Arc::new(RwLock::new(own)));
    }

    /// `bag`'s terms as ids (new ones added to the dictionary) and where `session`'s chunks go
    /// (the pool unless it has lists of its own): one read lock when the terms are known, else
    /// one write lock.
    fn intern(&self, session: &str, bag: &TermBag) -> (Vec<(u32, u16)>, Home) {
        let home = |shared: &Shared| match shared.sessions.get(session) {
            Some(p) => Home::Own(Arc::clone(p)),
            None => Home::Pool(Arc::clone(&shared.pool)),
        };
        {
            let shared = read(&self.shared);
            let ids: Option<Vec<(u32, u16)>> = bag
                .terms
                .iter()
                .map(|(t, n)| Some((*shared.terms.get(t.as_str())?, *n)))
                .collect();
            if let Some(ids) = ids
                && (!shared.own_only || shared.sessions.contains_key(session))
                && marked(&shared.cases, &ids, &bag.cases)
            {
                return (ids, home(&shared));
            }
        }
        let mut shared = write(&self.shared);
        let shared = &mut *shared;
        let ids: Vec<(u32, u16)> = bag
            .terms
            .iter()
            .map(|(t, n)| {
                let next = u32::try_from(shared.terms.len()).unwrap_or(u32::MAX);
                (*shared.terms.entry(t.as_str().into()).or_insert(next), *n)
            })
            .collect();
        shared.cases.resize(shared.terms.len(), 0);
        for (&(id, _), &case) in ids.iter().zip(&bag.cases) {
            if let Some(c) = shared.cases.get_mut(id as usize) {
                *c |= case;
            }
        }
        if shared.own_only {
            shared.sessions.entry(session.to_owned()).or_default();
        }
        (ids, home(shared))
    }

    /// An index whose sessions all keep lists of their own, as before the pool.
    #[cfg(test)]
    pub(crate) fn unpooled() -> Self {
        let shared = Shared {
            own_only: true,
            ..Shared::default()
        };
        Self {
            shared: RwLock::new(shared),
        }
    }

    /// `terms` as ids (`None`: no chunk holds it).
    pub fn term_ids<'t>(&self, terms: impl IntoIterator<Item = &'t str>) -> Vec<Option<u32>> {
        let shared = read(&self.shared);
        terms
            .into_iter()
            .map(|t| shared.terms.get(t).copied())
            .collect()
    }

    /// The terms among `terms` that the indexed text only ever wrote as names (capitalised
    /// inside a sentence, never in lowercase): whom a query asks about, however it is written
    /// ("what did caroline say" names `carolin` as "What did Caroline say?" does), and never a
    /// word the user also writes as a word ("May", "Rose" opening a question).
    pub fn names_among(&self, terms: &[String]) -> Vec<String> {
        let shared = read(&self.shared);
        terms
            .iter()
            .filter(|t| {
                shared
                    .terms
                    .get(t.as_str())
                    .and_then(|&id| shared.cases.get(id as usize))
                    .is_some_and(|&c| c == crate::terms::CAPITAL)
            })
            .cloned()
            .collect()
    }

    /// Whether a chunk of `sessions` has expired at `now` (and is not swept yet).
    pub fn any_expired(&self, sessions: &[String], now: &str) -> bool {
        let searched = self.searched(sessions);
        let locked = searched.lock(self);
        locked.view().any_expired(now)
    }

    /// Takes over `other`'s dictionary and postings (a reload) in one step.
    pub fn replace_with(&self, other: Self) {
        let shared = other
            .shared
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *write(&self.shared) = shared;
    }
}

/// Whether every term of a chunk (`ids`, written as `cases`) is marked so already: then the
/// chunk needs no write lock on the dictionary.
fn marked(known: &[u8], ids: &[(u32, u16)], cases: &[u8]) -> bool {
    ids.iter()
        .zip(cases)
        .all(|(&(id, _), &case)| known.get(id as usize).is_some_and(|&k| k & case == case))
}

#[path = "flat_keywords.rs"]
mod flat_keywords;
#[path = "keyword_lists.rs"]
mod lists;
#[path = "keyword_pool.rs"]
mod pool;
#[cfg(test)]
#[path = "keyword_pool_tests.rs"]
mod pool_tests;
#[path = "keyword_searched.rs"]
pub(crate) mod searched;
