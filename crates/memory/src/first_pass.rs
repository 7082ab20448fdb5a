//! The binary first pass over one matrix of the vector index (see [`crate::sign_codes`]), through
//! the matrix's partition when it has one (see [`crate::partition`]).

use super::SessionMatrix;
use crate::dot::dot_i8_gather;
use crate::facets::FacetFilter;
use crate::sign_codes::SignCodes;
use crate::topk::TopK;

/// Rows sampled to estimate the share of rows a filter lets through.
const FILTER_SAMPLES: usize = 256;

#[cfg(test)]
thread_local! {
    /// The rows whose binary codes this thread's last first pass read.
    pub(super) static ROWS_READ: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The binary first pass over one matrix: the `want` allowed rows closest to the query in
/// Hamming distance, scored with the int8 kernel (gathered rows) into `top` as `(m, row)`. With
/// a partition, only the closest lists are read — enough of them to hold the measured share of
/// rows, twice `want`, and more as the filter lets fewer rows through — unless they hold fewer
/// than `want` allowed rows, when every row is read.
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
    filter: Option<&FacetFilter>,
    top: &mut TopK<(usize, usize)>,
    m: usize,
) {
    let mut rows = Vec::with_capacity(want + want / 4);
    let admit = |row: usize| filter.is_none_or(|f| f.allows(&matrix.facets[row]));
    let code = signs.query_code(query);
    let n = matrix.ids.len();
    // The rows whose codes were read: those of the closest lists, or all.
    let read = signs
        .partition()
        .and_then(|partition| {
            let share = partition.needed_share();
            let reach = (share * n as f64).max(2.0 * want as f64) / pass_rate(matrix, filter);
            if reach >= n as f64 {
                return None;
            }
            let order = partition.order(query);
            let (segments, held) = partition.reach(&order, reach.ceil() as usize);
            if held >= n {
                return None;
            }
            signs.candidates_among(&code, &segments, want, admit, &mut rows);
            if rows.len() < want {
                // Too few allowed rows in those lists: read them all.
                rows.clear();
                return None;
            }
            Some(held)
        })
        .unwrap_or_else(|| {
            signs.candidates(&code, want, admit, &mut rows);
            n
        });
    #[cfg(test)]
    ROWS_READ.set(read);
    tracing::trace!(read, rows = n, want, "first pass");
    let mut dots = vec![0i32; rows.len()];
    dot_i8_gather(
        query_codes,
        &matrix.codes,
        query_codes.len(),
        &rows,
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

/// The share of rows `filter` lets through, estimated on evenly spaced rows (at least one
/// sampled row's worth, so that a filter none of them passed reads every row).
fn pass_rate(matrix: &SessionMatrix, filter: Option<&FacetFilter>) -> f64 {
    let Some(filter) = filter else {
        return 1.0;
    };
    let n = matrix.facets.len();
    let samples = n.clamp(1, FILTER_SAMPLES);
    let allowed = (0..samples)
        .filter_map(|s| matrix.facets.get(s * n / samples))
        .filter(|facets| filter.allows(facets))
        .count();
    allowed.max(1) as f64 / samples as f64
}
