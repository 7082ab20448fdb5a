//! The partition in front of the first pass: every row in one list through every change, searches
//! that read only the closest lists and keep recall once live probes measured their reach, filters
//! applied before ranking, and sessions partitioned and unpartitioned by size.

use std::collections::HashSet;

use super::*;
use crate::embedding::normalize;
use crate::facets::{ChunkFacets, FacetFilter};
use crate::query::{QueryFilters, Scope};
use crate::terms::TermBag;
use crate::vector_index::{IndexChange, VectorIndex, VectorLeg};
use crate::vector_leg::PARTITION_MIN_ROWS;

const DIMS: usize = 64;
const TOPICS: usize = 40;

/// Seeded standard normal numbers (Box–Muller over a 64-bit LCG).
struct Normal(u64);

impl Normal {
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn next(&mut self) -> f32 {
        let (u, v) = (self.uniform(), self.uniform());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }

    fn unit(&mut self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIMS).map(|_| self.next()).collect();
        normalize(&mut v);
        v
    }
}

/// Texts on forty topics: each vector is its topic's direction plus noise of 0.6 its length,
/// so a query's neighbours are mostly, not only, of its own topic.
struct Topics {
    rng: Normal,
    centres: Vec<Vec<f32>>,
}

impl Topics {
    fn new(seed: u64) -> Self {
        let mut rng = Normal(seed);
        let centres = (0..TOPICS).map(|_| rng.unit()).collect();
        Self { rng, centres }
    }

    fn vectors(&mut self, n: usize) -> Vec<Vec<f32>> {
        (0..n)
            .map(|_| {
                let topic = (self.rng.uniform() * TOPICS as f64) as usize % TOPICS;
                let noise = self.rng.unit();
                let mut v: Vec<f32> = self.centres[topic]
                    .iter()
                    .zip(&noise)
                    .map(|(c, e)| c + 0.6 * e)
                    .collect();
                normalize(&mut v);
                v
            })
            .collect()
    }
}

fn upsert(chunk_id: i64, vector: &[f32], tags: &[&str]) -> IndexChange {
    IndexChange::Upsert {
        session: "s".into(),
        chunk_id,
        vector: vector.to_vec(),
        facets: ChunkFacets {
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            ..ChunkFacets::default()
        },
        terms: TermBag::default(),
    }
}

/// Chunk `i` is row `i`; one in four is tagged "some", one in two hundred "rare".
fn upserts(vectors: &[Vec<f32>], first_id: i64) -> Vec<IndexChange> {
    vectors
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let id = first_id + i as i64;
            let tags: &[&str] = match (id % 4 == 0, id % 200 == 0) {
                (_, true) => &["some", "rare"],
                (true, false) => &["some"],
                _ => &[],
            };
            upsert(id, v, tags)
        })
        .collect()
}

/// The exact index and one that always takes the first pass (partitioned as `Auto` is).
fn both(changes: &[IndexChange]) -> (VectorIndex, VectorIndex) {
    let exact = VectorIndex::with_leg("m", DIMS, VectorLeg::Exact);
    let auto = VectorIndex::with_leg("m", DIMS, VectorLeg::Approximate);
    exact.apply(changes);
    auto.apply(changes);
    (exact, auto)
}

fn session() -> [String; 1] {
    ["s".to_owned()]
}

fn ids(found: &[(i64, f32)]) -> HashSet<i64> {
    found.iter().map(|(id, _)| *id).collect()
}

fn tagged(tag: &str) -> FacetFilter {
    FacetFilter::new(Scope {
        filters: QueryFilters {
            tags_any: vec![tag.into()],
            ..QueryFilters::default()
        },
        expired_at: None,
    })
}

/// Recall@10 of `auto` against `exact` over `queries`, and the most rows one first pass read.
fn recall(
    exact: &VectorIndex,
    auto: &VectorIndex,
    queries: &[Vec<f32>],
    filter: Option<&FacetFilter>,
) -> (f64, usize) {
    let (mut found, mut relevant, mut most_read) = (0, 0, 0);
    for q in queries {
        let truth = ids(&exact.search(&session(), q, 10, filter));
        let got = auto.search(&session(), q, 10, filter);
        most_read = most_read.max(VectorIndex::rows_read_by_last_first_pass());
        assert_eq!(got.len(), truth.len());
        relevant += truth.len();
        found += truth.intersection(&ids(&got)).count();
    }
    (found as f64 / relevant.max(1) as f64, most_read)
}

#[test]
fn every_row_stays_in_one_list_with_its_own_code_through_every_change() {
    let mut topics = Topics::new(1);
    let vectors = topics.vectors(PARTITION_MIN_ROWS + 2000);
    let (exact, auto) = both(&upserts(&vectors, 0));
    let partitions = auto.checked_partitions();
    assert_eq!(partitions.len(), 1, "the session is partitioned");
    assert_eq!(partitions[0].1, lists_for(vectors.len()));
    let mut spare = topics.vectors(3000).into_iter();
    let mut next_id = 1_000_000;
    for round in 0..3i64 {
        // Deletes (rows move into the holes, in the lists too), new texts under old ids (rows
        // change lists), and new rows, in one batch as the writer applies them.
        let mut batch: Vec<IndexChange> = (round..4000)
            .step_by(7)
            .map(|chunk_id| IndexChange::Remove {
                session: "s".into(),
                chunk_id,
            })
            .collect();
        for id in (5000 + round..9000).step_by(11) {
            batch.push(upsert(id, &spare.next().unwrap(), &[]));
        }
        let fresh: Vec<Vec<f32>> = spare.by_ref().take(500).collect();
        batch.extend(upserts(&fresh, next_id));
        next_id += 500;
        exact.apply(&batch);
        auto.apply(&batch);
        let partitions = auto.checked_partitions();
        assert_eq!(partitions[0].0, exact.len(), "round {round}");
        // A row's own vector finds it first: it sits in the list of its nearest centroid, the
        // first list a search reads.
        for (i, v) in fresh.iter().enumerate().step_by(25) {
            let got = auto.search(&session(), v, 1, None);
            assert!(VectorIndex::rows_read_by_last_first_pass() < exact.len());
            assert_eq!(
                got.first().map(|h| h.0),
                exact.search(&session(), v, 1, None).first().map(|h| h.0),
                "round {round}, new row {i}"
            );
        }
    }
}

#[test]
fn live_probes_measure_the_reach_and_searches_read_a_share_of_the_rows() {
    let mut topics = Topics::new(2);
    let vectors = topics.vectors(40_000);
    let (exact, auto) = both(&upserts(&vectors, 0));
    let start = auto.checked_partitions()[0].2;
    assert_eq!(start, START_SHARE);
    // Until probes measured, searches read the starting share (and the closest lists).
    let queries = topics.vectors(300);
    let (before, read_before) = recall(&exact, &auto, &queries[..50], None);
    assert!(read_before < vectors.len(), "read {read_before}");
    for q in &queries[..40] {
        auto.check_recall(&session(), q);
    }
    let settled = auto.checked_partitions()[0].2;
    assert!(
        settled < start && settled >= MIN_SHARE,
        "share {start} before, {settled} after the probes"
    );
    let (after, read_after) = recall(&exact, &auto, &queries[50..], None);
    eprintln!(
        "recall@10 {before:.4} reading ≤ {read_before} rows of 40000 at first, {after:.4} \
         reading ≤ {read_after} once the probes settled (share {settled:.4})"
    );
    assert!(after >= 0.99, "recall@10 {after}");
    assert!(
        read_after < read_before,
        "{read_after} rows, {read_before} before"
    );
}

#[test]
fn queries_far_from_every_list_make_searches_read_more() {
    let mut topics = Topics::new(3);
    let vectors = topics.vectors(40_000);
    let (exact, auto) = both(&upserts(&vectors, 0));
    // Directions unlike any topic: their neighbours lie in many lists.
    let mut rng = Normal(99);
    let strangers: Vec<Vec<f32>> = (0..100).map(|_| rng.unit()).collect();
    for q in &strangers[..40] {
        auto.check_recall(&session(), q);
    }
    let share = auto.checked_partitions()[0].2;
    assert!(share > START_SHARE, "share {share}");
    let (recall, _) = recall(&exact, &auto, &strangers[40..], None);
    assert!(recall >= 0.99, "recall@10 {recall}");
}

#[test]
fn filters_apply_before_ranking_through_the_lists() {
    let mut topics = Topics::new(4);
    let vectors = topics.vectors(40_000);
    let (exact, auto) = both(&upserts(&vectors, 0));
    let queries = topics.vectors(160);
    for q in &queries[..40] {
        auto.check_recall(&session(), q);
    }
    let (some, read_some) = recall(&exact, &auto, &queries[40..100], Some(&tagged("some")));
    let (_, read_all) = recall(&exact, &auto, &queries[40..100], None);
    assert!(
        some >= 0.99,
        "recall@10 with a quarter of the rows allowed {some}"
    );
    assert!(
        read_some > read_all && read_some < vectors.len(),
        "{read_some} rows read with the filter, {read_all} without"
    );
    // One row in two hundred allowed: every row's code is read, and the answer is exact.
    let rare = tagged("rare");
    for q in &queries[100..] {
        let got = auto.search(&session(), q, 10, Some(&rare));
        assert_eq!(VectorIndex::rows_read_by_last_first_pass(), vectors.len());
        assert!(got.iter().all(|(id, _)| id % 200 == 0), "{got:?}");
        assert_eq!(
            ids(&got),
            ids(&exact.search(&session(), q, 10, Some(&rare)))
        );
    }
}

#[test]
fn sessions_are_partitioned_from_a_size_and_unpartitioned_well_below_it() {
    let mut topics = Topics::new(5);
    let vectors = topics.vectors(PARTITION_MIN_ROWS);
    let index = VectorIndex::with_leg("m", DIMS, VectorLeg::Auto);
    index.apply(&upserts(&vectors[..PARTITION_MIN_ROWS - 1], 0));
    assert!(index.checked_partitions().is_empty());
    index.apply(&upserts(
        &vectors[PARTITION_MIN_ROWS - 1..],
        (PARTITION_MIN_ROWS - 1) as i64,
    ));
    assert_eq!(index.checked_partitions().len(), 1);
    let remove = |ids: std::ops::Range<usize>| -> Vec<IndexChange> {
        ids.map(|i| IndexChange::Remove {
            session: "s".into(),
            chunk_id: i as i64,
        })
        .collect()
    };
    // Down to half the size, the partition stays (no rebuild at every step around the size).
    index.apply(&remove(0..PARTITION_MIN_ROWS / 2));
    assert_eq!(index.checked_partitions().len(), 1);
    index.apply(&remove(PARTITION_MIN_ROWS / 2..PARTITION_MIN_ROWS / 2 + 1));
    assert!(index.checked_partitions().is_empty());
    // The exact leg leaves a partition as it is, in step with the rows.
    let index = VectorIndex::with_leg("m", DIMS, VectorLeg::Auto);
    index.apply(&upserts(&vectors, 0));
    index.set_leg(VectorLeg::Exact);
    index.apply(&remove(0..100));
    assert_eq!(index.checked_partitions()[0].0, PARTITION_MIN_ROWS - 100);
}

#[test]
fn k_means_puts_rows_of_one_topic_in_few_lists() {
    let mut topics = Topics::new(6);
    let vectors = topics.vectors(8000);
    let (codes, scales) = crate::dot::int8_rows(&vectors);
    let lists = lists_for(vectors.len());
    let mut centre = vec![0f32; DIMS];
    for v in &vectors {
        centre
            .iter_mut()
            .zip(v)
            .for_each(|(m, x)| *m += x / vectors.len() as f32);
    }
    let centroids = train(&codes, &scales, &centre, lists);
    assert_eq!(centroids.len(), lists);
    // Rows near one topic's centre land in one list far more often than chance would put them.
    let near: Vec<Vec<f32>> = (0..200)
        .map(|_| {
            let noise = topics.rng.unit();
            let mut v: Vec<f32> = topics.centres[0]
                .iter()
                .zip(&noise)
                .map(|(c, e)| c + 0.3 * e)
                .collect();
            normalize(&mut v);
            v
        })
        .collect();
    let (near_codes, near_scales) = crate::dot::int8_rows(&near);
    let mut dots = vec![0i32; lists];
    let mut counts = vec![0usize; lists];
    for (code, &scale) in near_codes.chunks_exact(DIMS).zip(&near_scales) {
        counts[centroids.nearest(code, scale, &mut dots) as usize] += 1;
    }
    let most = counts.iter().max().copied().unwrap_or(0);
    assert!(
        most >= 100,
        "the largest list took {most} of 200 ({lists} lists)"
    );
}
