//! The shared matrix of the sessions too small for one of their own.
//!
//! A user's conversations are hundreds of sessions of a few hundred turns each. Each with its own
//! matrix, a search of all of them scanned every row exactly, one small matrix after another (none
//! reaching the binary first pass's [`crate::APPROX_MIN_ROWS`]), and looked each session up by name
//! at every step. Here every session below that size keeps its rows in one matrix, each row tagged
//! with its session's number: a search of many small sessions is one search of this matrix, its
//! binary first pass (once the pool is large enough) admitting only the rows of the sessions
//! searched, and a search of a few is a scan of just their rows (each session's rows are listed).
//! The pool is measured and probed like any matrix ([`crate::calibration`]). A session that
//! reaches [`crate::APPROX_MIN_ROWS`] rows moves to a matrix of its own ([`Pool::take`]) and stays
//! there.

use std::collections::HashMap;

use super::SessionMatrix;
use crate::facets::ChunkFacets;

#[derive(Debug, Default)]
pub(super) struct Pool {
    pub(super) matrix: SessionMatrix,
    /// Per row: its session's number.
    pub(super) tags: Vec<u32>,
    /// Per session number: its rows, in no order (empty for a free number).
    pub(super) members: Vec<Vec<u32>>,
    /// Per session number: its name (empty for a free number).
    pub(super) names: Vec<String>,
    numbers: HashMap<String, u32>,
    free: Vec<u32>,
}

/// The sessions of a search that are in the pool.
#[derive(Debug, Default)]
pub(super) struct Selection {
    /// By session number.
    chosen: Vec<bool>,
    /// The session numbers chosen, each once.
    numbers: Vec<u32>,
    /// Their rows.
    pub(super) rows: usize,
}

impl Selection {
    /// Whether row `row` of the pool belongs to a chosen session.
    pub(super) fn admits(&self, pool: &Pool, row: usize) -> bool {
        pool.tags
            .get(row)
            .is_some_and(|&t| self.chosen.get(t as usize).copied().unwrap_or(false))
    }

    /// The rows of the chosen sessions, ascending (read in memory order).
    pub(super) fn rows_of(&self, pool: &Pool) -> Vec<u32> {
        let mut rows: Vec<u32> = self
            .numbers
            .iter()
            .flat_map(|&n| pool.members[n as usize].iter().copied())
            .collect();
        rows.sort_unstable();
        rows
    }
}

impl Pool {
    pub(super) fn number(&self, session: &str) -> Option<u32> {
        self.numbers.get(session).copied()
    }

    /// Rows of session number `n`.
    pub(super) fn rows_of(&self, n: u32) -> usize {
        self.members.get(n as usize).map_or(0, Vec::len)
    }

    /// The pooled sessions among `sessions`.
    pub(super) fn select(&self, sessions: &[String]) -> Selection {
        let mut selection = Selection {
            chosen: vec![false; self.names.len()],
            ..Selection::default()
        };
        for n in sessions.iter().filter_map(|s| self.number(s)) {
            if !std::mem::replace(&mut selection.chosen[n as usize], true) {
                selection.numbers.push(n);
                selection.rows += self.rows_of(n);
            }
        }
        selection
    }

    /// The row of `session`'s chunk `chunk_id`, if it is here.
    pub(super) fn row_of(&self, session: &str, chunk_id: i64) -> Option<usize> {
        let n = self.number(session)?;
        let &row = self.matrix.rows.get(&chunk_id)?;
        (self.tags[row] == n).then_some(row)
    }

    /// Sets `session`'s chunk `chunk_id`; returns the session's number.
    pub(super) fn upsert(
        &mut self,
        dims: usize,
        session: &str,
        chunk_id: i64,
        vector: &[f32],
        facets: &ChunkFacets,
    ) -> u32 {
        let n = self.number_or_insert(session);
        // A chunk id names one chunk: were it filed under another session, it leaves that one.
        if let Some(&row) = self.matrix.rows.get(&chunk_id)
            && self.tags[row] != n
        {
            self.remove_row(dims, chunk_id);
        }
        let rows = self.matrix.ids.len();
        let row = self.matrix.upsert(dims, chunk_id, vector, facets);
        if row == rows {
            self.tags.push(n);
            self.members[n as usize].push(row_u32(row));
        }
        n
    }

    /// Removes `session`'s chunk `chunk_id` (nothing when it is not that session's); whether a
    /// row left.
    pub(super) fn remove(&mut self, dims: usize, session: &str, chunk_id: i64) -> bool {
        let here = self.row_of(session, chunk_id).is_some();
        if here {
            self.remove_row(dims, chunk_id);
        }
        here
    }

    /// Removes a chunk's row: the last row moves into its place, in its session's list too.
    fn remove_row(&mut self, dims: usize, chunk_id: i64) {
        let Some((row, last)) = self.matrix.remove(dims, chunk_id) else {
            return;
        };
        let n = self.tags[row];
        let list = &mut self.members[n as usize];
        if let Some(at) = list.iter().position(|&r| r as usize == row) {
            list.swap_remove(at);
        }
        if row != last {
            let moved = self.tags[last];
            self.tags[row] = moved;
            let list = &mut self.members[moved as usize];
            if let Some(r) = list.iter_mut().find(|r| **r as usize == last) {
                *r = row_u32(row);
            }
        }
        self.tags.truncate(last);
        if self.members[n as usize].is_empty() {
            self.release(n);
        }
    }

    fn number_or_insert(&mut self, session: &str) -> u32 {
        if let Some(n) = self.number(session) {
            return n;
        }
        let n = match self.free.pop() {
            Some(n) => n,
            None => {
                self.members.push(Vec::new());
                self.names.push(String::new());
                row_u32(self.names.len() - 1)
            }
        };
        self.names[n as usize] = session.to_owned();
        self.numbers.insert(session.to_owned(), n);
        n
    }

    fn release(&mut self, n: u32) {
        let name = std::mem::take(&mut self.names[n as usize]);
        self.numbers.remove(&name);
        self.members[n as usize] = Vec::new();
        self.free.push(n);
    }

    /// Takes session number `n`'s rows out into a matrix of its own (no binary codes yet), in
    /// the order they lie here.
    pub(super) fn take(&mut self, dims: usize, n: u32) -> SessionMatrix {
        let mut rows = self.members.get(n as usize).cloned().unwrap_or_default();
        rows.sort_unstable();
        let mut own = SessionMatrix::default();
        for &row in &rows {
            let row = row as usize;
            let m = &self.matrix;
            let codes = (m.row(dims, row), m.scales[row]);
            own.upsert_coded(dims, m.ids[row], codes, m.facets[row].clone());
        }
        for &id in &own.ids {
            self.remove_row(dims, id);
        }
        own
    }

    /// A pool read back: its matrix, the rows' session numbers and the sessions' names by number
    /// (empty for a free one); `None` when they disagree.
    pub(super) fn from_parts(
        matrix: SessionMatrix,
        tags: Vec<u32>,
        names: Vec<String>,
    ) -> Option<Self> {
        let mut pool = Self {
            matrix,
            tags,
            names,
            ..Self::default()
        };
        (pool.tags.len() == pool.matrix.ids.len() && pool.index_members()).then_some(pool)
    }

    /// Rebuilds the session lists and numbers from the rows' tags and the sessions' names;
    /// false when they disagree.
    fn index_members(&mut self) -> bool {
        self.members = vec![Vec::new(); self.names.len()];
        for (row, &n) in self.tags.iter().enumerate() {
            match self.members.get_mut(n as usize) {
                Some(list) if !self.names[n as usize].is_empty() => list.push(row_u32(row)),
                _ => return false,
            }
        }
        self.numbers.clear();
        self.free.clear();
        for (n, name) in self.names.iter().enumerate() {
            let n = row_u32(n);
            if name.is_empty() {
                self.free.push(n);
            } else if self.numbers.insert(name.clone(), n).is_some() {
                return false;
            }
        }
        self.members
            .iter()
            .zip(&self.names)
            .all(|(m, name)| m.is_empty() == name.is_empty())
    }
}

/// Rows and session numbers fit in `u32` (the index holds far fewer than 4 billion rows).
fn row_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}
