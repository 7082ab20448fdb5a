//! The int8 dot product of the vector scan.
//!
//! The i8 product is the inner loop of the vector scan. Portable Rust compiles to SSE2 on x86-64,
//! which has no fast widening i8 multiply, so the scan would be no faster than f32; with AVX2 the
//! kernel multiplies 32 bytes per step (`vpmaddubsw` on one side's magnitudes and the other side
//! carrying its sign, `vpmaddwd` to i32): half the instructions of sign-extending 16 bytes to i16
//! and `vpmaddwd`, what it did before (docs/benchmarks.md, *The int8 kernel*). AVX2 is used when
//! the CPU has it (checked at run time, the check is cached by `std`); every other CPU gets the
//! portable loop, which LLVM vectorizes well on AArch64 (NEON is baseline there).
//!
//! Codes are within `-127..=127`, as [`quantize`] writes them (a snapshot holding `-128` is
//! refused at load): the AVX2 kernel's pairs of products then never saturate.
//!
//! This module, [`crate::hamming`], [`crate::time_keys`] and `huge_pages.rs` (one `madvise`) are
//! the only ones with `unsafe`: one `#[target_feature]` function here, called only after the
//! feature check.

/// Width of the unrolled portable loop: 16 independent accumulators let LLVM use full registers.
const LANES: usize = 16;

/// Largest code magnitude: symmetric, so that `-code` is always representable.
pub const CODE_MAX: f32 = 127.0;

/// Writes the int8 codes of `v` into `codes` and returns the scale (`v ≈ scale · codes`).
/// A zero or non-finite vector gets scale 0 and zero codes: it matches nothing.
pub fn quantize(v: &[f32], codes: &mut [i8]) -> f32 {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !(max > 0.0 && max.is_finite()) || v.iter().any(|x| !x.is_finite()) {
        codes.iter_mut().for_each(|c| *c = 0);
        return 0.0;
    }
    let scale = max / CODE_MAX;
    for (c, x) in codes.iter_mut().zip(v) {
        // In range by construction (|x| ≤ max); the clamp only guards rounding.
        *c = (x / scale).round().clamp(-CODE_MAX, CODE_MAX) as i8;
    }
    scale
}

/// `Σ q[i]·codes[i]` (one row of the rescoring; the caller multiplies by the row's scale).
/// [`LANES`] independent sums: a single running sum is a chain of dependent additions LLVM may not
/// reorder (float addition is not associative), which made the rescoring of 200 rows cost as much
/// as an int8 scan of a few thousand.
pub fn dot_f32_i8(query: &[f32], codes: &[i8]) -> f32 {
    let n = query.len().min(codes.len());
    let (query, codes) = (&query[..n], &codes[..n]);
    let mut acc = [0f32; LANES];
    let blocks_q = query.chunks_exact(LANES);
    let blocks_c = codes.chunks_exact(LANES);
    let (rest_q, rest_c) = (blocks_q.remainder(), blocks_c.remainder());
    for (q, c) in blocks_q.zip(blocks_c) {
        for i in 0..LANES {
            acc[i] += q[i] * f32::from(c[i]);
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (q, c) in rest_q.iter().zip(rest_c) {
        sum += q * f32::from(*c);
    }
    sum
}

/// `out[i] = query · codes[rows[i]·dims ..][..dims]` (the candidates of the first pass, gathered; a row
/// index out of range scores 0).
pub fn dot_i8_gather(query: &[i8], codes: &[i8], dims: usize, rows: &[u32], out: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return avx2::dot_i8_gather(query, codes, dims, rows, out);
        }
    }
    for (o, &row) in out.iter_mut().zip(rows) {
        let start = row as usize * dims;
        *o = codes
            .get(start..start + dims)
            .map_or(0, |r| dot_i8_portable(query, r));
    }
}

/// `Σ a[i]·b[i]` over the common length, exact in i32 (for up to 2^17 components of ±127; codes
/// within `-127..=127`).
#[cfg(test)]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return avx2::dot_i8(a, b);
        }
    }
    dot_i8_portable(a, b)
}

/// The int8 rows and scales of `vectors` (all of one length), as the vector index keeps them; for
/// tests that build binary codes and probes from rows.
#[cfg(test)]
pub fn int8_rows(vectors: &[Vec<f32>]) -> (Vec<i8>, Vec<f32>) {
    let dims = vectors.first().map_or(0, Vec::len);
    let mut codes = vec![0i8; vectors.len() * dims];
    let scales = vectors
        .iter()
        .zip(codes.chunks_exact_mut(dims.max(1)))
        .map(|(v, c)| quantize(v, c))
        .collect();
    (codes, scales)
}

/// `out[r] = query · rows[r·dims .. (r+1)·dims]` for every whole row of `rows` (at most
/// `out.len()`): one dispatch per block of rows, not per row.
pub fn dot_i8_rows(query: &[i8], rows: &[i8], dims: usize, out: &mut [i32]) {
    if dims == 0 {
        out.iter_mut().for_each(|o| *o = 0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return avx2::dot_i8_rows(query, rows, dims, out);
        }
    }
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(dims)) {
        *o = dot_i8_portable(query, row);
    }
}

/// The fallback: 16 i32 accumulators, vectorized by LLVM where the target allows.
pub fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0i32; LANES];
    let blocks_a = a.chunks_exact(LANES);
    let blocks_b = b.chunks_exact(LANES);
    let (rest_a, rest_b) = (blocks_a.remainder(), blocks_b.remainder());
    for (x, y) in blocks_a.zip(blocks_b) {
        for i in 0..LANES {
            acc[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    let mut sum: i32 = acc.iter().sum();
    for (x, y) in rest_a.iter().zip(rest_b) {
        sum += i32::from(*x) * i32::from(*y);
    }
    sum
}

#[cfg(target_arch = "x86_64")]
#[allow(
    unsafe_code,
    reason = "AVX2 intrinsics: a #[target_feature] function called only after a runtime check"
)]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _MM_HINT_T0, _mm_add_epi32, _mm_cvtsi128_si32, _mm_prefetch, _mm_shuffle_epi32,
        _mm256_abs_epi8, _mm256_add_epi32, _mm256_castsi256_si128, _mm256_extracti128_si256,
        _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16,
        _mm256_setzero_si256, _mm256_sign_epi8,
    };

    /// The gather asks for the row this many candidates ahead while it scores one (measured at a
    /// million rows: 8,000 gathered rows took 1.6–2.9 ms without, see docs/benchmarks.md).
    const PREFETCH_AHEAD: usize = 8;

    /// Safe wrapper: callers have checked that the CPU supports AVX2.
    #[cfg(test)]
    pub(super) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
        debug_assert!(std::arch::is_x86_feature_detected!("avx2"));
        // SAFETY: `dot::dot_i8` calls this only when AVX2 was detected at run time.
        unsafe { dot_i8_avx2(a, b) }
    }

    /// Safe wrapper: callers have checked that the CPU supports AVX2.
    pub(super) fn dot_i8_rows(query: &[i8], rows: &[i8], dims: usize, out: &mut [i32]) {
        debug_assert!(std::arch::is_x86_feature_detected!("avx2"));
        // SAFETY: `dot::dot_i8_rows` calls this only when AVX2 was detected at run time.
        unsafe { dot_i8_rows_avx2(query, rows, dims, out) }
    }

    /// Safe wrapper: callers have checked that the CPU supports AVX2.
    pub(super) fn dot_i8_gather(
        query: &[i8],
        codes: &[i8],
        dims: usize,
        rows: &[u32],
        out: &mut [i32],
    ) {
        debug_assert!(std::arch::is_x86_feature_detected!("avx2"));
        // SAFETY: `dot::dot_i8_gather` calls this only when AVX2 was detected at run time.
        unsafe { dot_i8_gather_avx2(query, codes, dims, rows, out) }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn dot_i8_gather_avx2(
        query: &[i8],
        codes: &[i8],
        dims: usize,
        rows: &[u32],
        out: &mut [i32],
    ) {
        for (i, (o, &row)) in out.iter_mut().zip(rows).enumerate() {
            // Rows lie anywhere in a matrix far larger than the caches: ask for the row
            // `PREFETCH_AHEAD` places on now, so that several rows come from memory at once.
            if let Some(&ahead) = rows.get(i + PREFETCH_AHEAD) {
                let start = ahead as usize * dims;
                if let Some(ahead) = codes.get(start..start + dims) {
                    // A prefetch is a hint that never faults; the addresses are inside `codes`.
                    for line in ahead.chunks(64) {
                        _mm_prefetch::<_MM_HINT_T0>(line.as_ptr());
                    }
                }
            }
            let start = row as usize * dims;
            let row = codes.get(start..start + dims).unwrap_or_default();
            // SAFETY: same target feature as this function (inlined).
            *o = unsafe { dot_i8_avx2(query, row) };
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn dot_i8_rows_avx2(query: &[i8], rows: &[i8], dims: usize, out: &mut [i32]) {
        for (o, row) in out.iter_mut().zip(rows.chunks_exact(dims)) {
            // SAFETY: same target feature as this function (inlined).
            *o = unsafe { dot_i8_avx2(query, row) };
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let ones = _mm256_set1_epi16(1);
        let mut acc = _mm256_setzero_si256();
        let mut blocks_a = a.chunks_exact(32);
        let mut blocks_b = b.chunks_exact(32);
        for (x, y) in blocks_a.by_ref().zip(blocks_b.by_ref()) {
            // SAFETY: each block is exactly 32 bytes; unaligned loads are allowed.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_si256(x.as_ptr().cast::<__m256i>()),
                    _mm256_loadu_si256(y.as_ptr().cast::<__m256i>()),
                )
            };
            // `vpmaddubsw` multiplies unsigned by signed bytes: |x| times y with x's sign, in
            // pairs summed to i16 (at most 2 · 127 · 127 = 32,258, no saturation while both
            // sides stay within ±127 as `quantize` writes them), then pairs of those to i32.
            let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(y, x));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
        }
        let halves = _mm_add_epi32(
            _mm256_castsi256_si128(acc),
            _mm256_extracti128_si256::<1>(acc),
        );
        let pairs = _mm_add_epi32(halves, _mm_shuffle_epi32::<0b01_00_11_10>(halves));
        let total = _mm_add_epi32(pairs, _mm_shuffle_epi32::<0b10_11_00_01>(pairs));
        let mut sum = _mm_cvtsi128_si32(total);
        for (x, y) in blocks_a.remainder().iter().zip(blocks_b.remainder()) {
            sum += i32::from(*x) * i32::from(*y);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_i8(a: &[i8], b: &[i8]) -> i32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum()
    }

    #[test]
    fn i8_paths_equal_naive_for_all_lengths() {
        // Codes as `quantize` writes them: -127..=127.
        let code = |i: usize, m: usize, a: usize| ((i * m + a) % 255) as i32 - 127;
        for n in [0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 384, 1536] {
            let a: Vec<i8> = (0..n).map(|i| code(i, 37, 11) as i8).collect();
            let b: Vec<i8> = (0..n).map(|i| code(i, 101, 3) as i8).collect();
            let naive = naive_i8(&a, &b);
            assert_eq!(dot_i8(&a, &b), naive, "dispatched, n={n}");
            assert_eq!(dot_i8_portable(&a, &b), naive, "portable, n={n}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                assert_eq!(avx2::dot_i8(&a, &b), naive, "avx2, n={n}");
            }
        }
        // Many rows at once, as the scan calls it.
        let dims = 40;
        let q: Vec<i8> = (0..dims).map(|i| code(i, 7, 0) as i8).collect();
        let rows: Vec<i8> = (0..dims * 9).map(|i| code(i, 13, 5) as i8).collect();
        let mut out = vec![0i32; 9];
        dot_i8_rows(&q, &rows, dims, &mut out);
        let naive: Vec<i32> = rows.chunks_exact(dims).map(|r| naive_i8(&q, r)).collect();
        assert_eq!(out, naive);
        // Gathered rows, in any order, past the prefetch distance; a row out of range scores 0.
        let picks: Vec<u32> = (0..40)
            .map(|i| (i * 7 % 9) as u32)
            .chain([9, 1000])
            .collect();
        let mut out = vec![-1i32; picks.len()];
        dot_i8_gather(&q, &rows, dims, &picks, &mut out);
        let expected: Vec<i32> = picks
            .iter()
            .map(|&r| naive.get(r as usize).copied().unwrap_or(0))
            .collect();
        assert_eq!(out, expected);
        // Extremes: every product at its largest magnitude, of either sign, and zeros.
        let lo = vec![-127i8; 384];
        let hi = vec![127i8; 384];
        assert_eq!(dot_i8(&lo, &lo), 384 * 127 * 127);
        assert_eq!(dot_i8(&lo, &hi), -384 * 127 * 127);
        assert_eq!(dot_i8(&hi, &lo), -384 * 127 * 127);
        let zeros = vec![0i8; 384];
        assert_eq!(dot_i8(&zeros, &hi), 0);
        assert_eq!(dot_i8(&hi, &zeros), 0);
        // Every pair of code values, at every position of a 32-byte step.
        let all: Vec<i8> = (-127..=127).collect();
        for x in -127i8..=127 {
            let a = vec![x; all.len()];
            assert_eq!(dot_i8(&a, &all), naive_i8(&a, &all), "x={x}");
            assert_eq!(dot_i8(&all, &a), naive_i8(&all, &a), "x={x}");
        }
        // Unequal lengths use the common prefix.
        assert_eq!(dot_i8(&hi[..20], &hi), 20 * 127 * 127);
        // The f32 × i8 rescoring, against a plain sum, at lengths around its lane count.
        for n in [0, 1, 15, 16, 17, 384] {
            let q: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let c: Vec<i8> = (0..n).map(|i| ((i * 101 + 3) % 251) as i8).collect();
            let naive: f32 = q.iter().zip(&c).map(|(x, y)| x * f32::from(*y)).sum();
            let got = dot_f32_i8(&q, &c);
            assert!(
                (got - naive).abs() <= 1e-3 * naive.abs().max(1.0),
                "n={n}: {got} vs {naive}"
            );
        }
    }
}
