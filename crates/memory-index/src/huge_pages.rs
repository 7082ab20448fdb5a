//! The large arrays of the vector index on transparent huge pages where Linux offers them.
//!
//! The first pass's candidates are int8 rows gathered at random from a matrix of tens of
//! megabytes: with 4 KiB pages nearly every row is a miss of the address cache (TLB) as well
//! as of the data caches, and the page walk costs as much as the row. Measured on a host whose
//! caches other work had just evicted (docs/benchmarks.md, *Huge pages for the gathered rows*),
//! 5,200 rows of a 42 MB matrix took 1.7 ms on 4 KiB pages and
//! 0.37 ms on 2 MiB ones. An array at least a huge page long is advised (`MADV_HUGEPAGE`)
//! before its memory is first touched, so the kernel backs it with huge pages from the first
//! fault where its `transparent_hugepage` setting is `madvise` or `always` (with `never`, or off
//! Linux, nothing changes).

use std::ffi::c_void;

/// A huge page on x86-64 and AArch64 with 4 KiB base pages; a smaller array cannot use one.
const HUGE_PAGE: usize = 2 << 20;

/// `Vec::with_capacity(capacity)`, its memory advised to use huge pages before any is touched.
pub(crate) fn vec_with_capacity<T>(capacity: usize) -> Vec<T> {
    let values: Vec<T> = Vec::with_capacity(capacity);
    advise(
        values.as_ptr().cast::<c_void>(),
        values.capacity().saturating_mul(size_of::<T>()),
    );
    values
}

/// Makes room in `values` for `needed` values in all. A large array grows into a new buffer
/// (at least twice the old) advised before the old values are copied in: a reallocation by the
/// allocator would touch the new memory first.
pub(crate) fn reserve<T: Copy>(values: &mut Vec<T>, needed: usize) {
    if needed <= values.capacity() {
        return;
    }
    if needed.saturating_mul(size_of::<T>()) < HUGE_PAGE {
        values.reserve(needed - values.len());
        return;
    }
    let mut grown = vec_with_capacity(needed.max(values.capacity().saturating_mul(2)));
    grown.extend_from_slice(values);
    *values = grown;
}

/// Advises the whole pages of `bytes` bytes at `start` to use huge pages (an advice: failure
/// changes nothing but speed, and is not reported).
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "madvise(MADV_HUGEPAGE) on memory this process owns: no contents change"
)]
fn advise(start: *const c_void, bytes: usize) {
    if bytes < HUGE_PAGE {
        return;
    }
    let page = rustix::param::page_size();
    let skip = start.align_offset(page);
    let Some(len) = bytes.checked_sub(skip).map(|left| left / page * page) else {
        return;
    };
    if len == 0 {
        return;
    }
    let first = start.wrapping_byte_add(skip).cast_mut();
    // SAFETY: `first..first + len` lies inside one live allocation of this process (the caller's
    // buffer, page-aligned inward); MADV_HUGEPAGE only changes how its pages are backed, never
    // their contents, so no reference to the memory is invalidated.
    let _ = unsafe { rustix::mm::madvise(first, len, rustix::mm::Advice::LinuxHugepage) };
}

#[cfg(not(target_os = "linux"))]
fn advise(_start: *const c_void, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grown_array_keeps_its_values_and_room() {
        let mut small: Vec<i8> = (0..100).map(|i| i as i8).collect();
        reserve(&mut small, 1_000);
        assert!(small.capacity() >= 1_000);
        assert_eq!(small, (0..100).map(|i| i as i8).collect::<Vec<_>>());
        // Past a huge page: a fresh, advised buffer of at least twice the old room.
        let mut large: Vec<u32> = (0..(HUGE_PAGE / 4) as u32).collect();
        let before = large.capacity();
        reserve(&mut large, before + 1);
        assert!(large.capacity() >= 2 * before);
        assert!(large.iter().enumerate().all(|(i, &v)| v as usize == i));
        large.resize(before + 10, 7);
        assert_eq!(large[before + 9], 7);
        let advised: Vec<u64> = vec_with_capacity(HUGE_PAGE);
        assert!(advised.capacity() >= HUGE_PAGE && advised.is_empty());
    }

    /// The advice reaches the kernel: the mapping holding a large array is flagged for huge
    /// pages (`hg` among its `VmFlags` in `/proc/self/smaps`), and a grown matrix's new buffer too.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_array_is_flagged_for_huge_pages() {
        let flags_at = |addr: usize| -> String {
            let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
            let mut inside = false;
            for line in smaps.lines() {
                let range = line
                    .split_whitespace()
                    .next()
                    .and_then(|r| r.split_once('-'));
                if let Some((lo, hi)) = range
                    && let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = (lo..hi).contains(&addr);
                } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.to_owned();
                }
            }
            panic!("no mapping holds {addr:#x}");
        };
        let flagged = |addr: usize| flags_at(addr).split_whitespace().any(|f| f == "hg");
        let advised: Vec<u8> = vec_with_capacity(8 * HUGE_PAGE);
        assert!(flagged(advised.as_ptr().addr() + 4 * HUGE_PAGE));
        // Not every mapping is: the flag is the advice's, not the system's setting. (Over 32 MiB,
        // glibc's largest threshold, an allocation is always a fresh mapping of its own.)
        let plain: Vec<u8> = Vec::with_capacity(40 << 20);
        assert!(!flagged(plain.as_ptr().addr() + 4 * HUGE_PAGE));
        let mut grown: Vec<i8> = vec![1; 1024];
        reserve(&mut grown, 4 * HUGE_PAGE);
        assert!(flagged(grown.as_ptr().addr() + 2 * HUGE_PAGE));
        assert!(grown.iter().all(|&v| v == 1) && grown.len() == 1024);
    }
}
