//! The Hamming distance of the vector leg's binary first pass.
//!
//! A row's binary code is one bit per dimension packed in `u64` words; the distance to the
//! query's code is the number of differing bits (XOR, then a population count). x86-64's baseline
//! has no `popcnt` instruction, so portable Rust counts bits with a dozen shifts and masks per
//! word; with `popcnt` (checked at run time, the check is cached by `std`) it is one instruction.
//! With AVX-512 `VPOPCNTDQ` (e.g. AMD Zen 4, Intel Ice Lake) 384-dimension codes are counted four
//! rows at a time in 512-bit registers: at a million rows 2.0 ms where `popcnt` took 3.8 ms (the
//! pass then reads its 48 MB at the memory's speed). Other widths take `popcnt`, other CPUs the
//! portable loop (AArch64 has a vector bit count LLVM uses on its own).
//!
//! Without AVX-512, AVX2 (e.g. Intel Haswell to Alder Lake, AMD Zen 1–3) counts the same four rows
//! in six 256-bit registers: each byte's bits by two lookups of its 4-bit halves in a 16-entry
//! table (`vpshufb`), the bytes of a row summed with `vpsadbw`.
//!
//! This module and [`crate::dot`] are the only ones with `unsafe`: `#[target_feature]` functions
//! (in `x86.rs`), called only after the feature check.

use std::sync::atomic::{AtomicU8, Ordering};

#[cfg(target_arch = "x86_64")]
mod x86;

/// The ways of counting differing bits, fastest last. The dispatcher picks the fastest the CPU
/// has; benches and tests may force one ([`force_kernel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Plain Rust (`count_ones` without `popcnt`: shifts and masks).
    Portable,
    /// The portable loop compiled with the `popcnt` instruction.
    Popcnt,
    /// 384-dimension codes, four rows at a time in AVX2 registers (a nibble-table count).
    Avx2,
    /// 384-dimension codes, four rows at a time with AVX-512 `VPOPCNTDQ`.
    Avx512,
}

impl Kernel {
    pub const ALL: [Self; 4] = [Self::Portable, Self::Popcnt, Self::Avx2, Self::Avx512];

    pub fn name(self) -> &'static str {
        match self {
            Self::Portable => "portable",
            Self::Popcnt => "popcnt",
            Self::Avx2 => "avx2",
            Self::Avx512 => "avx512",
        }
    }

    /// Whether this CPU can run the kernel (the check is cached by `std`).
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Self::Portable => true,
                Self::Popcnt => std::arch::is_x86_feature_detected!("popcnt"),
                Self::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
                Self::Avx512 => {
                    std::arch::is_x86_feature_detected!("avx512f")
                        && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Self::Portable
        }
    }

    /// The fastest kernel this CPU has.
    pub fn best() -> Self {
        Self::ALL
            .into_iter()
            .rev()
            .find(|k| k.available())
            .unwrap_or(Self::Portable)
    }
}

/// 0: the fastest available; else `1 + Kernel::ALL` index of a forced kernel.
static FORCED: AtomicU8 = AtomicU8::new(0);

/// Makes every later count use `kernel` (`None`: the fastest again), process-wide. For benches
/// and tests; a kernel this CPU lacks is refused.
pub fn force_kernel(kernel: Option<Kernel>) -> Result<(), Kernel> {
    let code = match kernel {
        None => 0,
        Some(k) if !k.available() => return Err(k),
        Some(k) => Kernel::ALL
            .iter()
            .position(|&a| a == k)
            .map_or(0, |i| i + 1),
    };
    FORCED.store(u8::try_from(code).unwrap_or(0), Ordering::Relaxed);
    Ok(())
}

/// The kernel counts use now (forced or the fastest available).
pub fn kernel() -> Kernel {
    match usize::from(FORCED.load(Ordering::Relaxed)) {
        0 => Kernel::best(),
        i => Kernel::ALL.get(i - 1).copied().unwrap_or(Kernel::Portable),
    }
}

/// `out[r] = popcount(query XOR codes[r·w .. (r+1)·w])` with `w = query.len()` words, for every
/// whole row of `codes` (at most `out.len()`): one dispatch per block of rows, not per row.
/// The wide kernels count 384-dimension codes; other widths take the `popcnt` loop.
pub fn hamming_rows(query: &[u64], codes: &[u64], out: &mut [u16]) {
    if query.is_empty() {
        out.iter_mut().for_each(|o| *o = 0);
        return;
    }
    run(kernel(), query, codes, out);
}

/// [`hamming_rows`] with a given kernel, which the caller has checked is available.
fn run(kernel: Kernel, query: &[u64], codes: &[u64], out: &mut [u16]) {
    #[cfg(target_arch = "x86_64")]
    match kernel {
        Kernel::Avx512 if query.len() == 6 => return x86::rows_384_avx512(query, codes, out),
        Kernel::Avx2 if query.len() == 6 => return x86::rows_384_avx2(query, codes, out),
        Kernel::Portable => {}
        // Every CPU with AVX2 or AVX-512 has popcnt.
        _ => return x86::rows_popcnt(query, codes, out),
    }
    let _ = kernel;
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

#[cfg(test)]
mod tests;
