//! A span of time over a matrix's rows, read from their time keys alone: how many rows it may
//! hold, which ones, and the first pass's distances with the others pushed out of every band.
//!
//! A query naming a time reads a matrix's keys two or three times before any vector (is the span
//! narrow? which rows? their distances?): at 100,000 rows, 0.1 ms a pass one key at a time. A key
//! is an `i64` and SSE2, the x86-64 baseline, has no 64-bit compare, so LLVM keeps these loops
//! scalar; compiled again with AVX2 (checked at run time, the check cached by `std`) the same
//! loops compare four keys per instruction. Each answer is the portable loop's, whichever runs.
//!
//! With [`crate::dot`], [`crate::hamming`] and `huge_pages.rs`, the only module with `unsafe`:
//! three `#[target_feature]` copies of the portable loops, called only after the feature check.

use crate::facets::KeyWindow;

/// Rows listed per group: a group without a row inside is passed over by one test.
const GROUP: usize = 16;

/// How many of `keys` `window` may allow.
pub fn count_within(keys: &[i64], window: KeyWindow) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return avx2::count_within(keys, window);
        }
    }
    count_portable(keys, window)
}

/// Appends to `out` the rows (indices of `keys`) that `window` may allow, ascending.
pub fn rows_within(keys: &[i64], window: KeyWindow, out: &mut Vec<u32>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return avx2::rows_within(keys, window, out);
        }
    }
    rows_portable(keys, window, out);
}

/// Writes to `out` each row's distance from `dist` when `window` may allow its key, else
/// `outside`.
pub fn distances_within(
    dist: &[u16],
    keys: &[i64],
    window: KeyWindow,
    outside: u16,
    out: &mut Vec<u16>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return avx2::distances_within(dist, keys, window, outside, out);
        }
    }
    distances_portable(dist, keys, window, outside, out);
}

#[inline(always)]
fn count_portable(keys: &[i64], window: KeyWindow) -> usize {
    keys.iter().map(|&key| usize::from(window.holds(key))).sum()
}

#[inline(always)]
fn rows_portable(keys: &[i64], window: KeyWindow, out: &mut Vec<u32>) {
    for (group, keys) in keys.chunks(GROUP).enumerate() {
        // One bit per row of the group, set without a branch (vectorized).
        let mask = keys.iter().enumerate().fold(0u32, |mask, (i, &key)| {
            mask | (u32::from(window.holds(key)) << i)
        });
        let mut rest = mask;
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            out.push(row_u32(group * GROUP + i));
        }
    }
}

#[inline(always)]
fn distances_portable(
    dist: &[u16],
    keys: &[i64],
    window: KeyWindow,
    outside: u16,
    out: &mut Vec<u16>,
) {
    out.clear();
    out.extend(
        dist.iter()
            .zip(keys)
            .map(|(&d, &key)| match window.holds(key) {
                true => d,
                false => outside,
            }),
    );
}

/// Row indices fit in `u32` (the index holds far fewer than 4 billion rows).
fn row_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

#[cfg(target_arch = "x86_64")]
#[allow(
    unsafe_code,
    reason = "AVX2 copies of portable loops: #[target_feature] functions called only after a runtime check"
)]
mod avx2 {
    use super::{KeyWindow, count_portable, distances_portable, rows_portable};

    /// Safe wrapper: callers have checked that the CPU supports AVX2.
    pub(super) fn count_within(keys: &[i64], window: KeyWindow) -> usize {
        debug_assert!(std::arch::is_x86_feature_detected!("avx2"));
        // SAFETY: `time_keys::count_within` calls this only when AVX2 was detected at run time.
        unsafe { count(keys, window) }
    }

    /// Safe wrapper: callers have checked that the CPU supports AVX2.
    pub(super) fn rows_within(keys: &[i64], window: KeyWindow, out: &mut Vec<u32>) {
        debug_assert!(std::arch::is_x86_feature_detected!("avx2"));
        // SAFETY: `time_keys::rows_within` calls this only when AVX2 was detected at run time.
        unsafe { rows(keys, window, out) }
    }

    /// Safe wrapper: callers have checked that the CPU supports AVX2.
    pub(super) fn distances_within(
        dist: &[u16],
        keys: &[i64],
        window: KeyWindow,
        outside: u16,
        out: &mut Vec<u16>,
    ) {
        debug_assert!(std::arch::is_x86_feature_detected!("avx2"));
        // SAFETY: `time_keys::distances_within` calls this only when AVX2 was detected.
        unsafe { distances(dist, keys, window, outside, out) }
    }

    #[target_feature(enable = "avx2")]
    fn count(keys: &[i64], window: KeyWindow) -> usize {
        count_portable(keys, window)
    }

    #[target_feature(enable = "avx2")]
    fn rows(keys: &[i64], window: KeyWindow, out: &mut Vec<u32>) {
        rows_portable(keys, window, out);
    }

    #[target_feature(enable = "avx2")]
    fn distances(dist: &[u16], keys: &[i64], window: KeyWindow, outside: u16, out: &mut Vec<u16>) {
        distances_portable(dist, keys, window, outside, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facets::NO_KEY;

    /// Keys on both sides of each bound, keys that are no time, an open side: whichever loop
    /// runs (AVX2 on this machine when it has it), each answer is the portable loop's and the
    /// one a key at a time.
    #[test]
    fn each_answer_is_the_one_key_at_a_time() {
        let keys: Vec<i64> = (0..1_000i64)
            .map(|i| match i % 97 {
                0 => NO_KEY,
                _ => (i * 7_919) % 2_000 - 500,
            })
            .collect();
        let dist: Vec<u16> = (0..keys.len()).map(|i| (i % 300) as u16).collect();
        for (low, high) in [(0, 999), (i64::MIN, 10), (-3, i64::MAX), (5, 4), (7, 7)] {
            let window = KeyWindow::new(low, high);
            for n in [0, 1, 15, 16, 17, 999, 1_000] {
                let (keys, dist) = (&keys[..n], &dist[..n]);
                let inside: Vec<u32> = (0..n)
                    .filter(|&r| window.holds(keys[r]))
                    .map(row_u32)
                    .collect();
                assert_eq!(count_within(keys, window), inside.len());
                assert_eq!(count_portable(keys, window), inside.len());
                let (mut rows, mut portable) = (vec![9], vec![9]);
                rows_within(keys, window, &mut rows);
                rows_portable(keys, window, &mut portable);
                assert_eq!(rows[1..], inside[..], "{low}..={high}, {n} rows");
                assert_eq!(portable[1..], inside[..]);
                let (mut near, mut near_portable) = (vec![1], vec![1]);
                distances_within(dist, keys, window, u16::MAX, &mut near);
                distances_portable(dist, keys, window, u16::MAX, &mut near_portable);
                let expected: Vec<u16> = (0..n)
                    .map(|r| match window.holds(keys[r]) {
                        true => dist[r],
                        false => u16::MAX,
                    })
                    .collect();
                assert_eq!(near, expected);
                assert_eq!(near_portable, expected);
            }
        }
    }
}
