//! The shared posting lists of the sessions too small for lists of their own.
//!
//! A user's conversations are hundreds of sessions of a few hundred turns. With lists per
//! session, a search of all of them looked each query term up once per session, twice (document
//! frequencies, then scoring). Here every session below [`crate::APPROX_MIN_ROWS`] chunks (the
//! size at which its vectors leave the vector index's pool too) keeps its chunks in one pool:
//! one posting list per term, postings by pool slot, and per slot the chunk's id, length and
//! session number. A search looks each term up once and skips the postings of sessions it does
//! not search; the BM25 statistics stay those of the searched sessions (per session counts kept
//! here). A session reaching the size moves to lists of its own ([`KeywordPool::take`]). Each
//! session's span of slots is kept too: a search of a few sessions reads each list only between
//! their spans (the current conversation is one short run of slots among hundreds of others).
//!
//! Slots only grow: a new chunk's postings go at the end of each of its lists. A removed chunk's
//! slot is marked dead and its postings stay until a purge, once a quarter of the slots are dead,
//! rewrites every list without them and renumbers the slots in order (so the lists stay sorted).
//! That spares each chunk a list of its term ids (what a removal would need to find its
//! postings at once).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::{Posting, Postings, SessionPostings};

/// The session number of a dead slot (a removed chunk whose postings wait for the next purge).
pub(super) const DEAD: u32 = u32::MAX;
/// Dead slots a purge waits for, at least (and a quarter of the slots).
const PURGE_MIN: usize = 64;

/// A pooled session's share of the statistics.
#[derive(Debug, Default)]
pub(super) struct PoolSession {
    pub(super) docs: u32,
    pub(super) total_len: u64,
    /// Expiry times (as stored text) of its chunks that have one, with their counts.
    pub(super) expiries: BTreeMap<Box<str>, u32>,
    /// The first and last slot its chunks lie in (removals leave it wide until a purge): a
    /// search of few sessions reads each list only between its sessions' spans.
    pub(super) span: Option<(u32, u32)>,
}

impl PoolSession {
    /// Widens the span to `slot`.
    pub(super) fn hold(&mut self, slot: u32) {
        self.span = Some(match self.span {
            Some((first, last)) => (first.min(slot), last.max(slot)),
            None => (slot, slot),
        });
    }
}

#[derive(Debug, Default)]
pub struct KeywordPool {
    /// Term id → the slots holding it, ascending.
    pub(super) postings: FxHashMap<u32, Postings>,
    /// Per slot: the chunk id, its length in words, its session number ([`DEAD`] once removed).
    pub(super) chunk_ids: Vec<i64>,
    pub(super) lens: Vec<u32>,
    pub(super) tags: Vec<u32>,
    /// The expiry of each live slot that has one (notes only; conversations have none).
    pub(super) expires: FxHashMap<u32, Box<str>>,
    pub(super) slot_of: FxHashMap<i64, u32>,
    pub(super) dead: usize,
    /// Per session number (empty name: a free number).
    pub(super) sessions: Vec<PoolSession>,
    pub(super) names: Vec<String>,
    pub(super) numbers: FxHashMap<String, u32>,
    pub(super) free: Vec<u32>,
    /// Moves whenever a session number is given or released (a search's resolved numbers hold
    /// while it stays).
    pub(super) epoch: u64,
}

impl KeywordPool {
    pub(super) fn number(&self, session: &str) -> Option<u32> {
        self.numbers.get(session).copied()
    }

    /// Live chunks of session number `n`.
    pub(super) fn docs_of(&self, n: u32) -> usize {
        self.sessions.get(n as usize).map_or(0, |s| s.docs as usize)
    }

    /// Indexes `session`'s chunk (terms as `(id, count)`); returns the session's number.
    pub(super) fn upsert(
        &mut self,
        session: &str,
        chunk_id: i64,
        len: u32,
        terms: &[(u32, u16)],
        expires_at: Option<&str>,
    ) -> Option<u32> {
        // A chunk id names one chunk: were it filed under another session, it leaves that one.
        if let Some(&slot) = self.slot_of.get(&chunk_id) {
            self.remove_slot(slot);
        }
        let Ok(slot) = u32::try_from(self.chunk_ids.len()) else {
            tracing::warn!(chunk_id, "keyword pool full; chunk not indexed");
            return None;
        };
        let n = self.number_or_insert(session);
        self.chunk_ids.push(chunk_id);
        self.lens.push(len);
        self.tags.push(n);
        for &(id, count) in terms {
            let posting = Posting { slot, count };
            self.postings
                .entry(id)
                .and_modify(|list| list.insert(posting))
                .or_insert(Postings::One([posting]));
        }
        self.slot_of.insert(chunk_id, slot);
        let s = &mut self.sessions[n as usize];
        s.docs += 1;
        s.total_len += u64::from(len);
        s.hold(slot);
        if let Some(at) = expires_at {
            *s.expiries.entry(at.into()).or_insert(0) += 1;
            self.expires.insert(slot, at.into());
        }
        Some(n)
    }

    /// Removes `session`'s chunk `chunk_id` (nothing when it is not that session's).
    pub(super) fn remove(&mut self, session: &str, chunk_id: i64) {
        let Some(n) = self.number(session) else {
            return;
        };
        if let Some(&slot) = self.slot_of.get(&chunk_id)
            && self.tags.get(slot as usize) == Some(&n)
        {
            self.remove_slot(slot);
            self.purge_when_due();
        }
    }

    fn remove_slot(&mut self, slot: u32) {
        let at = slot as usize;
        let n = std::mem::replace(&mut self.tags[at], DEAD);
        self.slot_of.remove(&self.chunk_ids[at]);
        self.dead += 1;
        let s = &mut self.sessions[n as usize];
        s.docs -= 1;
        s.total_len -= u64::from(self.lens[at]);
        if let Some(expires) = self.expires.remove(&slot)
            && let Some(count) = s.expiries.get_mut(&expires)
        {
            *count -= 1;
            if *count == 0 {
                s.expiries.remove(&expires);
            }
        }
        if s.docs == 0 {
            self.release(n);
        }
    }

    fn number_or_insert(&mut self, session: &str) -> u32 {
        if let Some(n) = self.number(session) {
            return n;
        }
        self.epoch += 1;
        let n = match self.free.pop() {
            Some(n) => n,
            None => {
                self.sessions.push(PoolSession::default());
                self.names.push(String::new());
                u32::try_from(self.names.len() - 1).unwrap_or(DEAD)
            }
        };
        self.names[n as usize] = session.to_owned();
        self.numbers.insert(session.to_owned(), n);
        n
    }

    fn release(&mut self, n: u32) {
        self.epoch += 1;
        let name = std::mem::take(&mut self.names[n as usize]);
        self.numbers.remove(&name);
        self.sessions[n as usize] = PoolSession::default();
        self.free.push(n);
    }

    fn purge_when_due(&mut self) {
        if self.dead >= PURGE_MIN && self.dead * 4 >= self.chunk_ids.len() {
            self.purge();
        }
    }

    /// Drops the dead slots' postings and renumbers the live slots in order.
    pub(super) fn purge(&mut self) {
        let mut new_slot = vec![DEAD; self.chunk_ids.len()];
        let mut next = 0u32;
        for (slot, &tag) in self.tags.iter().enumerate() {
            if tag != DEAD {
                new_slot[slot] = next;
                next += 1;
            }
        }
        let live = |slot: usize| new_slot[slot] != DEAD;
        self.postings.retain(|_, list| {
            let kept: Vec<Posting> = list
                .list()
                .iter()
                .filter(|p| live(p.slot as usize))
                .map(|p| Posting {
                    slot: new_slot[p.slot as usize],
                    count: p.count,
                })
                .collect();
            if kept.is_empty() {
                return false;
            }
            *list = Postings::from_sorted(&kept);
            true
        });
        self.chunk_ids = live_only(&self.chunk_ids, &self.tags);
        self.lens = live_only(&self.lens, &self.tags);
        self.tags.retain(|&t| t != DEAD);
        self.expires = std::mem::take(&mut self.expires)
            .into_iter()
            .map(|(slot, at)| (new_slot[slot as usize], at))
            .collect();
        for slot in self.slot_of.values_mut() {
            *slot = new_slot[*slot as usize];
        }
        for s in &mut self.sessions {
            s.span = None;
        }
        for (slot, &n) in (0u32..).zip(&self.tags) {
            self.sessions[n as usize].hold(slot);
        }
        self.dead = 0;
    }

    /// Drops session number `n`'s chunks (a snapshot that also holds its own lists).
    pub(super) fn drop_session(&mut self, n: u32) {
        for slot in self.slots_of(n) {
            self.remove_slot(slot);
        }
        self.purge_when_due();
    }

    /// The slots of session number `n`, ascending.
    fn slots_of(&self, n: u32) -> Vec<u32> {
        (0..self.tags.len())
            .filter(|&s| self.tags[s] == n)
            .filter_map(|s| u32::try_from(s).ok())
            .collect()
    }

    /// Takes session number `n`'s chunks out into lists of their own.
    pub(super) fn take(&mut self, n: u32) -> SessionPostings {
        let slots = self.slots_of(n);
        let mut terms: Vec<Vec<(u32, u16)>> = vec![Vec::new(); slots.len()];
        let mut ids: Vec<u32> = self.postings.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            for p in self.postings[&id].list() {
                if let Ok(at) = slots.binary_search(&p.slot) {
                    terms[at].push((id, p.count));
                }
            }
        }
        let mut own = SessionPostings::default();
        for (&slot, terms) in slots.iter().zip(&terms) {
            let at = slot as usize;
            let expires = self.expires.get(&slot).map(|e| e.to_string());
            own.upsert(self.chunk_ids[at], self.lens[at], terms, expires.as_deref());
        }
        for slot in slots {
            self.remove_slot(slot);
        }
        self.purge_when_due();
        own
    }
}

/// The values of the live slots, in order.
fn live_only<T: Copy>(values: &[T], tags: &[u32]) -> Vec<T> {
    values
        .iter()
        .zip(tags)
        .filter(|(_, t)| **t != DEAD)
        .map(|(v, _)| *v)
        .collect()
}
