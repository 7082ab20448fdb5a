//! The inverted file against the exact scan: recall, filters before ranking, and the lists
//! following every change.

use std::collections::HashSet;

use crate::facets::{ChunkFacets, FacetFilter};
use crate::query::{QueryFilters, Scope};
use crate::vector_index::{IndexChange, VectorIndex, VectorLeg};

const DIMS: usize = 48;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as f32 / (1u64 << 31) as f32) - 0.5
    }

    fn unit(&mut self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIMS).map(|_| self.next()).collect();
        crate::embedding::normalize(&mut v);
        v
    }
}

/// Rows around `centres` random topics (like notes about a few hundred subjects).
fn clustered(rng: &mut Lcg, centres: &[Vec<f32>], n: usize) -> Vec<Vec<f32>> {
    (0..n)
        .map(|i| {
            let centre = &centres[i * 7 % centres.len()];
            let noise = rng.unit();
            let mut v: Vec<f32> = centre
                .iter()
                .zip(&noise)
                .map(|(c, e)| c + 0.6 * e)
                .collect();
            crate::embedding::normalize(&mut v);
            v
        })
        .collect()
}

fn upsert(chunk_id: i64, vector: &[f32], tagged: bool) -> IndexChange {
    IndexChange::Upsert {
        session: "s".into(),
        chunk_id,
        vector: vector.to_vec(),
        facets: ChunkFacets {
            tags: tagged.then(|| "rare".to_owned()).into_iter().collect(),
            ..ChunkFacets::default()
        },
    }
}

fn both(changes: &[IndexChange]) -> (VectorIndex, VectorIndex) {
    let exact = VectorIndex::with_leg("m", DIMS, VectorLeg::Exact);
    let approx = VectorIndex::with_leg("m", DIMS, VectorLeg::Approximate);
    exact.apply(changes);
    approx.apply(changes);
    (exact, approx)
}

fn ids(found: &[(i64, f32)]) -> HashSet<i64> {
    found.iter().map(|(id, _)| *id).collect()
}

fn session() -> [String; 1] {
    ["s".to_owned()]
}

#[test]
fn the_lists_recall_the_exact_top_10() {
    let mut rng = Lcg(11);
    let centres: Vec<Vec<f32>> = (0..200).map(|_| rng.unit()).collect();
    let rows = clustered(&mut rng, &centres, 12_000);
    let changes: Vec<IndexChange> = rows
        .iter()
        .enumerate()
        .map(|(i, v)| upsert(i as i64, v, false))
        .collect();
    let (exact, approx) = both(&changes);
    let lists = approx.list_counts();
    assert!(lists[0] > 20, "the approximate index has lists: {lists:?}");
    assert!(exact.list_counts().is_empty(), "the exact index has none");
    let queries = clustered(&mut rng, &centres, 200);
    let mut found = 0;
    for q in &queries {
        let truth = ids(&exact.search(&session(), q, 10, None));
        let got = ids(&approx.search(&session(), q, 10, None));
        assert_eq!(got.len(), 10);
        found += truth.intersection(&got).count();
    }
    let recall = found as f64 / (10 * queries.len()) as f64;
    assert!(recall >= 0.99, "recall@10 {recall}");
}

#[test]
fn a_selective_filter_applies_before_ranking() {
    let mut rng = Lcg(5);
    let centres: Vec<Vec<f32>> = (0..50).map(|_| rng.unit()).collect();
    let rows = clustered(&mut rng, &centres, 4000);
    // One row in a hundred is tagged: the closest lists hold few of them.
    let changes: Vec<IndexChange> = rows
        .iter()
        .enumerate()
        .map(|(i, v)| upsert(i as i64, v, i % 100 == 0))
        .collect();
    let (exact, approx) = both(&changes);
    let rare = FacetFilter::new(Scope {
        filters: QueryFilters {
            tags_any: vec!["rare".into()],
            ..QueryFilters::default()
        },
        expired_at: None,
    });
    for q in clustered(&mut rng, &centres, 30) {
        let truth = exact.search(&session(), &q, 10, Some(&rare));
        let got = approx.search(&session(), &q, 10, Some(&rare));
        assert!(got.iter().all(|(id, _)| id % 100 == 0), "{got:?}");
        assert_eq!(got.len(), truth.len());
        assert_eq!(ids(&got), ids(&truth));
    }
}

#[test]
fn the_lists_follow_updates_and_deletes() {
    let mut rng = Lcg(3);
    let centres: Vec<Vec<f32>> = (0..20).map(|_| rng.unit()).collect();
    let rows = clustered(&mut rng, &centres, 2000);
    let changes: Vec<IndexChange> = rows
        .iter()
        .enumerate()
        .map(|(i, v)| upsert(i as i64, v, false))
        .collect();
    let (exact, approx) = both(&changes);
    // Delete every third row (rows move into the holes), move every fifth to another topic, add
    // new rows, one batch at a time, as saves, updates and deletes do.
    for round in 0..3 {
        let mut batch = Vec::new();
        for id in (round..2000).step_by(3) {
            batch.push(IndexChange::Remove {
                session: "s".into(),
                chunk_id: id as i64,
            });
        }
        for id in (1..2000).step_by(5) {
            let v = clustered(&mut rng, &centres, 1).remove(0);
            batch.push(upsert(id as i64, &v, false));
        }
        for v in clustered(&mut rng, &centres, 300) {
            batch.push(upsert(
                10_000 + round as i64 * 1000 + batch.len() as i64,
                &v,
                false,
            ));
        }
        exact.apply(&batch);
        approx.apply(&batch);
        assert_eq!(approx.len(), exact.len());
        assert_eq!(approx.rows_in_lists(), vec![approx.len()]);
        // Asking for as many as there are rows reads every list: the same set as the exact scan.
        let q = rng.unit();
        let all = exact.len();
        assert_eq!(
            ids(&approx.search(&session(), &q, all, None)),
            ids(&exact.search(&session(), &q, all, None))
        );
        for q in clustered(&mut rng, &centres, 20) {
            let truth = exact.search(&session(), &q, 1, None);
            let got = approx.search(&session(), &q, 1, None);
            assert_eq!(got.first().map(|h| h.0), truth.first().map(|h| h.0));
        }
    }
}

#[test]
fn switching_the_leg_builds_keeps_and_drops_the_lists() {
    let mut rng = Lcg(9);
    let index = VectorIndex::with_leg("m", DIMS, VectorLeg::Auto);
    let rows: Vec<IndexChange> = (0..100).map(|i| upsert(i, &rng.unit(), false)).collect();
    index.apply(&rows);
    assert!(index.list_counts().is_empty(), "small sessions are scanned");
    index.set_leg(VectorLeg::Approximate);
    assert_eq!(index.list_counts(), vec![5]);
    assert_eq!(index.rows_in_lists(), vec![100]);
    // Exact searches ignore the lists but keep them in step; Auto drops them at this size.
    index.set_leg(VectorLeg::Exact);
    index.apply(&[IndexChange::Remove {
        session: "s".into(),
        chunk_id: 0,
    }]);
    assert_eq!(index.rows_in_lists(), vec![99]);
    index.set_leg(VectorLeg::Auto);
    assert!(index.list_counts().is_empty());
}
