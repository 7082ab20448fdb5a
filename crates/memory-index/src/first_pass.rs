//! The binary first pass over one matrix of the vector index (see [`crate::sign_codes`]).

use super::SessionMatrix;
use crate::dot::dot_i8_gather;
use crate::sign_codes::SignCodes;
use crate::topk::TopK;

/// The binary first pass over one matrix: the `want` rows closest to the query in Hamming
/// distance that `admit` accepts (the search's filter, and in the pool the sessions searched),
/// scored with the int8 kernel (gathered rows) into `top` as `(m, row)`.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site; the scan's state, passed rather than bundled for one call"
)]
pub(super) fn first_pass(
    matrix: &SessionMatrix,
    signs: &SignCodes,
    query: &[f32],
    query_codes: &[i8],
    want: usize,
    admit: &dyn Fn(usize) -> bool,
    top: &mut TopK<(usize, usize)>,
    m: usize,
) {
    let mut rows = Vec::with_capacity(want + want / 4);
    signs.candidates(&signs.query_code(query), want, admit, &mut rows);
    scored(matrix, query_codes, &rows, top, m);
}

/// Scores the gathered `rows` of `matrix` with the int8 kernel into `top` as `(m, row)`.
pub(super) fn scored(
    matrix: &SessionMatrix,
    query_codes: &[i8],
    rows: &[u32],
    top: &mut TopK<(usize, usize)>,
    m: usize,
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
            top.offer(approx, (m, row));
        }
    }
}
