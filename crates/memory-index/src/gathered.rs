//! Scoring of gathered rows, for the binary first pass's candidates and a narrow span's rows
//! (see [`crate::sign_codes`] and `vector_index_search.rs`).

use super::SessionMatrix;
use crate::dot::dot_i8_gather;

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
