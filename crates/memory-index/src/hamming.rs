//! The Hamming distance of the vector leg's binary first pass.
//!
//! A row's binary code is one bit per dimension packed in `u64` words; the distance to the
//! query's code is the number of differing bits (XOR, then a population count). x86-64's baseline
//! has no `popcnt` instruction, so portable Rust counts bits with a dozen shifts and masks per
//! word; with `popcnt` (checked at run time, the check is cached by `std`) it is one instruction.
//! With AVX-512 `VPOPCNTDQ` (e.g. AMD Zen 4, Intel Ice Lake) 384-dimension codes are counted four
//! rows at a time in 512-bit registers: at a million rows 2.0 ms where `popcnt` took 3.8 ms (the
//! pass then reads its 48 MB at the memory's speed). Every other CPU gets the portable loop
//! (AArch64 has a vector bit count LLVM uses on its own).
//!
//! This module and [`crate::dot`] are the only ones with `unsafe`: `#[target_feature]` functions,
//! called only after the feature check.

/// `out[r] = popcount(query XOR codes[r·w .. (r+1)·w])` with `w = query.len()` words, for every
/// whole row of `codes` (at most `out.len()`): one dispatch per block of rows, not per row.
pub fn hamming_rows(query: &[u64], codes: &[u64], out: &mut [u16]) {
    if query.is_empty() {
        out.iter_mut().for_each(|o| *o = 0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if query.len() == 6
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
        {
            return popcnt::hamming_rows_384_avx512(query, codes, out);
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            return popcnt::hamming_rows(query, codes, out);
        }
    }
    hamming_rows_portable(query, codes, out);
}

/// The fallback (and the reference the tests compare the fast path with). Inlined into the
/// `popcnt` path, which compiles this same loop with the instruction enabled.
#[inline]
pub fn hamming_rows_portable(query: &[u64], codes: &[u64], out: &mut [u16]) {
    // Common widths get a loop of fixed length, unrolled: no per-row loop over words.
    match query.len() {
        6 => rows_of::<6>(query, codes, out),
        12 => rows_of::<12>(query, codes, out),
        24 => rows_of::<24>(query, codes, out),
        words => {
            for (o, row) in out.iter_mut().zip(codes.chunks_exact(words)) {
                *o = distance(query, row);
            }
        }
    }
}

/// [`hamming_rows_portable`] for codes of `W` words (384, 768 and 1536 dimensions).
#[inline(always)]
fn rows_of<const W: usize>(query: &[u64], codes: &[u64], out: &mut [u16]) {
    let Ok(query) = <&[u64; W]>::try_from(query) else {
        return;
    };
    let (rows, _) = codes.as_chunks::<W>();
    for (o, row) in out.iter_mut().zip(rows) {
        let bits: u32 = (0..W).map(|i| (query[i] ^ row[i]).count_ones()).sum();
        *o = u16::try_from(bits).unwrap_or(u16::MAX);
    }
}

/// Differing bits of two codes (at most 64 × words; a code has at most 2^10 words here, as
/// dimensions ≤ 65,535 keep every distance in `u16`).
#[inline(always)]
fn distance(a: &[u64], b: &[u64]) -> u16 {
    let bits: u32 = a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum();
    u16::try_from(bits).unwrap_or(u16::MAX)
}

#[cfg(target_arch = "x86_64")]
#[allow(
    unsafe_code,
    reason = "the popcnt instruction: a #[target_feature] function called only after a runtime check"
)]
mod popcnt {
    /// Safe wrapper: callers have checked that the CPU supports `popcnt`.
    pub(super) fn hamming_rows(query: &[u64], codes: &[u64], out: &mut [u16]) {
        debug_assert!(std::arch::is_x86_feature_detected!("popcnt"));
        // SAFETY: `hamming::hamming_rows` calls this only when popcnt was detected at run time.
        unsafe { hamming_rows_popcnt(query, codes, out) }
    }

    /// The portable loop compiled with `popcnt` enabled: `count_ones` becomes the instruction.
    #[target_feature(enable = "popcnt")]
    unsafe fn hamming_rows_popcnt(query: &[u64], codes: &[u64], out: &mut [u16]) {
        super::hamming_rows_portable(query, codes, out);
    }

    /// Safe wrapper: callers have checked that the CPU supports AVX-512F and VPOPCNTDQ, and that
    /// codes have 6 words (384 dimensions).
    pub(super) fn hamming_rows_384_avx512(query: &[u64], codes: &[u64], out: &mut [u16]) {
        debug_assert!(std::arch::is_x86_feature_detected!("avx512vpopcntdq"));
        // SAFETY: `hamming::hamming_rows` calls this only when both features were detected.
        unsafe { rows_384_avx512(query, codes, out) }
    }

    /// Four rows (24 words, three 512-bit registers) at a time: XOR with the query repeated,
    /// a population count per word, and the words of each row added up; the rest row by row.
    #[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
    unsafe fn rows_384_avx512(query: &[u64], codes: &[u64], out: &mut [u16]) {
        use std::arch::x86_64::{
            __m512i, _mm512_loadu_si512, _mm512_mask_reduce_add_epi64, _mm512_popcnt_epi64,
            _mm512_xor_si512,
        };
        let Ok(q) = <&[u64; 6]>::try_from(query) else {
            return;
        };
        let pattern: [u64; 24] = std::array::from_fn(|i| q[i % 6]);
        let (patterns, _) = pattern.as_chunks::<8>();
        // SAFETY: each chunk is 8 words (64 bytes); unaligned loads are allowed.
        let [p0, p1, p2] = std::array::from_fn(|k| unsafe {
            _mm512_loadu_si512(patterns[k].as_ptr().cast::<__m512i>())
        });
        let quads = (codes.len() / 24).min(out.len() / 4);
        let (head, tail) = out.split_at_mut(quads * 4);
        let (outs, _) = head.as_chunks_mut::<4>();
        let (rows, _) = codes[..quads * 24].as_chunks::<24>();
        for (o, quad) in outs.iter_mut().zip(rows) {
            let (words, _) = quad.as_chunks::<8>();
            // SAFETY: as above, 64-byte unaligned loads of whole chunks.
            let [w0, w1, w2] = std::array::from_fn(|k| unsafe {
                _mm512_loadu_si512(words[k].as_ptr().cast::<__m512i>())
            });
            let c0 = _mm512_popcnt_epi64(_mm512_xor_si512(w0, p0));
            let c1 = _mm512_popcnt_epi64(_mm512_xor_si512(w1, p1));
            let c2 = _mm512_popcnt_epi64(_mm512_xor_si512(w2, p2));
            // Row k's six words are lanes 6k..6k+6 of the three registers.
            let sums = [
                _mm512_mask_reduce_add_epi64(0x3F, c0),
                _mm512_mask_reduce_add_epi64(0xC0, c0) + _mm512_mask_reduce_add_epi64(0x0F, c1),
                _mm512_mask_reduce_add_epi64(0xF0, c1) + _mm512_mask_reduce_add_epi64(0x03, c2),
                _mm512_mask_reduce_add_epi64(0xFC, c2),
            ];
            for (o, s) in o.iter_mut().zip(sums) {
                *o = u16::try_from(s).unwrap_or(u16::MAX);
            }
        }
        super::hamming_rows_portable(query, &codes[quads * 24..], tail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_and_portable_paths_count_differing_bits() {
        let mut seed = 5u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            seed
        };
        for words in [1, 2, 6, 7, 12, 24] {
            let query: Vec<u64> = (0..words).map(|_| next()).collect();
            let codes: Vec<u64> = (0..words * 33).map(|_| next()).collect();
            let naive: Vec<u16> = codes
                .chunks_exact(words)
                .map(|row| {
                    let mut bits = 0u16;
                    for (q, r) in query.iter().zip(row) {
                        for b in 0..64 {
                            bits += u16::from((q >> b) & 1 != (r >> b) & 1);
                        }
                    }
                    bits
                })
                .collect();
            let mut out = vec![0u16; 33];
            hamming_rows(&query, &codes, &mut out);
            assert_eq!(out, naive, "dispatched, {words} words");
            hamming_rows_portable(&query, &codes, &mut out);
            assert_eq!(out, naive, "portable, {words} words");
            // Fewer outputs than rows (the wide path counts four rows at a time).
            let mut short = vec![0u16; 10];
            hamming_rows(&query, &codes, &mut short);
            assert_eq!(short, naive[..10], "dispatched into 10, {words} words");
        }
        // Extremes: identical and complementary codes.
        let mut out = [9u16; 2];
        hamming_rows(&[u64::MAX; 6], &[[u64::MAX; 6], [0; 6]].concat(), &mut out);
        assert_eq!(out, [0, 384]);
    }
}
