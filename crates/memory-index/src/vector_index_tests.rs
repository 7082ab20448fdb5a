//! Tests of the in-memory vector index: the exact leg, filters before ranking, changes applied in
//! place (the binary first pass is tested in `sign_codes_tests.rs`).

use super::*;
use crate::facets::ChunkFacets;
use crate::terms::TermBag;

impl VectorIndex {
    /// Every matrix: the sessions' own, then the pool's.
    fn each_matrix<R>(&self, f: impl Fn(&SessionMatrix) -> Option<R>) -> Vec<R> {
        let mut out: Vec<R> = read(&self.sessions)
            .values()
            .filter_map(|m| f(&read(m)))
            .collect();
        out.extend(f(&read(&self.pool).matrix));
        out
    }

    /// Each coded matrix's share of rows its first pass keeps at least, for tests.
    pub fn needed_shares(&self) -> Vec<f64> {
        self.each_matrix(|m| m.signs.as_ref().map(SignCodes::needed_share))
    }
    /// Each matrix's coded rows and the rows its centre was taken at (matrices without codes
    /// left out), for tests.
    pub fn coded_rows(&self) -> Vec<(usize, usize)> {
        self.each_matrix(|m| m.signs.as_ref().map(|s| (s.rows(), s.built_rows())))
    }
    /// The sessions with a matrix of their own, sorted, for tests.
    pub fn own_sessions(&self) -> Vec<String> {
        let mut names: Vec<String> = read(&self.sessions).keys().cloned().collect();
        names.sort();
        names
    }
}

fn unit(v: &[f32]) -> Vec<f32> {
    let mut v = v.to_vec();
    crate::embedding::normalize(&mut v);
    v
}

fn upsert(session: &str, chunk_id: i64, v: &[f32]) -> IndexChange {
    IndexChange::Upsert {
        session: session.into(),
        chunk_id,
        vector: unit(v),
        // Chunks 2, 3 and 5 carry a tag, to check filtering (also after rows move).
        facets: ChunkFacets {
            tags: [2, 3, 5]
                .contains(&chunk_id)
                .then(|| "keep".to_owned())
                .into_iter()
                .collect(),
            ..ChunkFacets::default()
        },
        terms: TermBag::default(),
    }
}

#[test]
fn search_is_exact_scoped_and_follows_changes() {
    let index = VectorIndex::new("m", 3);
    index.apply(&[
        upsert("s1", 1, &[1.0, 0.0, 0.0]),
        upsert("s1", 2, &[0.7, 0.7, 0.0]),
        upsert("s1", 3, &[0.0, 1.0, 0.0]),
        upsert("s2", 4, &[1.0, 0.0, 0.0]),
        upsert("s1", 5, &[-1.0, 0.0, 0.0]),
    ]);
    let ids = |r: Vec<(i64, f32)>| r.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
    let q = unit(&[1.0, 0.1, 0.0]);
    let s1 = ["s1".to_owned()];
    assert_eq!(ids(index.search(&s1, &q, 10, None)), [1, 2, 3]);
    assert_eq!(ids(index.search(&s1, &q, 1, None)), [1]);
    assert_eq!(
        ids(index.search(&["s1".into(), "s2".into()], &q, 2, None)),
        [1, 4]
    );
    let keep = FacetFilter::new(crate::filters::Scope {
        filters: crate::filters::QueryFilters {
            tags_any: vec!["keep".into()],
            ..Default::default()
        },
        expired_at: None,
    });
    assert_eq!(ids(index.search(&s1, &q, 10, Some(&keep))), [2, 3]);
    // Remove the first row: the last row moves into its slot and stays findable.
    index.apply(&[IndexChange::Remove {
        session: "s1".into(),
        chunk_id: 1,
    }]);
    assert_eq!(ids(index.search(&s1, &q, 10, None)), [2, 3]);
    let back = unit(&[-1.0, 0.0, 0.0]);
    assert_eq!(ids(index.search(&s1, &back, 10, Some(&keep))), [5]);
    assert_eq!(ids(index.search(&s1, &back, 10, None)), [5]);
    index.apply(&[upsert("s1", 3, &[1.0, 0.0, 0.0])]);
    assert_eq!(ids(index.search(&s1, &q, 10, None)), [3, 2]);
    assert_eq!(index.len(), 4);
    assert!(index.search(&s1, &[0.0, 0.0, 0.0], 10, None).is_empty());
    assert!(index.search(&["nope".into()], &q, 10, None).is_empty());
}

/// A seeded pseudo-random unit vector.
fn random_unit(seed: &mut u64, dims: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..dims)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((*seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    unit(&v)
}

#[test]
fn quantized_scan_ranks_like_the_exact_f32_scan() {
    let dims = 384;
    let mut seed = 7;
    let index = VectorIndex::new("m", dims);
    // Clustered rows, so that many cosines are close together (the hard case for rounding).
    let centre = random_unit(&mut seed, dims);
    let rows: Vec<Vec<f32>> = (0..3000)
        .map(|_| {
            let noise = random_unit(&mut seed, dims);
            unit(
                &centre
                    .iter()
                    .zip(&noise)
                    .map(|(c, n)| c + 0.8 * n)
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let changes: Vec<IndexChange> = rows
        .iter()
        .enumerate()
        .map(|(i, v)| IndexChange::Upsert {
            session: "s".into(),
            chunk_id: i as i64,
            vector: v.clone(),
            facets: ChunkFacets::default(),
            terms: TermBag::default(),
        })
        .collect();
    index.apply(&changes);
    let session = ["s".to_owned()];
    for _ in 0..20 {
        let noise = random_unit(&mut seed, dims);
        let query = unit(
            &centre
                .iter()
                .zip(&noise)
                .map(|(c, n)| c + n)
                .collect::<Vec<_>>(),
        );
        let mut exact: Vec<(i64, f32)> = rows
            .iter()
            .enumerate()
            .map(|(i, v)| (i as i64, v.iter().zip(&query).map(|(a, b)| a * b).sum()))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        exact.truncate(50);
        let got = index.search(&session, &query, 50, None);
        assert_eq!(got.len(), exact.len());
        // Every returned score is the true cosine up to the rows' rounding.
        for (id, score) in &got {
            let truth: f32 = rows[*id as usize]
                .iter()
                .zip(&query)
                .map(|(a, b)| a * b)
                .sum();
            assert!((score - truth).abs() < 2e-3, "{score} vs {truth}");
        }
        // The same top 50, except possibly swaps at the boundary between near-equal cosines.
        let kept: HashSet<i64> = got.iter().map(|(id, _)| *id).collect();
        let cutoff = exact.last().map_or(0.0, |(_, s)| *s);
        for (id, score) in &exact {
            assert!(
                kept.contains(id) || *score - cutoff < 4e-3,
                "lost {id} ({score})"
            );
        }
        // Order follows the exact cosines except between near-ties.
        for pair in got.windows(2) {
            let truth = |id: i64| -> f32 {
                rows[id as usize]
                    .iter()
                    .zip(&query)
                    .map(|(a, b)| a * b)
                    .sum()
            };
            assert!(truth(pair[0].0) > truth(pair[1].0) - 4e-3, "{pair:?}");
        }
    }
}

#[test]
fn quantize_round_trips_within_half_a_step() {
    let mut seed = 3;
    let v = random_unit(&mut seed, 100);
    let mut codes = vec![0i8; 100];
    let scale = quantize(&v, &mut codes);
    for (x, c) in v.iter().zip(&codes) {
        assert!((x - scale * f32::from(*c)).abs() <= scale * 0.5 + 1e-7);
    }
    assert!(codes.iter().any(|c| c.abs() == 127));
    assert_eq!(quantize(&[0.0, 0.0], &mut [5, 5]), 0.0);
    let mut nan = [1i8, 1];
    assert_eq!(quantize(&[f32::NAN, 1.0], &mut nan), 0.0);
    assert_eq!(nan, [0, 0]);
}

#[test]
fn holds_tells_applied_changes_from_new_ones() {
    let index = VectorIndex::new("m", 3);
    let saved = upsert("s", 1, &[1.0, 0.0, 0.0]);
    let before = index.generation();
    index.apply(std::slice::from_ref(&saved));
    assert!(index.generation() > before, "an apply moves the generation");
    let gone = IndexChange::Remove {
        session: "s".into(),
        chunk_id: 7,
    };
    // What was applied, and a removal of what is absent, are held...
    assert!(index.holds(&[saved.clone(), gone]));
    assert!(index.holds(&[]));
    // ... a new chunk, another vector, other facets, another session or a removal of a present
    // chunk are not.
    assert!(!index.holds(&[upsert("s", 2, &[1.0, 0.0, 0.0])]));
    assert!(!index.holds(&[upsert("s", 1, &[0.0, 1.0, 0.0])]));
    assert!(!index.holds(&[upsert("s", 2, &[1.0, 0.0, 0.0]), saved.clone()]));
    assert!(!index.holds(&[upsert("t", 1, &[1.0, 0.0, 0.0])]));
    let IndexChange::Upsert {
        session,
        chunk_id,
        vector,
        terms,
        ..
    } = saved
    else {
        unreachable!()
    };
    let retagged = IndexChange::Upsert {
        session: session.clone(),
        chunk_id,
        vector,
        facets: ChunkFacets {
            tags: vec!["new".to_owned()].into_boxed_slice(),
            ..ChunkFacets::default()
        },
        terms,
    };
    assert!(!index.holds(&[retagged]));
    assert!(!index.holds(&[IndexChange::Remove {
        session,
        chunk_id: 1
    }]));
}
