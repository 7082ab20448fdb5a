//! The x86-64 kernels of [`super::distances`]: `popcnt`, AVX2 (a nibble-table count) and
//! AVX-512 `VPOPCNTDQ`. Each is a `#[target_feature]` function behind a safe wrapper that the
//! dispatcher calls only after the run-time check of its features ([`super::Kernel::available`]).
#![allow(
    unsafe_code,
    reason = "#[target_feature] functions called only after a runtime check of their features"
)]

use super::QueryCode;
use std::arch::x86_64::{
    __m256i, _mm256_add_epi8, _mm256_add_epi64, _mm256_and_si256, _mm256_blend_epi32,
    _mm256_loadu_si256, _mm256_permute2x128_si256, _mm256_sad_epu8, _mm256_set1_epi8,
    _mm256_setr_epi8, _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_srli_epi16,
    _mm256_storeu_si256, _mm256_unpackhi_epi64, _mm256_unpacklo_epi64, _mm256_xor_si256,
};

/// A query plane's six words repeated four times: one copy per row of a four-row block.
fn repeated(plane: &[u64]) -> [u64; 24] {
    std::array::from_fn(|i| plane.get(i % 6).copied().unwrap_or(0))
}

/// A four-row block's distances, its 24 words, and what is left of both for the portable loop.
type Blocks<'a> = (
    &'a mut [[u16; 4]],
    &'a [[u64; 24]],
    &'a mut [u16],
    &'a [u64],
);

/// `codes` (six words a row) and `out` cut into whole four-row blocks and the rest.
fn blocks<'a>(codes: &'a [u64], out: &'a mut [u16]) -> Blocks<'a> {
    let quads = (codes.len() / 24).min(out.len() / 4);
    let (head, tail) = out.split_at_mut(quads * 4);
    let (outs, _) = head.as_chunks_mut::<4>();
    let (rows, rest) = codes.split_at(quads * 24);
    (outs, rows.as_chunks::<24>().0, tail, rest)
}

/// Safe wrapper: callers have checked that the CPU supports `popcnt`.
pub(super) fn rows_popcnt(query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    debug_assert!(std::arch::is_x86_feature_detected!("popcnt"));
    // SAFETY: the dispatcher calls this only when popcnt was detected at run time.
    unsafe { distances_popcnt(query, codes, out) }
}

/// The portable loop compiled with `popcnt` enabled: `count_ones` becomes the instruction.
#[target_feature(enable = "popcnt")]
unsafe fn distances_popcnt(query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    super::distances_portable(query, codes, out);
}

/// Safe wrapper: callers have checked that the CPU supports AVX-512F and VPOPCNTDQ, and that
/// codes have 6 words (384 dimensions).
pub(super) fn rows_384_avx512(query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    debug_assert!(std::arch::is_x86_feature_detected!("avx512vpopcntdq"));
    // SAFETY: the dispatcher calls this only when both features were detected.
    unsafe { hamming_384_avx512(query, codes, out) }
}

/// Four rows (24 words, three 512-bit registers) at a time: XOR with the query repeated, AND with
/// its mask, a population count per word, and the words of each row added up; the rest row by
/// row.
#[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
unsafe fn hamming_384_avx512(query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    use std::arch::x86_64::{
        __m512i, _mm512_and_si512, _mm512_loadu_si512, _mm512_mask_reduce_add_epi64,
        _mm512_popcnt_epi64, _mm512_xor_si512,
    };
    let repeat = |plane: &[u64]| -> [__m512i; 3] {
        let pattern = repeated(plane);
        let (patterns, _) = pattern.as_chunks::<8>();
        // SAFETY: each chunk is 8 words (64 bytes); unaligned loads are allowed.
        std::array::from_fn(|k| unsafe {
            _mm512_loadu_si512(patterns[k].as_ptr().cast::<__m512i>())
        })
    };
    if query.words() != 6 {
        return;
    }
    let (p, mask) = (repeat(&query.bits), repeat(&query.mask));
    let (outs, rows, tail, rest) = blocks(codes, out);
    for (o, quad) in outs.iter_mut().zip(rows) {
        let (words, _) = quad.as_chunks::<8>();
        let c: [__m512i; 3] = std::array::from_fn(|k| {
            // SAFETY: as above, 64-byte unaligned loads of whole chunks.
            let w = unsafe { _mm512_loadu_si512(words[k].as_ptr().cast::<__m512i>()) };
            _mm512_popcnt_epi64(_mm512_and_si512(_mm512_xor_si512(w, p[k]), mask[k]))
        });
        let [c0, c1, c2] = c;
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
    super::distances_portable(query, rest, tail);
}

/// Safe wrapper: callers have checked that the CPU supports AVX2 and that codes have 6 words
/// (384 dimensions).
pub(super) fn rows_384_avx2(query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    debug_assert!(std::arch::is_x86_feature_detected!("avx2"));
    // SAFETY: the dispatcher calls this only when AVX2 was detected at run time.
    unsafe { hamming_384_avx2(query, codes, out) }
}

/// Bits set in each byte of `x`: two lookups of 4-bit halves in a 16-entry table (`vpshufb`).
#[inline]
#[target_feature(enable = "avx2")]
fn byte_counts(x: __m256i) -> __m256i {
    let table = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let low = _mm256_set1_epi8(0x0F);
    let lo = _mm256_and_si256(x, low);
    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(x), low);
    _mm256_add_epi8(
        _mm256_shuffle_epi8(table, lo),
        _mm256_shuffle_epi8(table, hi),
    )
}

/// The byte counts of one row's words (two registers' worth, ≤ 16 a byte) summed per 64-bit lane.
#[inline]
#[target_feature(enable = "avx2")]
fn row_lanes(whole: __m256i, part: __m256i) -> __m256i {
    _mm256_sad_epu8(_mm256_add_epi8(whole, part), _mm256_setzero_si256())
}

/// Four rows (24 words, six 256-bit registers) at a time. Per register the bits of the XOR under
/// the query's mask are counted per byte (≤ 8); the bytes of a row are added (≤ 16 a byte), summed
/// per 64-bit lane against zero (`vpsadbw`), and the four rows' lanes are transposed and added so
/// one register holds the four distances.
#[target_feature(enable = "avx2")]
unsafe fn hamming_384_avx2(query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    let zero = _mm256_setzero_si256();
    let repeat = |plane: &[u64]| -> [__m256i; 6] {
        let pattern = repeated(plane);
        let (patterns, _) = pattern.as_chunks::<4>();
        // SAFETY: each chunk is 4 words (32 bytes); unaligned loads are allowed.
        std::array::from_fn(|k| unsafe {
            _mm256_loadu_si256(patterns[k].as_ptr().cast::<__m256i>())
        })
    };
    if query.words() != 6 {
        return;
    }
    let (p, mask) = (repeat(&query.bits), repeat(&query.mask));
    let (outs, rows, tail, rest) = blocks(codes, out);
    for (o, quad) in outs.iter_mut().zip(rows) {
        let (words, _) = quad.as_chunks::<4>();
        let c: [__m256i; 6] = std::array::from_fn(|k| {
            // SAFETY: as above, 32-byte unaligned loads of whole chunks.
            let w = unsafe { _mm256_loadu_si256(words[k].as_ptr().cast::<__m256i>()) };
            byte_counts(_mm256_and_si256(_mm256_xor_si256(w, p[k]), mask[k]))
        });
        // Registers 1 and 4 hold two words of each neighbouring row (low and high 128 bits).
        let r0 = row_lanes(c[0], _mm256_blend_epi32::<0xF0>(c[1], zero));
        let r1 = row_lanes(c[2], _mm256_blend_epi32::<0x0F>(c[1], zero));
        let r2 = row_lanes(c[3], _mm256_blend_epi32::<0xF0>(c[4], zero));
        let r3 = row_lanes(c[5], _mm256_blend_epi32::<0x0F>(c[4], zero));
        // r_k's four lanes add up to row k's distance.
        let u01 = _mm256_add_epi64(_mm256_unpacklo_epi64(r0, r1), _mm256_unpackhi_epi64(r0, r1));
        let u23 = _mm256_add_epi64(_mm256_unpacklo_epi64(r2, r3), _mm256_unpackhi_epi64(r2, r3));
        let sums = _mm256_add_epi64(
            _mm256_permute2x128_si256::<0x20>(u01, u23),
            _mm256_permute2x128_si256::<0x31>(u01, u23),
        );
        let mut lanes = [0u64; 4];
        // SAFETY: a 32-byte unaligned store into a 32-byte array.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast::<__m256i>(), sums) };
        for (o, s) in o.iter_mut().zip(lanes) {
            *o = u16::try_from(s).unwrap_or(u16::MAX);
        }
    }
    super::distances_portable(query, rest, tail);
}
