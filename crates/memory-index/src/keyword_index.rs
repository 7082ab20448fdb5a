//! The in-memory keyword index that serves the keyword leg of hybrid search.
//!
//! Per session: a term dictionary, one posting list per term (the chunks holding it, as slots
//! sorted ascending, with the term's count in each), and per slot the chunk's id, length in words
//! and term ids (so that a removal knows which lists to leave). It is kept by the same calls as the
//! vector index ([`crate::vector_index::VectorIndex::apply`]: the writer after each commit, the
//! catch-up from the change log, the load at open), from the chunk text each change carries, so
//! both legs always see the same chunks. Scoring is in [`crate::keyword`].
//!
//! Memory: a posting is 6 bytes (slot `u32`, count `u16`); a chunk adds its id, length and term
//! ids (4 bytes each) and an entry in the id → slot map. Terms are never dropped from a session's
//! dictionary (a vocabulary is small next to its postings); freed slots are reused.
//!
//! Locks as in the vector index: one `RwLock` per session, never held across `.await`.

use std::collections::{BTreeMap, HashMap};

use rustc_hash::FxHashMap;
use std::sync::{Arc, RwLock};

use crate::terms::TermBag;
use crate::vector_index::{read, write};

/// One term's postings, sorted by slot.
#[derive(Debug, Default)]
pub struct Postings {
    pub slots: Vec<u32>,
    pub counts: Vec<u16>,
}

impl Postings {
    fn insert(&mut self, slot: u32, count: u16) {
        match self.slots.binary_search(&slot) {
            Ok(at) => self.counts[at] = count,
            Err(at) => {
                self.slots.insert(at, slot);
                self.counts.insert(at, count);
            }
        }
    }

    fn remove(&mut self, slot: u32) {
        if let Ok(at) = self.slots.binary_search(&slot) {
            self.slots.remove(at);
            self.counts.remove(at);
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }
}

#[derive(Debug, Default)]
struct Doc {
    chunk_id: i64,
    len: u32,
    terms: Box<[u32]>,
    expires_at: Option<Box<str>>,
}

/// One session's postings.
#[derive(Debug, Default)]
pub struct SessionPostings {
    dictionary: FxHashMap<Box<str>, u32>,
    postings: Vec<Postings>,
    docs: Vec<Doc>,
    slot_of: FxHashMap<i64, u32>,
    free: Vec<u32>,
    /// Sum of the live chunks' lengths.
    total_len: u64,
    /// Expiry times (as stored text) of the live chunks that have one, with their counts.
    expiries: BTreeMap<Box<str>, u32>,
}

impl SessionPostings {
    fn upsert(&mut self, chunk_id: i64, bag: &TermBag, expires_at: Option<&str>) {
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
        let mut term_ids = Vec::with_capacity(bag.terms.len());
        for (term, count) in &bag.terms {
            let id = match self.dictionary.get(term.as_str()) {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(self.postings.len()).unwrap_or(u32::MAX);
                    self.dictionary.insert(term.as_str().into(), id);
                    self.postings.push(Postings::default());
                    id
                }
            };
            if let Some(list) = self.postings.get_mut(id as usize) {
                list.insert(slot, *count);
                term_ids.push(id);
            }
        }
        self.docs[slot as usize] = Doc {
            chunk_id,
            len: bag.len,
            terms: term_ids.into_boxed_slice(),
            expires_at: expires_at.map(Into::into),
        };
        self.slot_of.insert(chunk_id, slot);
        self.total_len += u64::from(bag.len);
        if let Some(at) = expires_at {
            *self.expiries.entry(at.into()).or_insert(0) += 1;
        }
    }

    fn remove(&mut self, chunk_id: i64) {
        let Some(slot) = self.slot_of.remove(&chunk_id) else {
            return;
        };
        let doc = std::mem::take(&mut self.docs[slot as usize]);
        for id in doc.terms.iter() {
            if let Some(list) = self.postings.get_mut(*id as usize) {
                list.remove(slot);
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

    /// Live chunks.
    pub fn docs(&self) -> usize {
        self.slot_of.len()
    }

    pub fn total_len(&self) -> u64 {
        self.total_len
    }

    pub fn postings(&self, term: &str) -> Option<&Postings> {
        let id = *self.dictionary.get(term)?;
        self.postings.get(id as usize)
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

    /// Whether a live chunk holds `term` (an index term): one binary search of its postings.
    pub fn holds(&self, chunk_id: i64, term: &str) -> bool {
        let Some(slot) = self.slot_of.get(&chunk_id) else {
            return false;
        };
        self.postings(term)
            .is_some_and(|p| p.slots.binary_search(slot).is_ok())
    }

    /// Every live chunk's terms, as [`Self::upsert`] took them: `(chunk id, bag)` in slot order.
    pub fn bags(&self) -> Vec<(i64, TermBag)> {
        let mut names: Vec<&str> = vec![""; self.postings.len()];
        for (term, &id) in &self.dictionary {
            if let Some(name) = names.get_mut(id as usize) {
                *name = term;
            }
        }
        let mut out = Vec::with_capacity(self.slot_of.len());
        for (slot, doc) in self.docs.iter().enumerate() {
            let slot = u32::try_from(slot).unwrap_or(u32::MAX);
            if self.slot_of.get(&doc.chunk_id) != Some(&slot) {
                continue;
            }
            let terms = doc
                .terms
                .iter()
                .filter_map(|&id| {
                    let list = self.postings.get(id as usize)?;
                    let at = list.slots.binary_search(&slot).ok()?;
                    Some((names[id as usize].to_owned(), list.counts[at]))
                })
                .collect();
            out.push((
                doc.chunk_id,
                TermBag {
                    len: doc.len,
                    terms,
                },
            ));
        }
        out
    }

    /// Whether some chunk expires at or before `now` (stored text, compared as text).
    fn any_expired(&self, now: &str) -> bool {
        self.expiries
            .first_key_value()
            .is_some_and(|(at, _)| &**at <= now)
    }
}

/// Every session's postings.
#[derive(Debug, Default)]
pub struct KeywordIndex {
    sessions: RwLock<HashMap<String, Arc<RwLock<SessionPostings>>>>,
}

impl KeywordIndex {
    pub fn upsert(&self, session: &str, chunk_id: i64, bag: &TermBag, expires_at: Option<&str>) {
        let postings = self.postings_or_insert(session);
        write(&postings).upsert(chunk_id, bag, expires_at);
    }

    pub fn remove(&self, session: &str, chunk_id: i64) {
        let postings = read(&self.sessions).get(session).cloned();
        if let Some(postings) = postings {
            write(&postings).remove(chunk_id);
        }
    }

    fn postings_or_insert(&self, session: &str) -> Arc<RwLock<SessionPostings>> {
        if let Some(p) = read(&self.sessions).get(session) {
            return Arc::clone(p);
        }
        Arc::clone(write(&self.sessions).entry(session.to_owned()).or_default())
    }

    /// The postings of `sessions` (each once, unknown ones left out), to lock for a search.
    pub fn of(&self, sessions: &[String]) -> Vec<(String, Arc<RwLock<SessionPostings>>)> {
        let map = read(&self.sessions);
        let mut seen = std::collections::HashSet::new();
        sessions
            .iter()
            .filter(|s| seen.insert(s.as_str()))
            .filter_map(|s| map.get(s).map(|p| (s.clone(), Arc::clone(p))))
            .collect()
    }

    /// Whether a chunk of `sessions` has expired at `now` (and is not swept yet).
    pub fn any_expired(&self, sessions: &[String], now: &str) -> bool {
        self.of(sessions)
            .iter()
            .any(|(_, p)| read(p).any_expired(now))
    }

    /// Takes over `other`'s postings (a reload) in one step.
    pub fn replace_with(&self, other: Self) {
        let sessions = other
            .sessions
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *write(&self.sessions) = sessions;
    }
}

#[path = "flat_keywords.rs"]
mod flat_keywords;
