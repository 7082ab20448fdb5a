//! Tests that every kernel counts the same weighted bits as the naive count, and how a query's
//! weights are chosen.

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

/// Differing bits counted one bit at a time, each at its weight: the reference every kernel must
/// equal.
fn naive(query: &QueryCode, codes: &[u64]) -> Vec<u16> {
    codes
        .chunks_exact(query.words())
        .map(|row| {
            let mut d = 0u16;
            for (w, r) in row.iter().enumerate() {
                for b in 0..64 {
                    let bit = |x: u64| (x >> b) & 1;
                    let weight = bit(query.low[w]) + 2 * bit(query.high[w]);
                    if bit(query.bits[w]) != bit(*r) {
                        d += weight as u16;
                    }
                }
            }
            d
        })
        .collect()
}

/// A query of `words` words with random signs and weights.
fn random_query(next: &mut impl FnMut() -> u64, words: usize) -> QueryCode {
    QueryCode {
        bits: (0..words).map(|_| next()).collect(),
        low: (0..words).map(|_| next()).collect(),
        high: (0..words).map(|_| next()).collect(),
    }
}

fn available() -> Vec<Kernel> {
    Kernel::ALL.into_iter().filter(|k| k.available()).collect()
}

#[test]
fn every_kernel_counts_the_same_weighted_bits_as_the_naive_count() {
    let mut next = random(5);
    let kernels = available();
    assert!(kernels.contains(&Kernel::Portable));
    for words in [1, 2, 6, 7, 12, 24] {
        // Row counts around the four-row blocks: 0–3 left over, and a single row.
        for rows in [1, 3, 4, 5, 33, 34, 35, 36, 1001] {
            let query = random_query(&mut next, words);
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
        run(
            kernel,
            &QueryCode::plain(vec![u64::MAX; 6]),
            &codes,
            &mut out,
        );
        assert_eq!(out, [0, 384, 382, 192, 372], "{}", kernel.name());
        // Every weight 3: three times the differing bits, the largest distance included.
        let heaviest = QueryCode {
            bits: vec![u64::MAX; 6],
            low: vec![u64::MAX; 6],
            high: vec![u64::MAX; 6],
        };
        run(kernel, &heaviest, &codes, &mut out);
        assert_eq!(out, [0, 1152, 1146, 576, 1116], "{}", kernel.name());
        assert_eq!(heaviest.max_distance(), 1152);
        // Weight 2 on the first word only, 0 elsewhere.
        let first = QueryCode {
            bits: vec![u64::MAX; 6],
            low: vec![0; 6],
            high: vec![u64::MAX, 0, 0, 0, 0, 0],
        };
        run(kernel, &first, &codes, &mut out);
        assert_eq!(out, [0, 128, 126, 0, 124], "{}", kernel.name());
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
    let query = QueryCode::plain(vec![3u64; 6]);
    let codes = vec![5u64; 6 * 9];
    let mut out = [0u16; 9];
    distances(&query, &codes, &mut out);
    assert_eq!(out.to_vec(), naive(&query, &codes));
    assert_eq!(out, [12; 9], "two differing bits a word, each of weight 1");
    distances(&QueryCode::plain(Vec::new()), &codes, &mut out);
    assert_eq!(out, [0; 9], "an empty code differs nowhere");
}

#[test]
fn a_querys_weights_grow_with_its_distance_from_the_centre() {
    // 100 components: ninety of size up to 0.9, ten large.
    let centred: Vec<f32> = (0..100)
        .map(|i| {
            let size = if i < 90 { i as f32 / 100.0 } else { 5.0 };
            if i % 2 == 0 { size } else { -size }
        })
        .collect();
    let code = QueryCode::new(&centred);
    assert_eq!(code.words(), 2);
    let weight =
        |i: usize| ((code.low[i / 64] >> (i % 64)) & 1) + 2 * ((code.high[i / 64] >> (i % 64)) & 1);
    let sign = |i: usize| (code.bits[i / 64] >> (i % 64)) & 1;
    for (i, &x) in centred.iter().enumerate() {
        assert_eq!(sign(i), u64::from(x > 0.0), "sign of {i}");
    }
    // The clip is the size nine in ten lie at or below (0.89): weight round(3·|x| / 0.89).
    assert_eq!(weight(0), 0, "at the centre");
    assert_eq!(weight(10), 0, "0.10: rounds to 0");
    assert_eq!(weight(20), 1, "0.20");
    assert_eq!(weight(50), 2, "0.50");
    assert_eq!(weight(80), 3, "0.80");
    for i in 90..100 {
        assert_eq!(weight(i), 3, "clipped at the largest weight");
    }
    for i in 1..90 {
        assert!(
            weight(i) >= weight(i - 1),
            "weights never fall as sizes grow ({i})"
        );
    }
    // A query at the centre everywhere but one component: that one counts, the rest not at all.
    let mut lone = vec![0.0f32; 384];
    lone[7] = -0.3;
    let code = QueryCode::new(&lone);
    assert_eq!((code.low[0] >> 7) & 1 | ((code.high[0] >> 7) & 1) << 1, 3);
    assert_eq!(code.low.iter().map(|w| w.count_ones()).sum::<u32>(), 1);
    assert_eq!(code.high.iter().map(|w| w.count_ones()).sum::<u32>(), 1);
    assert_eq!(code.bits, vec![0; 6], "below the centre");
    // Around a centre: the same code as the centred query.
    let centre = vec![0.5f32; 100];
    let query: Vec<f32> = centred.iter().map(|x| x + 0.5).collect();
    assert_eq!(QueryCode::around(&query, &centre), QueryCode::new(&centred));
}
