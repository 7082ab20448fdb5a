//! Tests that every Hamming kernel counts the same bits as the naive count.

use super::*;

/// A fixed pseudo-random sequence (a linear congruential generator).
fn random(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state
    }
}

/// Differing bits counted one bit at a time: the reference every kernel must equal.
fn naive(query: &[u64], codes: &[u64]) -> Vec<u16> {
    codes
        .chunks_exact(query.len())
        .map(|row| {
            let mut bits = 0u16;
            for (q, r) in query.iter().zip(row) {
                for b in 0..64 {
                    bits += u16::from((q >> b) & 1 != (r >> b) & 1);
                }
            }
            bits
        })
        .collect()
}

fn available() -> Vec<Kernel> {
    Kernel::ALL.into_iter().filter(|k| k.available()).collect()
}

#[test]
fn every_kernel_counts_the_same_bits_as_the_naive_count() {
    let mut next = random(5);
    let kernels = available();
    assert!(kernels.contains(&Kernel::Portable));
    for words in [1, 2, 6, 7, 12, 24] {
        // Row counts around the four-row blocks: 0–3 left over, and a single row.
        for rows in [1, 3, 4, 5, 33, 34, 35, 36, 1001] {
            let query: Vec<u64> = (0..words).map(|_| next()).collect();
            let codes: Vec<u64> = (0..words * rows).map(|_| next()).collect();
            let expected = naive(&query, &codes);
            for &kernel in &kernels {
                let mut out = vec![u16::MAX; rows];
                run(kernel, &query, &codes, &mut out);
                assert_eq!(out, expected, "{} {words} words {rows} rows", kernel.name());
                // Fewer outputs than rows (the wide kernels count four rows at a time).
                let mut short = vec![u16::MAX; rows / 2];
                run(kernel, &query, &codes, &mut short);
                assert_eq!(
                    short,
                    expected[..rows / 2],
                    "{} into {}",
                    kernel.name(),
                    rows / 2
                );
                // More outputs than rows: the rest is left alone.
                let mut long = vec![7u16; rows + 3];
                run(kernel, &query, &codes, &mut long);
                assert_eq!(
                    long[..rows],
                    expected[..],
                    "{} into {}",
                    kernel.name(),
                    rows + 3
                );
                assert_eq!(long[rows..], [7, 7, 7], "{} past the rows", kernel.name());
            }
        }
    }
}

#[test]
fn every_kernel_counts_identical_complementary_and_sparse_codes() {
    let rows: Vec<[u64; 6]> = vec![
        [u64::MAX; 6],
        [0; 6],
        [1, 0, 0, 0, 0, 1 << 63],
        [u64::MAX, 0, u64::MAX, 0, u64::MAX, 0],
        [0x8000_0000_0000_0001; 6],
    ];
    let codes = rows.concat();
    for kernel in available() {
        let mut out = [9u16; 5];
        run(kernel, &[u64::MAX; 6], &codes, &mut out);
        assert_eq!(out, [0, 384, 382, 192, 372], "{}", kernel.name());
    }
}

#[test]
fn the_dispatched_count_uses_the_fastest_kernel_and_a_missing_one_is_refused() {
    let best = Kernel::best();
    assert!(best.available());
    assert_eq!(kernel(), best, "nothing forced in these tests");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        assert!(matches!(best, Kernel::Avx2 | Kernel::Avx512));
    }
    for k in Kernel::ALL.into_iter().filter(|k| !k.available()) {
        assert_eq!(force_kernel(Some(k)), Err(k));
        assert_eq!(kernel(), best, "a refused kernel changes nothing");
    }
    let query = [3u64; 6];
    let codes = vec![5u64; 6 * 9];
    let mut out = [0u16; 9];
    hamming_rows(&query, &codes, &mut out);
    assert_eq!(out.to_vec(), naive(&query, &codes));
    hamming_rows(&[], &codes, &mut out);
    assert_eq!(out, [0; 9], "an empty code differs nowhere");
}
