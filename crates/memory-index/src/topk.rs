//! Keeping the best `k` scores of a scan: a bounded heap whose top is the worst score kept.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A score and what it belongs to; ordered worst first (reversed) for the heap.
#[derive(Debug, PartialEq)]
pub struct Scored<T>(pub f32, pub T);

impl<T: Ord> Eq for Scored<T> {}

impl<T: Ord> Ord for Scored<T> {
    // Reversed: the heap's top is the worst kept score, ready to be evicted.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .total_cmp(&self.0)
            .then_with(|| self.1.cmp(&other.1))
    }
}

impl<T: Ord> PartialOrd for Scored<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Keeps the `limit` best scores seen.
#[derive(Debug)]
pub struct TopK<T> {
    limit: usize,
    heap: BinaryHeap<Scored<T>>,
}

impl<T: Ord> TopK<T> {
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            heap: BinaryHeap::with_capacity(limit.min(4096) + 1),
        }
    }

    /// The worst score kept, once `limit` are kept.
    pub fn floor(&self) -> Option<f32> {
        (self.heap.len() >= self.limit)
            .then(|| self.heap.peek().map(|worst| worst.0))
            .flatten()
    }

    pub fn offer(&mut self, score: f32, item: T) {
        if self.heap.len() < self.limit {
            self.heap.push(Scored(score, item));
        } else if let Some(mut worst) = self.heap.peek_mut()
            && score > worst.0
        {
            // Replaced in place: one sift down, where a pop and a push sift twice.
            *worst = Scored(score, item);
        }
    }

    /// Like [`Self::offer`], but an equal score replaces the worst kept when `item` orders
    /// before it: the items kept are then the same whatever order they are offered in.
    pub fn offer_ordered(&mut self, score: f32, item: T) {
        let scored = Scored(score, item);
        if self.heap.len() < self.limit {
            self.heap.push(scored);
        } else if let Some(mut worst) = self.heap.peek_mut()
            && scored < *worst
        {
            *worst = scored;
        }
    }

    /// Best first.
    pub fn into_sorted(self) -> Vec<(T, f32)> {
        // Ascending by `Ord` is best-first, since the order is reversed.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|Scored(s, item)| (item, s))
            .collect()
    }
}
