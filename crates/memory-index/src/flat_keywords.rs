//! The keyword index as flat sections ([`crate::flat`]): the dictionary once (its terms, then how
//! each was written), then per session
//! with lists of its own its posting lists (term ids, lengths, then every list laid end to end)
//! and the per-slot chunk ids, lengths and term ids, then the pool the same way (its live slots
//! renumbered in order, with their session numbers and the sessions' names), so a load rebuilds
//! no dictionary term by term and tokenizes nothing.

use std::io::{self, Read, Write};
use std::sync::{Arc, RwLock};

use super::pool::{DEAD, PoolSession};
use super::{Doc, KeywordIndex, KeywordPool, Lists, Posting, Postings, SessionPostings, Shared};
use crate::flat::{Record, SectionReader, SectionWriter, invalid};
use crate::index_change::read;

impl KeywordIndex {
    pub(crate) fn write_flat<W: Write>(&self, out: &mut SectionWriter<'_, W>) -> io::Result<()> {
        let (names, cases, pool) = {
            let shared = read(&self.shared);
            let mut names: Vec<Box<str>> = vec![Box::from(""); shared.terms.len()];
            for (term, &id) in &shared.terms {
                if let Some(slot) = names.get_mut(id as usize) {
                    slot.clone_from(term);
                }
            }
            let mut cases = shared.cases.clone();
            cases.resize(names.len(), 0);
            (names, cases, Arc::clone(&shared.pool))
        };
        Record::default().u64(names.len() as u64).write(out)?;
        out.texts(names.iter().map(|n| Some(&**n)))?;
        drop(names);
        out.bytes(&cases)?;
        // The pool before the sessions with lists of their own (as the vector index writes its
        // pool first): a session leaving the pool meanwhile is written twice rather than missed,
        // and a load keeps its own lists.
        read(&pool).write_flat(out)?;
        let sessions: Vec<(String, Arc<RwLock<SessionPostings>>)> = read(&self.shared)
            .sessions
            .iter()
            .map(|(name, p)| (name.clone(), Arc::clone(p)))
            .collect();
        Record::default().u64(sessions.len() as u64).write(out)?;
        for (name, postings) in sessions {
            read(&postings).write_flat(&name, out)?;
        }
        Ok(())
    }

    /// Reads what [`Self::write_flat`] wrote into this (empty) index.
    pub(crate) fn read_flat<R: Read>(&self, input: &mut SectionReader<'_, R>) -> io::Result<()> {
        let mut head = Record::read(input)?;
        let terms = head.take_usize()?;
        head.done()?;
        let words = input.texts(terms)?;
        let mut shared = Shared::default();
        shared.terms.reserve(terms);
        for id in 0..terms {
            let id32 = u32::try_from(id).map_err(|_| invalid("terms"))?;
            if shared.terms.insert(words.some(id)?.into(), id32).is_some() {
                return Err(invalid("term listed twice"));
            }
        }
        drop(words);
        shared.cases = input.bytes()?;
        if shared.cases.len() != terms {
            return Err(invalid("term cases"));
        }
        let mut pool = KeywordPool::read_flat(terms, input)?;
        let mut head = Record::read(input)?;
        let sessions = head.take_u64()?;
        head.done()?;
        for _ in 0..sessions {
            let (name, postings) = SessionPostings::read_flat(terms, input)?;
            if let Some(n) = pool.number(&name) {
                pool.drop_session(n);
            }
            let postings = Arc::new(RwLock::new(postings));
            if shared.sessions.insert(name, postings).is_some() {
                return Err(invalid("session listed twice"));
            }
        }
        shared.pool = Arc::new(RwLock::new(pool));
        self.replace_with(Self {
            shared: RwLock::new(shared),
        });
        Ok(())
    }
}

impl SessionPostings {
    fn write_flat<W: Write>(&self, name: &str, out: &mut SectionWriter<'_, W>) -> io::Result<()> {
        let lists: Vec<(u32, &[Posting])> = self
            .postings
            .sorted()
            .into_iter()
            .map(|(id, p)| (id, p.list()))
            .collect();
        Record::default()
            .text(name)
            .u64(lists.len() as u64)
            .u64(self.docs.len() as u64)
            .write(out)?;
        out.array(&lists.iter().map(|(id, _)| *id).collect::<Vec<u32>>())?;
        let lens = lists.iter().map(|(_, l)| count(l.len()));
        out.array(&lens.collect::<io::Result<Vec<u32>>>()?)?;
        let postings = || lists.iter().flat_map(|(_, l)| l.iter());
        out.array(&postings().map(|p| p.slot).collect::<Vec<u32>>())?;
        out.array(&postings().map(|p| p.count).collect::<Vec<u16>>())?;
        out.array(&self.docs.iter().map(|d| d.chunk_id).collect::<Vec<i64>>())?;
        out.array(&self.docs.iter().map(|d| d.len).collect::<Vec<u32>>())?;
        let term_counts = self.docs.iter().map(|d| count(d.terms.len()));
        out.array(&term_counts.collect::<io::Result<Vec<u32>>>()?)?;
        let terms: Vec<u32> = self
            .docs
            .iter()
            .flat_map(|d| d.terms.iter().copied())
            .collect();
        out.array(&terms)?;
        out.texts(self.docs.iter().map(|d| d.expires_at.as_deref()))?;
        out.array(&self.free)
    }

    /// One session's postings; term ids must be below `terms` (the dictionary's size).
    fn read_flat<R: Read>(
        terms: usize,
        input: &mut SectionReader<'_, R>,
    ) -> io::Result<(String, Self)> {
        let mut head = Record::read(input)?;
        let name = head.take_text()?;
        let lists = head.take_usize()?;
        let docs = head.take_usize()?;
        head.done()?;
        let slots_max = u32::try_from(docs).map_err(|_| invalid("slots"))?;
        let ids: Vec<u32> = input.array(lists)?;
        let lens: Vec<u32> = input.array(lists)?;
        let total = sum(&lens)?;
        let slots: Vec<u32> = input.array(total)?;
        let counts: Vec<u16> = input.array(total)?;
        let mut postings = Vec::with_capacity(lists);
        let mut at = 0;
        let mut list = Vec::new();
        for (&id, &len) in ids.iter().zip(&lens) {
            let end = at + len as usize;
            let sorted = slots[at..end].windows(2).all(|w| w[0] < w[1]);
            let in_range = slots[at..end].last().is_some_and(|&s| s < slots_max);
            // Term ids ascending, each once.
            let after = postings.last().is_none_or(|&(last, _)| last < id);
            if !sorted || !in_range || !after || id as usize >= terms {
                return Err(invalid("postings"));
            }
            list.clear();
            list.extend(
                slots[at..end]
                    .iter()
                    .zip(&counts[at..end])
                    .map(|(&slot, &count)| Posting { slot, count }),
            );
            postings.push((id, Postings::from_sorted(&list)));
            at = end;
        }
        drop((ids, lens, slots, counts));
        let chunk_ids: Vec<i64> = input.array(docs)?;
        let doc_lens: Vec<u32> = input.array(docs)?;
        let term_counts: Vec<u32> = input.array(docs)?;
        let doc_terms: Vec<u32> = input.array(sum(&term_counts)?)?;
        if doc_terms.iter().any(|&t| t as usize >= terms) {
            return Err(invalid("term ids"));
        }
        let expires = input.texts(docs)?;
        let free: Vec<u32> = input.array_any()?;
        let mut is_free = vec![false; docs];
        for &slot in &free {
            match is_free.get_mut(slot as usize) {
                Some(seen) if !*seen => *seen = true,
                _ => return Err(invalid("free slots")),
            }
        }
        let mut session = Self {
            postings: Lists::from_sorted(postings),
            docs: Vec::with_capacity(docs),
            free,
            ..Self::default()
        };
        session.slot_of.reserve(docs);
        let mut at = 0;
        for slot in 0..docs {
            let end = at + term_counts[slot] as usize;
            let doc = Doc {
                chunk_id: chunk_ids[slot],
                len: doc_lens[slot],
                terms: doc_terms[at..end].into(),
                expires_at: expires.get(slot)?.map(Into::into),
            };
            at = end;
            if !is_free[slot] {
                session.live(&doc, slot)?;
            }
            session.docs.push(doc);
        }
        Ok((name, session))
    }

    /// Counts a live slot's chunk in the id map, the total length and the expiries.
    fn live(&mut self, doc: &Doc, slot: usize) -> io::Result<()> {
        let slot = u32::try_from(slot).map_err(|_| invalid("slots"))?;
        if self.slot_of.insert(doc.chunk_id, slot).is_some() {
            return Err(invalid("chunk listed twice"));
        }
        self.total_len += u64::from(doc.len);
        if let Some(at) = &doc.expires_at {
            *self.expiries.entry(at.clone()).or_insert(0) += 1;
        }
        Ok(())
    }
}

impl KeywordPool {
    fn write_flat<W: Write>(&self, out: &mut SectionWriter<'_, W>) -> io::Result<()> {
        // Live slots renumbered in order (dead ones are not written).
        let mut new_slot = vec![DEAD; self.tags.len()];
        let mut live = Vec::new();
        for (slot, &tag) in self.tags.iter().enumerate() {
            if tag != DEAD {
                new_slot[slot] = count(live.len())?;
                live.push(slot);
            }
        }
        let mut ids: Vec<u32> = self.postings.keys().copied().collect();
        ids.sort_unstable();
        let mut lens = Vec::with_capacity(ids.len());
        let (mut slots, mut counts) = (Vec::new(), Vec::new());
        let mut kept = Vec::with_capacity(ids.len());
        for id in ids {
            let before = slots.len();
            for p in self.postings[&id].list() {
                let slot = new_slot[p.slot as usize];
                if slot != DEAD {
                    slots.push(slot);
                    counts.push(p.count);
                }
            }
            if slots.len() > before {
                kept.push(id);
                lens.push(count(slots.len() - before)?);
            }
        }
        Record::default()
            .u64(self.names.len() as u64)
            .u64(live.len() as u64)
            .u64(kept.len() as u64)
            .write(out)?;
        out.texts(self.names.iter().map(|n| Some(n.as_str())))?;
        out.array(
            &live
                .iter()
                .map(|&s| self.chunk_ids[s])
                .collect::<Vec<i64>>(),
        )?;
        out.array(&live.iter().map(|&s| self.lens[s]).collect::<Vec<u32>>())?;
        out.array(&live.iter().map(|&s| self.tags[s]).collect::<Vec<u32>>())?;
        out.array(&kept)?;
        out.array(&lens)?;
        out.array(&slots)?;
        out.array(&counts)?;
        let mut expires: Vec<(u32, &str)> = self
            .expires
            .iter()
            .map(|(&slot, at)| (new_slot[slot as usize], &**at))
            .filter(|(slot, _)| *slot != DEAD)
            .collect();
        expires.sort_unstable();
        out.array(&expires.iter().map(|(s, _)| *s).collect::<Vec<u32>>())?;
        out.texts(expires.iter().map(|(_, at)| Some(*at)))
    }

    /// The pool written by [`Self::write_flat`]; term ids must be below `terms`.
    fn read_flat<R: Read>(terms: usize, input: &mut SectionReader<'_, R>) -> io::Result<Self> {
        let mut head = Record::read(input)?;
        let names = head.take_usize()?;
        let docs = head.take_usize()?;
        let lists = head.take_usize()?;
        head.done()?;
        let texts = input.texts(names)?;
        let mut pool = Self::default();
        for n in 0..names {
            let name = texts.some(n)?;
            let number = count(n)?;
            pool.names.push(name.to_owned());
            pool.sessions.push(PoolSession::default());
            if name.is_empty() {
                pool.free.push(number);
            } else if pool.numbers.insert(name.to_owned(), number).is_some() {
                return Err(invalid("pooled session listed twice"));
            }
        }
        drop(texts);
        pool.chunk_ids = input.array(docs)?;
        pool.lens = input.array(docs)?;
        pool.tags = input.array(docs)?;
        let slots_max = count(docs)?;
        let ids: Vec<u32> = input.array(lists)?;
        let lens: Vec<u32> = input.array(lists)?;
        let total = sum(&lens)?;
        let slots: Vec<u32> = input.array(total)?;
        let counts: Vec<u16> = input.array(total)?;
        let mut at = 0;
        let mut last = None;
        for (&id, &len) in ids.iter().zip(&lens) {
            let end = at + len as usize;
            let list = &slots[at..end];
            let sorted = list.windows(2).all(|w| w[0] < w[1]);
            let in_range = list.last().is_some_and(|&s| s < slots_max);
            if !sorted || !in_range || last.is_some_and(|l| l >= id) || id as usize >= terms {
                return Err(invalid("pooled postings"));
            }
            last = Some(id);
            let postings: Vec<Posting> = list
                .iter()
                .zip(&counts[at..end])
                .map(|(&slot, &count)| Posting { slot, count })
                .collect();
            pool.postings.insert(id, Postings::from_sorted(&postings));
            at = end;
        }
        drop((ids, lens, slots, counts));
        let expiry_slots: Vec<u32> = input.array_any()?;
        let expiries = input.texts(expiry_slots.len())?;
        for (slot, &n) in pool.tags.iter().enumerate() {
            let live = pool
                .names
                .get(n as usize)
                .is_some_and(|name| !name.is_empty());
            if !live {
                return Err(invalid("pooled session number"));
            }
            let s = &mut pool.sessions[n as usize];
            s.docs += 1;
            s.total_len += u64::from(pool.lens[slot]);
            s.hold(count(slot)?);
            if pool
                .slot_of
                .insert(pool.chunk_ids[slot], count(slot)?)
                .is_some()
            {
                return Err(invalid("pooled chunk listed twice"));
            }
        }
        if pool
            .sessions
            .iter()
            .zip(&pool.names)
            .any(|(s, n)| (s.docs == 0) != n.is_empty())
        {
            return Err(invalid("pooled session without chunks"));
        }
        for (i, &slot) in expiry_slots.iter().enumerate() {
            let at: Box<str> = expiries.some(i)?.into();
            let n = *pool
                .tags
                .get(slot as usize)
                .ok_or_else(|| invalid("expiry slot"))?;
            *pool.sessions[n as usize]
                .expiries
                .entry(at.clone())
                .or_insert(0) += 1;
            if pool.expires.insert(slot, at).is_some() {
                return Err(invalid("expiry listed twice"));
            }
        }
        Ok(pool)
    }
}

fn count(n: usize) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| invalid("count"))
}

fn sum(counts: &[u32]) -> io::Result<usize> {
    counts
        .iter()
        .try_fold(0usize, |sum, &c| sum.checked_add(c as usize))
        .ok_or_else(|| invalid("counts"))
}
