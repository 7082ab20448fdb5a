//! Scoring of gathered rows, for the binary first pass's candidates and a narrow span's rows
//! (see [`crate::sign_codes`] and `vector_index_search.rs`); the candidates of several filters
//! (a query naming a time: the whole and its span) gathered once for all.

use std::cell::RefCell;

use super::SessionMatrix;
use crate::dot::dot_i8_gather;

thread_local! {
    /// Per row of the matrix being scored, the filters whose candidates hold it (bit `p` for
    /// list `p`); all zero between calls of [`scored_each`].
    static LISTED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Lists of candidates [`scored_each`] takes at most (one bit each).
pub(super) const MOST_LISTS: usize = 8;

/// Scores the gathered `rows` of `matrix` with the int8 kernel, handing each row's score to
/// `offer` as `(score, row)` (cosines ≤ 0 are not matches and are left out).
pub(super) fn scored(
    matrix: &SessionMatrix,
    query_codes: &[i8],
    rows: &[u32],
    offer: &mut dyn FnMut(f32, usize),
) {
    let mut dots = vec![0i32; rows.len()];
    dot_i8_gather(
        query_codes,
        &matrix.codes,
        query_codes.len(),
        rows,
        &mut dots,
    );
    for (&row, &dot) in rows.iter().zip(&dots) {
        let row = row as usize;
        // As in the exact scan, cosines ≤ 0 are not matches.
        let approx = dot as f32 * matrix.scales[row];
        if approx > 0.0 {
            offer(approx, row);
        }
    }
}

/// [`scored`] for several lists of candidates of one matrix (at most [`MOST_LISTS`]): a row in
/// more than one list is gathered and scored once, and offered as `(list, score, row)` to every
/// list holding it. A query naming a time takes its whole's and its span's candidates from one
/// first pass, and a wide span's are mostly the whole's.
pub(super) fn scored_each(
    matrix: &SessionMatrix,
    query_codes: &[i8],
    lists: &[Vec<u32>],
    offer: &mut dyn FnMut(usize, f32, usize),
) {
    if let [only] = lists {
        return scored(matrix, query_codes, only, &mut |s, row| offer(0, s, row));
    }
    LISTED.with_borrow_mut(|listed| {
        listed.resize(matrix.ids.len().max(listed.len()), 0);
        let mut union = Vec::with_capacity(lists.iter().map(Vec::len).max().unwrap_or(0));
        for (p, rows) in lists.iter().enumerate().take(MOST_LISTS) {
            for &row in rows {
                let Some(bits) = listed.get_mut(row as usize) else {
                    continue;
                };
                if *bits == 0 {
                    union.push(row);
                }
                *bits |= 1 << p;
            }
        }
        scored(matrix, query_codes, &union, &mut |s, row| {
            let bits = listed[row];
            for p in (0..MOST_LISTS).filter(|p| bits & (1 << p) != 0) {
                offer(p, s, row);
            }
        });
        // Rows scoring ≤ 0 were not offered; every listed row is cleared all the same.
        for &row in &union {
            listed[row as usize] = 0;
        }
    });
}
