//! A search's sessions resolved once ([`Searched`]): the lists of those with their own, and the
//! numbers of the pooled ones, kept for every step of the search (the keyword leg, the expiry
//! check, the lifts) instead of each step looking every session up by name. [`Searched::lock`]
//! takes the read locks for one step ([`Locked`]), re-resolving only when a session entered or
//! left the pool meanwhile.

use std::borrow::Cow;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use super::pool::{DEAD, KeywordPool};
use super::{KeywordIndex, Posting, SessionPostings, Shared};
use crate::vector_index::read;

/// The sessions of one search.
#[derive(Debug)]
pub struct Searched {
    names: Vec<String>,
    pool: Arc<RwLock<KeywordPool>>,
    resolved: Resolved,
}

#[derive(Debug, Default)]
struct Resolved {
    /// The pool's epoch these were resolved at.
    epoch: u64,
    own: Vec<(String, Arc<RwLock<SessionPostings>>)>,
    /// Pooled sessions searched, by number.
    chosen: Vec<bool>,
    /// Whether every pooled session is searched.
    all: bool,
}

/// One step's locks: the pool read-locked and the own lists to lock ([`Locked::view`]).
#[derive(Debug)]
pub struct Locked<'a> {
    pool: PoolPart<'a>,
    own: Cow<'a, [(String, Arc<RwLock<SessionPostings>>)]>,
}

/// The searched sessions read-locked: what the keyword leg, the expiry check and the lifts read.
#[derive(Debug)]
pub struct View<'l> {
    pub(crate) pool: &'l PoolPart<'l>,
    pub(crate) own: Vec<(&'l str, RwLockReadGuard<'l, SessionPostings>)>,
}

/// The pool as one search sees it: only the slots of its sessions.
#[derive(Debug)]
pub(crate) struct PoolPart<'a> {
    pub(crate) pool: RwLockReadGuard<'a, KeywordPool>,
    chosen: Cow<'a, [bool]>,
    /// Every live slot is searched: a list's length is its document frequency.
    whole: bool,
    /// Unless `whole`: the slots the searched sessions' chunks lie between (first, last), the
    /// only part of each list read; `None` when no pooled session is searched.
    span: Option<(u32, u32)>,
}

impl KeywordIndex {
    /// `sessions` (each once, unknown ones left out) resolved for a search.
    pub fn searched(&self, sessions: &[String]) -> Searched {
        let mut names = sessions.to_vec();
        names.sort();
        names.dedup();
        // The index's lock before the pool's, as writers take them.
        let shared = read(&self.shared);
        let pool = Arc::clone(&shared.pool);
        let resolved = resolve(&shared, &names, &read(&pool));
        Searched {
            names,
            pool,
            resolved,
        }
    }
}

fn resolve(shared: &Shared, names: &[String], pool: &KeywordPool) -> Resolved {
    let mut chosen = vec![false; pool.names.len()];
    let mut own = Vec::new();
    let mut pooled = 0;
    for name in names {
        if let Some(n) = pool.number(name) {
            chosen[n as usize] = true;
            pooled += 1;
        } else if let Some(p) = shared.sessions.get(name) {
            own.push((name.clone(), Arc::clone(p)));
        }
    }
    Resolved {
        epoch: pool.epoch,
        own,
        chosen,
        all: pooled == pool.numbers.len(),
    }
}

impl Searched {
    /// The read lock of the pool for one step of the search (taken before any session's, as
    /// writers take them); resolved again when a session entered or left the pool since.
    pub fn lock<'a>(&'a self, index: &KeywordIndex) -> Locked<'a> {
        let mut pool = read(&self.pool);
        let (own, chosen, all) = if pool.epoch == self.resolved.epoch {
            let r = &self.resolved;
            (
                Cow::Borrowed(&r.own[..]),
                Cow::Borrowed(&r.chosen[..]),
                r.all,
            )
        } else {
            // The index's lock first (see `KeywordIndex::searched`).
            drop(pool);
            let shared = read(&index.shared);
            pool = read(&self.pool);
            let r = resolve(&shared, &self.names, &pool);
            (Cow::Owned(r.own), Cow::Owned(r.chosen), r.all)
        };
        let whole = all && pool.dead == 0;
        let span = pool
            .sessions
            .iter()
            .zip(chosen.iter())
            .filter(|(_, c)| **c)
            .filter_map(|(s, _)| s.span)
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
        Locked {
            pool: PoolPart {
                pool,
                chosen,
                whole,
                span,
            },
            own,
        }
    }

    /// The sessions searched (sorted, each once).
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

impl<'a> Locked<'a> {
    /// Every searched session's lists, read-locked.
    pub fn view(&self) -> View<'_> {
        View {
            pool: &self.pool,
            own: self
                .own
                .iter()
                .map(|(n, p)| (n.as_str(), read(p)))
                .collect(),
        }
    }
}

impl PoolPart<'_> {
    /// The chunk id, length and session of a searched slot; `None` for a dead one or one of a
    /// session not searched.
    pub(crate) fn doc(&self, slot: u32) -> Option<(i64, u32, &str)> {
        let at = slot as usize;
        let p = &*self.pool;
        let n = *p.tags.get(at)?;
        if n == DEAD || !self.chosen.get(n as usize).copied().unwrap_or(false) {
            return None;
        }
        Some((p.chunk_ids[at], p.lens[at], p.names[n as usize].as_str()))
    }

    /// The postings of term `id` that can be of a searched session: the whole list when every
    /// session is searched, else those between the searched sessions' spans (found by two binary
    /// searches, so a search of the current conversation does not read every other one's).
    pub(crate) fn list(&self, id: u32) -> Option<&[Posting]> {
        let list = self.pool.postings.get(&id)?.list();
        if self.whole {
            return Some(list);
        }
        let Some((first, last)) = self.span else {
            return Some(&[]);
        };
        let from = list.partition_point(|p| p.slot < first);
        let to = list.partition_point(|p| p.slot <= last).max(from);
        Some(&list[from..to])
    }

    /// The searched chunks holding term `id`.
    fn df(&self, id: u32) -> usize {
        let Some(list) = self.list(id) else {
            return 0;
        };
        if self.whole {
            return list.len();
        }
        list.iter().filter(|p| self.doc(p.slot).is_some()).count()
    }

    /// The pooled sessions searched, by number.
    fn sessions(&self) -> impl Iterator<Item = &super::pool::PoolSession> {
        self.pool
            .sessions
            .iter()
            .zip(self.chosen.iter())
            .filter(|(_, c)| **c)
            .map(|(s, _)| s)
    }

    /// The slot of a searched chunk.
    fn slot(&self, chunk_id: i64) -> Option<u32> {
        let &slot = self.pool.slot_of.get(&chunk_id)?;
        self.doc(slot).map(|_| slot)
    }
}

impl View<'_> {
    /// Live chunks searched.
    pub fn docs(&self) -> usize {
        let pooled: usize = self.pool.sessions().map(|s| s.docs as usize).sum();
        pooled + self.own.iter().map(|(_, g)| g.docs()).sum::<usize>()
    }

    /// Sum of the searched chunks' lengths.
    pub fn total_len(&self) -> u64 {
        let pooled: u64 = self.pool.sessions().map(|s| s.total_len).sum();
        pooled + self.own.iter().map(|(_, g)| g.total_len()).sum::<u64>()
    }

    /// The searched chunks holding term `id` (its document frequency).
    pub fn df(&self, id: u32) -> usize {
        let own: usize = self
            .own
            .iter()
            .map(|(_, g)| g.postings(id).map_or(0, |p| p.len()))
            .sum();
        own + self.pool.df(id)
    }

    /// Whether a searched chunk expires at or before `now` (stored text, compared as text).
    pub fn any_expired(&self, now: &str) -> bool {
        let expired = |e: &std::collections::BTreeMap<Box<str>, u32>| {
            e.first_key_value().is_some_and(|(at, _)| &**at <= now)
        };
        self.pool.sessions().any(|s| expired(&s.expiries))
            || self.own.iter().any(|(_, g)| g.any_expired(now))
    }

    /// The length in words of a searched chunk.
    pub fn chunk_len(&self, chunk_id: i64) -> Option<u32> {
        if let Some(slot) = self.pool.slot(chunk_id) {
            return Some(self.pool.pool.lens[slot as usize]);
        }
        self.own.iter().find_map(|(_, g)| g.chunk_len(chunk_id))
    }

    /// Whether a searched chunk holds term `id`.
    pub fn holds(&self, chunk_id: i64, id: u32) -> bool {
        if let Some(slot) = self.pool.slot(chunk_id) {
            return self
                .pool
                .pool
                .postings
                .get(&id)
                .is_some_and(|p| p.holds(slot));
        }
        self.own
            .iter()
            .find(|(_, g)| g.chunk_len(chunk_id).is_some())
            .is_some_and(|(_, g)| g.holds(chunk_id, id))
    }
}
