//! The exact in-memory vector index that serves the vector leg of hybrid search.
//!
//! Vectors are durable in `chunk_vectors`; this index is a cache rebuilt from them at open. Per
//! session it keeps one contiguous row-major matrix of unit vectors plus a row → chunk id map, and
//! answers a query with an exact dot-product scan (cosine, since rows and query are normalized).
//! libSQL's own vector index and SQL brute force are one to two orders of magnitude slower.
//!
//! Each session's matrix sits behind its own `RwLock`: searches of different sessions never contend,
//! and a writer holds a lock only for a row copy. Locks are never held across `.await`. All changes
//! come from the writer thread right after a commit, so the index follows commit order.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Width of the unrolled inner loop: 16 independent accumulators let LLVM use full SIMD registers.
const LANES: usize = 16;

#[derive(Debug, Default)]
struct SessionMatrix {
    data: Vec<f32>,
    ids: Vec<i64>,
    rows: HashMap<i64, usize>,
}

impl SessionMatrix {
    fn upsert(&mut self, dims: usize, chunk_id: i64, vector: &[f32]) {
        match self.rows.get(&chunk_id) {
            Some(&row) => self.data[row * dims..(row + 1) * dims].copy_from_slice(vector),
            None => {
                self.rows.insert(chunk_id, self.ids.len());
                self.ids.push(chunk_id);
                self.data.extend_from_slice(vector);
            }
        }
    }

    /// Removes a row by moving the last row into its place.
    fn remove(&mut self, dims: usize, chunk_id: i64) {
        let Some(row) = self.rows.remove(&chunk_id) else {
            return;
        };
        let last = self.ids.len() - 1;
        if row != last {
            self.data
                .copy_within(last * dims..(last + 1) * dims, row * dims);
            let moved = self.ids[last];
            self.ids[row] = moved;
            self.rows.insert(moved, row);
        }
        self.ids.truncate(last);
        self.data.truncate(last * dims);
    }
}

/// One change to apply after a commit.
#[derive(Debug, Clone)]
pub(crate) enum IndexChange {
    Upsert {
        session: String,
        chunk_id: i64,
        vector: Vec<f32>,
    },
    Remove {
        session: String,
        chunk_id: i64,
    },
}

#[derive(Debug)]
pub(crate) struct VectorIndex {
    model_id: String,
    dims: usize,
    sessions: RwLock<HashMap<String, Arc<RwLock<SessionMatrix>>>>,
}

/// A poisoned lock only means another thread panicked mid-update of plain data; the data is
/// still a valid matrix (rows are copied whole), so keep serving.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl VectorIndex {
    pub(crate) fn new(model_id: &str, dims: usize) -> Self {
        Self {
            model_id: model_id.to_owned(),
            dims,
            sessions: RwLock::new(HashMap::new()),
        }
    }

    pub(crate) fn model_id(&self) -> &str {
        &self.model_id
    }

    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// Number of vectors held.
    pub(crate) fn len(&self) -> usize {
        read(&self.sessions)
            .values()
            .map(|m| read(m).ids.len())
            .sum()
    }

    /// Drops everything (before a full reload).
    pub(crate) fn clear(&self) {
        write(&self.sessions).clear();
    }

    pub(crate) fn apply(&self, changes: &[IndexChange]) {
        for change in changes {
            match change {
                IndexChange::Upsert {
                    session,
                    chunk_id,
                    vector,
                } => {
                    if vector.len() != self.dims {
                        tracing::warn!(chunk_id, "vector of the wrong size kept out of the index");
                        continue;
                    }
                    let matrix = self.matrix_or_insert(session);
                    write(&matrix).upsert(self.dims, *chunk_id, vector);
                }
                IndexChange::Remove { session, chunk_id } => {
                    let matrix = read(&self.sessions).get(session).cloned();
                    if let Some(matrix) = matrix {
                        write(&matrix).remove(self.dims, *chunk_id);
                    }
                }
            }
        }
    }

    fn matrix_or_insert(&self, session: &str) -> Arc<RwLock<SessionMatrix>> {
        if let Some(m) = read(&self.sessions).get(session) {
            return Arc::clone(m);
        }
        Arc::clone(write(&self.sessions).entry(session.to_owned()).or_default())
    }

    /// The `limit` chunks of `sessions` closest to `query`, best first, as (chunk id, cosine).
    /// Only chunks in `allowed` are considered when it is given. Cosines ≤ 0 are not matches.
    pub(crate) fn search(
        &self,
        sessions: &[String],
        query: &[f32],
        limit: usize,
        allowed: Option<&HashSet<i64>>,
    ) -> Vec<(i64, f32)> {
        if query.len() != self.dims || limit == 0 || query.iter().all(|x| *x == 0.0) {
            return Vec::new();
        }
        let matrices: Vec<Arc<RwLock<SessionMatrix>>> = {
            let map = read(&self.sessions);
            let mut seen = HashSet::new();
            sessions
                .iter()
                .filter(|s| seen.insert(s.as_str()))
                .filter_map(|s| map.get(s).cloned())
                .collect()
        };
        let mut top = TopK::new(limit);
        for matrix in &matrices {
            let m = read(matrix);
            for (row, &chunk_id) in m.ids.iter().enumerate() {
                if allowed.is_some_and(|a| !a.contains(&chunk_id)) {
                    continue;
                }
                let score = dot(query, &m.data[row * self.dims..(row + 1) * self.dims]);
                if score > 0.0 {
                    top.offer(score, chunk_id);
                }
            }
        }
        top.into_sorted()
    }
}

/// Dot product written so that LLVM vectorizes it: fixed-width blocks, independent accumulators.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let blocks_a = a.chunks_exact(LANES);
    let blocks_b = b.chunks_exact(LANES);
    let (rest_a, rest_b) = (blocks_a.remainder(), blocks_b.remainder());
    for (x, y) in blocks_a.zip(blocks_b) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (x, y) in rest_a.iter().zip(rest_b) {
        sum += x * y;
    }
    sum
}

#[derive(Debug, PartialEq)]
struct Scored(f32, i64);

impl Eq for Scored {}

impl Ord for Scored {
    // Reversed: the heap's top is the worst kept score, ready to be evicted.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .total_cmp(&self.0)
            .then_with(|| self.1.cmp(&other.1))
    }
}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Keeps the `limit` best scores seen.
struct TopK {
    limit: usize,
    heap: BinaryHeap<Scored>,
}

impl TopK {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            heap: BinaryHeap::with_capacity(limit + 1),
        }
    }

    fn offer(&mut self, score: f32, id: i64) {
        if self.heap.len() < self.limit {
            self.heap.push(Scored(score, id));
        } else if self.heap.peek().is_some_and(|worst| score > worst.0) {
            self.heap.pop();
            self.heap.push(Scored(score, id));
        }
    }

    fn into_sorted(self) -> Vec<(i64, f32)> {
        // Ascending by `Ord` is best-first, since the order is reversed.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|Scored(s, id)| (id, s))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let mut v = v.to_vec();
        crate::embedding::normalize(&mut v);
        v
    }

    fn upsert(session: &str, chunk_id: i64, v: &[f32]) -> IndexChange {
        IndexChange::Upsert {
            session: session.into(),
            chunk_id,
            vector: unit(v),
        }
    }

    #[test]
    fn dot_matches_naive_for_all_lengths() {
        for n in [0, 1, 15, 16, 17, 33, 384] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-4, "n={n}");
        }
    }

    #[test]
    fn search_is_exact_scoped_and_follows_changes() {
        let index = VectorIndex::new("m", 3);
        index.apply(&[
            upsert("s1", 1, &[1.0, 0.0, 0.0]),
            upsert("s1", 2, &[0.7, 0.7, 0.0]),
            upsert("s1", 3, &[0.0, 1.0, 0.0]),
            upsert("s2", 4, &[1.0, 0.0, 0.0]),
            upsert("s1", 5, &[-1.0, 0.0, 0.0]),
        ]);
        let ids = |r: Vec<(i64, f32)>| r.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
        let q = unit(&[1.0, 0.1, 0.0]);
        let s1 = ["s1".to_owned()];
        assert_eq!(ids(index.search(&s1, &q, 10, None)), [1, 2, 3]);
        assert_eq!(ids(index.search(&s1, &q, 1, None)), [1]);
        assert_eq!(
            ids(index.search(&["s1".into(), "s2".into()], &q, 2, None)),
            [1, 4]
        );
        let allowed: HashSet<i64> = [2, 3].into();
        assert_eq!(ids(index.search(&s1, &q, 10, Some(&allowed))), [2, 3]);
        // Remove the first row: the last row moves into its slot and stays findable.
        index.apply(&[IndexChange::Remove {
            session: "s1".into(),
            chunk_id: 1,
        }]);
        assert_eq!(ids(index.search(&s1, &q, 10, None)), [2, 3]);
        assert_eq!(
            ids(index.search(&s1, &unit(&[-1.0, 0.0, 0.0]), 10, None)),
            [5]
        );
        index.apply(&[upsert("s1", 3, &[1.0, 0.0, 0.0])]);
        assert_eq!(ids(index.search(&s1, &q, 10, None)), [3, 2]);
        assert_eq!(index.len(), 4);
        assert!(index.search(&s1, &[0.0, 0.0, 0.0], 10, None).is_empty());
        assert!(index.search(&["nope".into()], &q, 10, None).is_empty());
    }
}
