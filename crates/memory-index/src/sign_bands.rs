//! The rows of the binary first pass's nearest distance bands that a filter admits
//! ([`crate::sign_codes::SignCodes::candidates_each`]): band after band from a histogram of the
//! distances, and for a filter with a span of time, the bands of the rows created inside it only.
//!
//! A span holding a tenth of the rows would otherwise read bands ten times as wide: every row of
//! the matrix near the query, nine in ten of them asked about and refused, in several passes as
//! the cut-off moves out by the share let through. Reading the time keys once instead (one
//! compare per row, no call) gives the span's own histogram: its first band holds about the rows
//! wanted, and the filter is asked about rows inside the span only.

use std::cell::RefCell;

use crate::facets::FacetFilter;
use crate::time_keys::distances_within;

thread_local! {
    /// The distances of the rows inside a span, the others at [`OUTSIDE`]; reused like the
    /// distances themselves.
    static WITHIN: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
}

/// The distance of a row outside the span: beyond any band.
const OUTSIDE: u16 = u16::MAX;

/// A filter's span of time over a matrix: each row's time key, and the filter bounding them.
#[derive(Debug, Clone, Copy)]
pub struct Span<'a> {
    pub keys: &'a [i64],
    pub filter: &'a FacetFilter,
}

/// [`bands`] over the rows of `dist` whose time key `span` may allow (`buckets` distances
/// `0..buckets`); the others are never in a band, and `admit` is never asked about them.
pub(super) fn within(
    dist: &[u16],
    buckets: usize,
    span: Span<'_>,
    want: usize,
    admit: &dyn Fn(usize) -> bool,
    out: &mut Vec<u32>,
) {
    debug_assert_eq!(span.keys.len(), dist.len());
    WITHIN.with_borrow_mut(|inside| {
        distances_within(dist, span.keys, span.filter.key_window(), OUTSIDE, inside);
        let mut histogram = vec![0usize; buckets];
        for &d in inside.iter() {
            if let Some(count) = histogram.get_mut(usize::from(d)) {
                *count += 1;
            }
        }
        bands(inside, &histogram, want, admit, out);
    });
}

/// Appends to `out` the rows of the nearest distance bands (by `histogram` of `dist`) that
/// `admit` accepts, band after band until `want` were admitted.
pub(super) fn bands(
    dist: &[u16],
    histogram: &[usize],
    want: usize,
    admit: &dyn Fn(usize) -> bool,
    out: &mut Vec<u32>,
) {
    // Bands of distances `low..=high`, read until enough rows were admitted.
    let (mut low, mut read, mut admitted) = (0usize, 0usize, 0usize);
    while admitted < want && low < histogram.len() {
        let target = band_rows(want - admitted, read, admitted);
        let mut high = low;
        let mut rows = histogram[low];
        while rows < target && high + 1 < histogram.len() {
            high += 1;
            rows += histogram[high];
        }
        if rows > 0 {
            let span = high - low;
            // One unsigned compare: `low <= d <= high`.
            let in_band = |d: u16| usize::from(d).wrapping_sub(low) <= span;
            // Most rows lie outside the band: sixteen at a time are skipped with one
            // branchless test (vectorized), and only groups holding one are read row by row.
            for (group, ds) in dist.chunks(16).enumerate() {
                if !ds.iter().fold(false, |any, &d| any | in_band(d)) {
                    continue;
                }
                for (i, &d) in ds.iter().enumerate() {
                    let row = group * 16 + i;
                    if in_band(d) && admit(row) {
                        out.push(row_u32(row));
                        admitted += 1;
                    }
                }
            }
        }
        read += rows;
        low = high + 1;
    }
}

/// Rows the next band should hold so that `need` more rows get admitted, from the share of rows
/// admitted so far (all of them without a filter): at least `need`, twice what was read when
/// nothing was admitted yet.
fn band_rows(need: usize, read: usize, admitted: usize) -> usize {
    match (read, admitted) {
        (0, _) => need,
        (_, 0) => need.max(read.saturating_mul(2)),
        _ => need.saturating_mul(read.div_ceil(admitted)),
    }
}

/// Row indices fit in `u32` (the index holds far fewer than 4 billion rows).
fn row_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use chrono::{DateTime, Duration, Utc};

    use super::*;
    use crate::facets::time_key;
    use crate::filters::{QueryFilters, Scope, time_text};

    fn day(n: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).expect("a time") + Duration::days(n)
    }

    /// 10,000 rows, row `r` created on day `r / 10` at distance `(r · 37) % 97` from the query;
    /// a span of days 300 to 400 (rows 3,000 to 3,999). The rows taken are the span's nearest,
    /// the filter is never asked about a row outside it, and one in three it refuses is made up
    /// from the next band.
    #[test]
    fn a_span_reads_only_its_own_rows_nearest_first() {
        let rows = 10_000usize;
        let dist: Vec<u16> = (0..rows).map(|r| ((r * 37) % 97) as u16).collect();
        let keys: Vec<i64> = (0..rows)
            .map(|r| time_key(&time_text(day(r as i64 / 10))))
            .collect();
        let filter = FacetFilter::new(Scope {
            filters: QueryFilters {
                created_after: Some(day(300)),
                created_before: Some(day(400)),
                ..QueryFilters::default()
            },
            expired_at: None,
        });
        let inside = |r: usize| (3_000..4_000).contains(&r);
        let asked_outside = Cell::new(0);
        let admit = |r: usize| {
            asked_outside.set(asked_outside.get() + usize::from(!inside(r)));
            !r.is_multiple_of(3)
        };
        let span = Span {
            keys: &keys,
            filter: &filter,
        };
        let mut out = Vec::new();
        within(&dist, 97, span, 100, &admit, &mut out);
        assert_eq!(asked_outside.get(), 0);
        assert!(out.len() >= 100, "{} taken", out.len());
        assert!(
            out.iter()
                .all(|&r| inside(r as usize) && !r.is_multiple_of(3))
        );
        // Nearest first: no admitted row of the span left out is nearer than one taken.
        let farthest = out.iter().map(|&r| dist[r as usize]).max().expect("rows");
        let left_nearer = (3_000..4_000)
            .filter(|&r: &usize| !r.is_multiple_of(3) && !out.contains(&(r as u32)))
            .any(|r| dist[r] < farthest);
        assert!(!left_nearer);
        // The whole matrix's bands, without the span, ask about rows everywhere.
        let histogram = (0..97u16).fold(vec![0usize; 97], |mut h, d| {
            h[usize::from(d)] = dist.iter().filter(|&&x| x == d).count();
            h
        });
        let mut all = Vec::new();
        bands(&dist, &histogram, 100, &admit, &mut all);
        assert!(asked_outside.get() > 0);
    }
}
