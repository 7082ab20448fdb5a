//! A cache of the keyword leg's per-term match counts, kept exact by the writer thread.
//!
//! Planning the keyword leg (see [`crate::keyword`]) needs, for every query term, the number of
//! chunks it matches in the whole FTS table, capped just above the match budget. Counting costs an
//! index walk per term (~0.16 ms per search at 10k chunks, ~0.4 ms at 100k), and the answer only
//! changes when the FTS table does. So the counts are kept here between writes.
//!
//! Exactness: every job on the writer thread ends with [`TermCounts::invalidate`], which empties
//! the cache and starts a new generation, before the write's caller sees its result (and even when
//! that caller has stopped waiting). A reader stores counts only under the generation it read
//! before counting: counts taken from a snapshot older than some write are dropped, never served.
//! The terms are the query's own (before FTS5's stemming and folding), so a write cannot tell which
//! of them it changed; it drops them all. The database stays the truth: an empty cache only means
//! counting again.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Past this many cached terms the cache starts over (a bound on memory, not a tuning knob).
const MAX_TERMS: usize = 8192;

#[derive(Debug, Default)]
pub(crate) struct TermCounts {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    generation: u64,
    counts: HashMap<String, i64>,
}

/// The cached counts of some terms, and the generation they (and any count taken now) belong to.
#[derive(Debug, PartialEq)]
pub(crate) struct Snapshot {
    pub(crate) generation: u64,
    /// One entry per term asked for, `None` when it is not cached.
    pub(crate) counts: Vec<Option<i64>>,
}

impl TermCounts {
    fn state(&self) -> MutexGuard<'_, State> {
        // Plain data, updated whole under the lock: still consistent after a panic elsewhere.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached counts of `terms`. Read the generation before counting the missing ones.
    pub(crate) fn get(&self, terms: &[String]) -> Snapshot {
        let state = self.state();
        Snapshot {
            generation: state.generation,
            counts: terms.iter().map(|t| state.counts.get(t).copied()).collect(),
        }
    }

    /// Keeps counts taken after [`TermCounts::get`] returned `generation`, unless a write has
    /// ended since (then they may predate it and are dropped).
    pub(crate) fn put(&self, generation: u64, counted: &[(&String, i64)]) {
        let mut state = self.state();
        if state.generation != generation {
            return;
        }
        if state.counts.len() + counted.len() > MAX_TERMS {
            state.counts.clear();
        }
        for (term, n) in counted {
            state.counts.insert((*term).clone(), *n);
        }
    }

    /// Called on the writer thread after every write job: forget everything.
    pub(crate) fn invalidate(&self) {
        let mut state = self.state();
        state.generation = state.generation.wrapping_add(1);
        state.counts.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn counts_are_kept_until_a_write_and_never_from_before_it() {
        let cache = TermCounts::default();
        let (tea, kyoto) = ("tea".to_owned(), "kyoto".to_owned());
        let first = cache.get(&terms(&["tea", "kyoto"]));
        assert_eq!(
            first,
            Snapshot {
                generation: 0,
                counts: vec![None, None]
            }
        );
        cache.put(first.generation, &[(&tea, 3), (&kyoto, 1001)]);
        assert_eq!(
            cache.get(&terms(&["kyoto", "x", "tea"])),
            Snapshot {
                generation: 0,
                counts: vec![Some(1001), None, Some(3)]
            }
        );
        // A write ends: everything goes, and counts taken before it are refused.
        let before = cache.get(&terms(&["tea"]));
        cache.invalidate();
        cache.put(before.generation, &[(&tea, 3)]);
        assert_eq!(
            cache.get(&terms(&["tea", "kyoto"])),
            Snapshot {
                generation: 1,
                counts: vec![None, None]
            }
        );
        cache.put(1, &[(&tea, 4)]);
        assert_eq!(cache.get(&terms(&["tea"])).counts, vec![Some(4)]);
    }

    #[test]
    fn bounded() {
        let cache = TermCounts::default();
        let many: Vec<String> = (0..MAX_TERMS + 10).map(|i| format!("t{i}")).collect();
        for t in &many {
            cache.put(0, &[(t, 1)]);
        }
        assert!(cache.state().counts.len() <= MAX_TERMS);
    }

    /// Through the store: after every kind of write, the counts a search plans with are the
    /// database's (a cache kept across a write would give the old ones).
    #[tokio::test]
    async fn counts_after_every_kind_of_write_are_the_databases() {
        use std::sync::Arc;

        use chrono::Utc;
        use types::{NoteId, UserId};

        use crate::keyword::term_counts;
        use crate::notes::{ExportedNote, NoteMetadata};
        use crate::{HashEmbedder, MemoryStore};

        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::open_local(
            &dir.path().join("memory.db"),
            Arc::new(HashEmbedder::new(16)),
        )
        .await
        .unwrap();
        let user = UserId::parse("alice").unwrap();
        // (what the search planner sees, a fresh count from the database) for "tea".
        let counts = async |store: &MemoryStore| {
            let cache = Arc::clone(&store.inner.term_counts);
            store
                .read(move |conn| async move {
                    let tea = ["tea".to_owned()];
                    let planned = term_counts(&conn, &tea, &cache).await?;
                    let fresh = term_counts(&conn, &tea, &TermCounts::default()).await?;
                    Ok((planned[0], fresh[0]))
                })
                .await
                .unwrap()
        };
        let first = store
            .store_note(&user, "tea in Kyoto", NoteMetadata::default())
            .await
            .unwrap();
        let second = store
            .store_note(&user, "green tea, hot", NoteMetadata::default())
            .await
            .unwrap();
        assert_eq!(counts(&store).await, (2, 2));
        // Cached now: asked again, it answers without counting.
        assert_eq!(
            store.inner.term_counts.get(&terms(&["tea"])).counts,
            [Some(2)]
        );

        store
            .store_note(&user, "teas and a teapot", NoteMetadata::default())
            .await
            .unwrap();
        assert_eq!(counts(&store).await, (3, 3), "after a save");
        store
            .update_note(&user, &first.note_id, "coffee in Kyoto")
            .await
            .unwrap();
        assert_eq!(counts(&store).await, (2, 2), "after an update");
        store.delete_note(&user, &second.note_id).await.unwrap();
        assert_eq!(counts(&store).await, (1, 1), "after a delete");
        let now = Utc::now();
        let imported = ExportedNote {
            note_id: NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string()).unwrap(),
            content: "tea ceremony".to_owned(),
            metadata: NoteMetadata::default(),
            created_at: now,
            updated_at: now,
        };
        store.import_notes(&user, vec![imported]).await.unwrap();
        assert_eq!(counts(&store).await, (2, 2), "after an import");
        let generation = store.inner.term_counts.get(&[]).generation;
        store.reindex(|_, _| {}).await.unwrap();
        assert!(store.inner.term_counts.get(&[]).generation > generation);
        assert_eq!(
            store.inner.term_counts.get(&terms(&["tea"])).counts,
            [None],
            "a reindex empties the cache"
        );
        assert_eq!(counts(&store).await, (2, 2), "after a reindex");
    }
}
