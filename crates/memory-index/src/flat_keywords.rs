//! The keyword index as flat sections ([`crate::flat`]): per session its dictionary, every
//! posting list laid end to end, and the per-slot chunk ids, lengths and term ids, so a load
//! rebuilds no dictionary term by term and tokenizes nothing.

use std::io::{self, Read, Write};
use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap;

use super::{Doc, KeywordIndex, Postings, SessionPostings};
use crate::flat::{Record, SectionReader, SectionWriter, invalid};
use crate::index_change::{read, write};

impl KeywordIndex {
    pub(crate) fn write_flat<W: Write>(&self, out: &mut SectionWriter<'_, W>) -> io::Result<()> {
        let sessions: Vec<(String, Arc<RwLock<SessionPostings>>)> = read(&self.sessions)
            .iter()
            .map(|(name, p)| (name.clone(), Arc::clone(p)))
            .collect();
        Record::default().u64(sessions.len() as u64).write(out)?;
        for (name, postings) in sessions {
            read(&postings).write_flat(&name, out)?;
        }
        Ok(())
    }

    pub(crate) fn read_flat<R: Read>(&self, input: &mut SectionReader<'_, R>) -> io::Result<()> {
        let mut head = Record::read(input)?;
        let sessions = head.take_u64()?;
        head.done()?;
        for _ in 0..sessions {
            let (name, postings) = SessionPostings::read_flat(input)?;
            let previous = write(&self.sessions).insert(name, Arc::new(RwLock::new(postings)));
            if previous.is_some() {
                return Err(invalid("session listed twice"));
            }
        }
        Ok(())
    }
}

impl SessionPostings {
    fn write_flat<W: Write>(&self, name: &str, out: &mut SectionWriter<'_, W>) -> io::Result<()> {
        let mut names: Vec<&str> = vec![""; self.postings.len()];
        for (term, &id) in &self.dictionary {
            if let Some(slot) = names.get_mut(id as usize) {
                *slot = term;
            }
        }
        Record::default()
            .text(name)
            .u64(self.postings.len() as u64)
            .u64(self.docs.len() as u64)
            .write(out)?;
        out.texts(names.into_iter().map(Some))?;
        let lens = self.postings.iter().map(|p| count(p.slots.len()));
        out.array(&lens.collect::<io::Result<Vec<u32>>>()?)?;
        let slots: Vec<u32> = self
            .postings
            .iter()
            .flat_map(|p| p.slots.iter().copied())
            .collect();
        out.array(&slots)?;
        drop(slots);
        let counts: Vec<u16> = self
            .postings
            .iter()
            .flat_map(|p| p.counts.iter().copied())
            .collect();
        out.array(&counts)?;
        drop(counts);
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

    fn read_flat<R: Read>(input: &mut SectionReader<'_, R>) -> io::Result<(String, Self)> {
        let mut head = Record::read(input)?;
        let name = head.take_text()?;
        let terms = head.take_usize()?;
        let docs = head.take_usize()?;
        head.done()?;
        let slots_max = u32::try_from(docs).map_err(|_| invalid("slots"))?;
        let words = input.texts(terms)?;
        let mut dictionary = FxHashMap::default();
        dictionary.reserve(terms);
        for id in 0..terms {
            let id32 = u32::try_from(id).map_err(|_| invalid("terms"))?;
            dictionary.insert(Box::<str>::from(words.some(id)?), id32);
        }
        drop(words);
        let lens: Vec<u32> = input.array(terms)?;
        let total = sum(&lens)?;
        let slots: Vec<u32> = input.array(total)?;
        let counts: Vec<u16> = input.array(total)?;
        let mut postings = Vec::with_capacity(terms);
        let mut at = 0;
        for &len in &lens {
            let end = at + len as usize;
            let list = &slots[at..end];
            if list.windows(2).any(|w| w[0] >= w[1]) || list.last().is_some_and(|&s| s >= slots_max)
            {
                return Err(invalid("postings"));
            }
            postings.push(Postings {
                slots: list.to_vec(),
                counts: counts[at..end].to_vec(),
            });
            at = end;
        }
        drop((slots, counts));
        let ids: Vec<i64> = input.array(docs)?;
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
            dictionary,
            postings,
            docs: Vec::with_capacity(docs),
            free,
            ..Self::default()
        };
        session.slot_of.reserve(docs);
        let mut at = 0;
        for slot in 0..docs {
            let end = at + term_counts[slot] as usize;
            let doc = Doc {
                chunk_id: ids[slot],
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

fn count(n: usize) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| invalid("count"))
}

fn sum(counts: &[u32]) -> io::Result<usize> {
    counts
        .iter()
        .try_fold(0usize, |sum, &c| sum.checked_add(c as usize))
        .ok_or_else(|| invalid("counts"))
}
