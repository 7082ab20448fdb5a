//! One session's posting lists by term id: a sorted vector while the session has few terms (a
//! conversation's: 32 bytes an entry, with no hash table's empty buckets, which had cost a
//! message of a small session ~150 bytes), a hash map past [`SORTED_MAX`] terms (a large notes
//! session, where inserting a new term into the middle of a long vector would move too much).

use rustc_hash::FxHashMap;

use super::{Posting, Postings};

/// Terms a session keeps in a sorted vector; past this many, in a hash map.
const SORTED_MAX: usize = 4096;

#[derive(Debug)]
pub(super) enum Lists {
    Sorted(Vec<(u32, Postings)>),
    Hashed(FxHashMap<u32, Postings>),
}

impl Default for Lists {
    fn default() -> Self {
        Self::Sorted(Vec::new())
    }
}

impl Lists {
    /// Lists read back from a file, sorted by term id and each id once (checked by the caller).
    pub(super) fn from_sorted(entries: Vec<(u32, Postings)>) -> Self {
        match entries.len() > SORTED_MAX {
            true => Self::Hashed(entries.into_iter().collect()),
            false => Self::Sorted(entries),
        }
    }

    pub(super) fn get(&self, id: u32) -> Option<&Postings> {
        match self {
            Self::Sorted(v) => v
                .binary_search_by_key(&id, |(t, _)| *t)
                .ok()
                .map(|at| &v[at].1),
            Self::Hashed(m) => m.get(&id),
        }
    }

    /// Adds (or updates) `posting` in term `id`'s list.
    pub(super) fn insert(&mut self, id: u32, posting: Posting) {
        match self {
            Self::Sorted(v) => match v.binary_search_by_key(&id, |(t, _)| *t) {
                Ok(at) => v[at].1.insert(posting),
                Err(_) if v.len() >= SORTED_MAX => {
                    let mut map: FxHashMap<u32, Postings> = std::mem::take(v).into_iter().collect();
                    map.insert(id, Postings::One([posting]));
                    *self = Self::Hashed(map);
                }
                Err(at) => v.insert(at, (id, Postings::One([posting]))),
            },
            Self::Hashed(m) => {
                m.entry(id)
                    .and_modify(|list| list.insert(posting))
                    .or_insert(Postings::One([posting]));
            }
        }
    }

    /// Removes chunk `slot` from term `id`'s list, and the list when it is left empty.
    pub(super) fn remove(&mut self, id: u32, slot: u32) {
        match self {
            Self::Sorted(v) => {
                if let Ok(at) = v.binary_search_by_key(&id, |(t, _)| *t)
                    && !v[at].1.remove(slot)
                {
                    v.remove(at);
                }
            }
            Self::Hashed(m) => {
                if let Some(list) = m.get_mut(&id)
                    && !list.remove(slot)
                {
                    m.remove(&id);
                }
            }
        }
    }

    /// Whether the lists are the sorted vector (a small session).
    pub(super) fn is_sorted(&self) -> bool {
        matches!(self, Self::Sorted(_))
    }

    /// Removes chunk `slot` from every list holding it (a small session's removal: see
    /// `Doc::terms`), and the lists left empty.
    pub(super) fn remove_everywhere(&mut self, slot: u32) {
        match self {
            Self::Sorted(v) => v.retain_mut(|(_, list)| !list.holds(slot) || list.remove(slot)),
            Self::Hashed(m) => m.retain(|_, list| !list.holds(slot) || list.remove(slot)),
        }
    }

    /// Every list with its term id, sorted by id.
    pub(super) fn sorted(&self) -> Vec<(u32, &Postings)> {
        let mut out: Vec<(u32, &Postings)> = match self {
            Self::Sorted(v) => v.iter().map(|(id, p)| (*id, p)).collect(),
            Self::Hashed(m) => m.iter().map(|(id, p)| (*id, p)).collect(),
        };
        out.sort_unstable_by_key(|(id, _)| *id);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posting(slot: u32) -> Posting {
        Posting { slot, count: 1 }
    }

    /// The lists as `(id, slots)`, sorted by id.
    fn contents(lists: &Lists) -> Vec<(u32, Vec<u32>)> {
        let slots = |p: &Postings| p.list().iter().map(|p| p.slot).collect();
        lists
            .sorted()
            .into_iter()
            .map(|(id, p)| (id, slots(p)))
            .collect()
    }

    #[test]
    fn the_lists_answer_the_same_sorted_or_hashed() {
        let mut lists = Lists::default();
        let mut expected: Vec<(u32, Vec<u32>)> = Vec::new();
        // Ids in a scattered order, two postings each for every third: past SORTED_MAX terms.
        let n = SORTED_MAX as u32 + 500;
        for k in 0..n {
            let id = (k * 7919) % n;
            lists.insert(id, posting(k));
            let mut slots = vec![k];
            if id.is_multiple_of(3) {
                lists.insert(id, posting(k + n));
                slots.push(k + n);
            }
            expected.push((id, slots));
            if k as usize == SORTED_MAX - 1 {
                assert!(matches!(lists, Lists::Sorted(_)));
            }
        }
        assert!(matches!(lists, Lists::Hashed(_)), "past SORTED_MAX terms");
        expected.sort();
        assert_eq!(contents(&lists), expected);
        // Removing one of two postings keeps the list; removing the last drops it.
        let (id, slots) = expected[0].clone();
        assert_eq!(slots.len(), 2, "id 0 has two postings");
        lists.remove(id, slots[1]);
        assert_eq!(lists.get(id).map(Postings::len), Some(1));
        lists.remove(id, slots[0]);
        assert!(lists.get(id).is_none());
        expected.remove(0);
        // Read back from sorted entries, on either side of the threshold: the same lists.
        let rebuilt = |entries: &[(u32, Vec<u32>)]| {
            let as_postings = |slots: &Vec<u32>| {
                Postings::from_sorted(&slots.iter().map(|&s| posting(s)).collect::<Vec<_>>())
            };
            Lists::from_sorted(
                entries
                    .iter()
                    .map(|(id, s)| (*id, as_postings(s)))
                    .collect(),
            )
        };
        assert_eq!(contents(&rebuilt(&expected)), expected);
        let few = &expected[..100];
        let small = rebuilt(few);
        assert!(matches!(small, Lists::Sorted(_)));
        assert_eq!(contents(&small), few);
        assert!(small.get(few[50].0).is_some() && small.get(n + 1).is_none());
    }
}
