//! Live recall probes of the vector index's binary first pass (see [`crate::calibration`]).

use std::sync::RwLock;

use super::{SessionMatrix, VectorIndex, read};
use crate::calibration::{MIN_ROWS, Probe, yield_to_searches};
use crate::dot::quantize;

/// Rows a recall probe reads under one hold of a matrix's read lock: ~0.1–0.25 ms of work, the
/// longest a save waits for a probe.
const PROBE_BLOCK: usize = 4 * 1024;

impl VectorIndex {
    /// Measures how far the first pass must reach for `query`'s exact top ten in each of the
    /// coded matrices searched for `sessions` (the pool's among them), and raises their
    /// candidate counts when it must reach further.
    /// Takes each matrix's read lock one block of rows at a time (a writer waits for one block,
    /// never for the whole probe); rows a writer moves meanwhile blur the estimate by a row or two.
    pub fn check_recall(&self, sessions: &[String], query: &[f32]) {
        let dims = self.dims;
        let mut query_codes = vec![0i8; dims];
        if query.len() != dims || quantize(query, &mut query_codes) == 0.0 {
            return;
        }
        for matrix in self.matrices_of(sessions) {
            self.probe(&matrix, |m| m, query, &query_codes);
        }
        if read(&self.pool).select(sessions).rows > 0 {
            self.probe(&self.pool, |p| &p.matrix, query, &query_codes);
        }
    }

    /// One matrix's probe (`matrix_of` finds it under the lock).
    fn probe<T>(
        &self,
        lock: &RwLock<T>,
        matrix_of: impl Fn(&T) -> &SessionMatrix,
        query: &[f32],
        query_codes: &[i8],
    ) {
        let dims = self.dims;
        let query_code = {
            let guard = read(lock);
            let m = matrix_of(&guard);
            match m.signs.as_ref().filter(|_| m.ids.len() >= MIN_ROWS) {
                Some(signs) => signs.query_code(query),
                None => return,
            }
        };
        let words = query_code.words();
        let mut probe = Probe::new(&query_code);
        let mut first = 0;
        loop {
            yield_to_searches(&self.searching);
            let guard = read(lock);
            let m = matrix_of(&guard);
            let Some(signs) = m.signs.as_ref().filter(|s| s.words() == words) else {
                break;
            };
            let end = m.ids.len().min(first + PROBE_BLOCK);
            if first >= end {
                break;
            }
            probe.add(
                query_codes,
                &query_code,
                first,
                &m.codes[first * dims..end * dims],
                &m.scales[first..end],
                &signs.bits()[first * words..end * words],
                None,
            );
            first = end;
        }
        let shares = probe.shares();
        let guard = read(lock);
        if let Some(signs) = matrix_of(&guard).signs.as_ref() {
            signs.observe(&shares);
        }
    }
}
