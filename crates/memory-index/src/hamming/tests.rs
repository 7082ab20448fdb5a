//! Tests that every kernel counts the same masked bits as the naive count, and how a query's
//! mask is chosen.

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

/// Differing bits under the mask counted one bit at a time: the reference every kernel must equal.
fn naive(query: &QueryCode, codes: &[u64]) -> Vec<u16> {
    codes
        .chunks_exact(query.words())
        .map(|row| {
            let mut d = 0u16;
            for (w, r) in row.iter().enumerate() {
                for b in 0..64 {
                    let bit = |x: u64| (x >> b) & 1;
                    if bit(query.mask[w]) == 1 && bit(query.bits[w]) != bit(*r) {
                        d += 1;
                    }
                }
            }
            d
        })
        .collect()
}

/// A query of `words` words with random signs and mask.
fn random_query(next: &mut impl FnMut() -> u64, words: usize) -> QueryCode {
    QueryCode {
        bits: (0..words).map(|_| next()).collect(),
        mask: (0..words).map(|_| next()).collect(),
    }
}

fn available() -> Vec<Kernel> {
    Kernel::ALL.into_iter().filter(|k| k.available()).collect()
}

#[test]
fn every_kernel_counts_the_same_masked_bits_as_the_naive_count() {
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
        // Only the first word counts.
        let first = QueryCode {
            bits: vec![u64::MAX; 6],
            mask: vec![u64::MAX, 0, 0, 0, 0, 0],
        };
        run(kernel, &first, &codes, &mut out);
        assert_eq!(out, [0, 64, 63, 0, 62], "{}", kernel.name());
        assert_eq!(first.max_distance(), 64);
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
    assert_eq!(out, [12; 9], "two differing bits a word, every one counted");
    distances(&QueryCode::plain(Vec::new()), &codes, &mut out);
    assert_eq!(out, [0; 9], "an empty code differs nowhere");
}

#[test]
fn a_query_leaves_out_the_dimensions_nearest_the_centre() {
    // 100 components of sizes 0.00, 0.01, … 0.99, alternately above and below the centre.
    let centred: Vec<f32> = (0..100)
        .map(|i| {
            let size = i as f32 / 100.0;
            if i % 2 == 0 { size } else { -size }
        })
        .collect();
    let code = QueryCode::new(&centred);
    assert_eq!(code.words(), 2);
    let bit = |plane: &[u64], i: usize| (plane[i / 64] >> (i % 64)) & 1;
    for (i, &x) in centred.iter().enumerate() {
        assert_eq!(bit(&code.bits, i), u64::from(x > 0.0), "sign of {i}");
        // The forty smallest are left out: sizes from 0.40 count.
        assert_eq!(bit(&code.mask, i), u64::from(i >= 40), "mask of {i}");
    }
    assert_eq!(code.max_distance(), 60);
    // Rows differing only where the query is weakest are at distance 0; elsewhere, 1 a bit.
    let near = code
        .bits
        .iter()
        .enumerate()
        .map(|(w, &b)| if w == 0 { b ^ 0xFF } else { b });
    let far = code
        .bits
        .iter()
        .enumerate()
        .map(|(w, &b)| if w == 0 { b ^ (0xFF << 50) } else { b });
    let rows: Vec<u64> = near.chain(far).collect();
    let mut out = [9u16; 2];
    distances(&code, &rows, &mut out);
    assert_eq!(out, [0, 8]);

    // A query at the centre everywhere but one component: that one counts, the rest not at all.
    let mut lone = vec![0.0f32; 384];
    lone[7] = -0.3;
    let code = QueryCode::new(&lone);
    assert_eq!(code.mask, vec![1 << 7, 0, 0, 0, 0, 0]);
    assert_eq!(code.bits, vec![0; 6], "below the centre");
    // A query at the centre everywhere: every dimension counts, as plain signs.
    assert_eq!(QueryCode::new(&[0.0; 384]), QueryCode::plain(vec![0; 6]));
    // Around a centre: the same code as the centred query.
    let centre = vec![0.5f32; 100];
    let query: Vec<f32> = centred.iter().map(|x| x + 0.5).collect();
    assert_eq!(QueryCode::around(&query, &centre), QueryCode::new(&centred));
}
