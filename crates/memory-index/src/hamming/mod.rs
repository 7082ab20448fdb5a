//! The distance of the vector leg's binary first pass: a masked Hamming distance.
//!
//! A row's binary code is one bit per dimension packed in `u64` words; the query keeps its sign
//! bits and a mask of the dimensions that count ([`QueryCode`]: those where it sits far enough from
//! the rows' centre), and the distance to a row is the number of counted bits that differ (XOR,
//! AND with the mask, then a population count). The row stays one bit per dimension; leaving out
//! the query's weakest dimensions cuts the rows the first pass must keep for the same recall by a
//! third to a half.
//!
//! x86-64's baseline has no `popcnt` instruction, so portable Rust counts bits with a dozen
//! shifts and masks per word; with `popcnt` (checked at run time, the check is cached by `std`)
//! it is one instruction.
//! With AVX-512 `VPOPCNTDQ` (e.g. AMD Zen 4, Intel Ice Lake) 384-dimension codes are counted four
//! rows at a time in 512-bit registers: at a million rows 2.0 ms where `popcnt` took 3.8 ms (the
//! pass then reads its 48 MB at the memory's speed). Other widths take `popcnt`, other CPUs the
//! portable loop (AArch64 has a vector bit count LLVM uses on its own).
//!
//! Without AVX-512, AVX2 (e.g. Intel Haswell to Alder Lake, AMD Zen 1–3) counts the same four rows
//! in six 256-bit registers: each byte's bits by two lookups of its 4-bit halves in a 16-entry
//! table (`vpshufb`), the bytes of a row summed with `vpsadbw`.
//!
//! This module, [`crate::dot`], [`crate::time_keys`] and `huge_pages.rs` (one `madvise`) are the
//! only ones with `unsafe`: `#[target_feature]` functions (in `x86.rs`), called only after the
//! feature check.

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

/// A query as the first pass compares it with the rows' codes: the sign of each component of the
/// query minus the rows' centre (as a row is coded), and a mask of the dimensions that count. A
/// row's distance is the number of counted dimensions whose signs differ: the dimensions where the
/// query sits nearest the centre say least about the dot product and are left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryCode {
    bits: Vec<u64>,
    /// Set for the dimensions that count.
    mask: Vec<u64>,
}

/// The share of a query's components, those nearest the centre, left out of its distances.
const LEFT_OUT: f64 = 0.4;

impl QueryCode {
    /// The code of a centred query (`query − centre`, one value per dimension): a dimension counts
    /// when its size is at least that of the component [`LEFT_OUT`] of the others lie under.
    /// Measured on LoCoMo questions against 10k synthetic notes and 100k turn-like messages (the
    /// share of rows the first pass must keep to catch 99 % of the exact top ten): 0.20 and 0.020
    /// of the rows where every dimension counting needed 0.31 and 0.036; weights of 0–3 in two
    /// planes needed 0.16 and 0.017 but twice the counting (docs/benchmarks.md).
    pub fn new(centred: &[f32]) -> Self {
        let words = centred.len().div_ceil(64);
        let mut sizes: Vec<f32> = centred.iter().map(|x| x.abs()).collect();
        let least = match sizes.len() {
            0 => 0.0,
            n => {
                let at = ((n as f64 * LEFT_OUT) as usize).min(n - 1);
                *sizes.select_nth_unstable_by(at, f32::total_cmp).1
            }
        };
        let mut code = Self {
            bits: vec![0; words],
            mask: vec![0; words],
        };
        for (i, &x) in centred.iter().enumerate() {
            let (word, bit) = (i / 64, 1u64 << (i % 64));
            if x > 0.0 {
                code.bits[word] |= bit;
            }
            // At least the components off the centre count, however many sit on it.
            if x.abs() >= least && x != 0.0 {
                code.mask[word] |= bit;
            }
        }
        if code.mask.iter().all(|&m| m == 0) {
            // A query at the centre: every dimension counts, as signs alone.
            return Self::plain(code.bits);
        }
        code
    }

    /// The code of `query` around `centre` (the rows' centre, one value per dimension).
    pub fn around(query: &[f32], centre: &[f32]) -> Self {
        let centred: Vec<f32> = query.iter().zip(centre).map(|(&x, &m)| x - m).collect();
        Self::new(&centred)
    }

    /// A code whose every dimension counts: its distances are Hamming distances to `bits`.
    pub fn plain(bits: Vec<u64>) -> Self {
        let mask = vec![u64::MAX; bits.len()];
        Self { bits, mask }
    }

    /// Code words (64 dimensions each).
    pub fn words(&self) -> usize {
        self.bits.len()
    }

    /// The same signs with every dimension counting (tests compare the mask with plain Hamming).
    #[cfg(test)]
    pub fn unmasked(self) -> Self {
        Self::plain(self.bits)
    }

    /// The largest distance a row can be at (every counted sign differs).
    pub fn max_distance(&self) -> usize {
        self.mask.iter().map(|m| m.count_ones() as usize).sum()
    }
}

/// `out[r]` = the counted bits where row `r` of `codes` (`query.words()` words per row) differs
/// from `query`, for every whole row (at most `out.len()`): one dispatch per block of rows, not
/// per row. The wide kernels count 384-dimension codes; other widths take the `popcnt` loop.
pub fn distances(query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    if query.words() == 0 {
        out.iter_mut().for_each(|o| *o = 0);
        return;
    }
    run(kernel(), query, codes, out);
}

/// [`distances`] with a given kernel, which the caller has checked is available.
fn run(kernel: Kernel, query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    #[cfg(target_arch = "x86_64")]
    match kernel {
        Kernel::Avx512 if query.words() == 6 => return x86::rows_384_avx512(query, codes, out),
        Kernel::Avx2 if query.words() == 6 => return x86::rows_384_avx2(query, codes, out),
        Kernel::Portable => {}
        // Every CPU with AVX2 or AVX-512 has popcnt.
        _ => return x86::rows_popcnt(query, codes, out),
    }
    let _ = kernel;
    distances_portable(query, codes, out);
}

/// The fallback (and the reference the tests compare the fast path with). Inlined into the
/// `popcnt` path, which compiles this same loop with the instruction enabled.
#[inline]
pub fn distances_portable(query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    // Common widths get a loop of fixed length, unrolled: no per-row loop over words.
    match query.words() {
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

/// [`distances_portable`] for codes of `W` words (384, 768 and 1536 dimensions).
#[inline(always)]
fn rows_of<const W: usize>(query: &QueryCode, codes: &[u64], out: &mut [u16]) {
    let (Ok(bits), Ok(mask)) = (
        <&[u64; W]>::try_from(&query.bits[..]),
        <&[u64; W]>::try_from(&query.mask[..]),
    ) else {
        return;
    };
    let (rows, _) = codes.as_chunks::<W>();
    for (o, row) in out.iter_mut().zip(rows) {
        let d: u32 = (0..W)
            .map(|i| ((bits[i] ^ row[i]) & mask[i]).count_ones())
            .sum();
        *o = u16::try_from(d).unwrap_or(u16::MAX);
    }
}

/// The counted differing bits of one row (at most 64 × words; a code has at most 2^10 words
/// here, as dimensions ≤ 65,535 keep every distance in `u16`).
#[inline(always)]
fn distance(query: &QueryCode, row: &[u64]) -> u16 {
    let d: u32 = row
        .iter()
        .zip(query.bits.iter().zip(&query.mask))
        .map(|(r, (q, m))| ((q ^ r) & m).count_ones())
        .sum();
    u16::try_from(d).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests;
