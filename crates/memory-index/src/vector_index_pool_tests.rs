//! Tests of the pool of small sessions: searched as one or gathered, the answer is each
//! session's own (scoped, filtered, following changes), a session that grows leaves it, and its
//! binary first pass finds what the exact scan finds.

use std::collections::HashMap;

use super::*;
use crate::facets::ChunkFacets;
use crate::filters::{QueryFilters, Scope};
use crate::terms::TermBag;

/// Seeded pseudo-random unit vectors around a shared direction (as a text model's are).
pub(super) struct Rows {
    seed: u64,
    dims: usize,
    centre: Vec<f32>,
}

impl Rows {
    pub(super) fn new(dims: usize) -> Self {
        Self::seeded(dims, 11)
    }

    /// Rows of another sequence (`new` is seed 11).
    pub(super) fn seeded(dims: usize, seed: u64) -> Self {
        let mut rows = Self {
            seed,
            dims,
            centre: Vec::new(),
        };
        rows.centre = rows.noise();
        rows
    }

    fn noise(&mut self) -> Vec<f32> {
        (0..self.dims)
            .map(|_| {
                self.seed = self
                    .seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((self.seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect()
    }

    pub(super) fn unit(&mut self) -> Vec<f32> {
        let noise = self.noise();
        let mut v: Vec<f32> = self.centre.iter().zip(noise).map(|(c, n)| c + n).collect();
        crate::embedding::normalize(&mut v);
        v
    }
}

fn upsert(session: &str, chunk_id: i64, vector: Vec<f32>) -> IndexChange {
    IndexChange::Upsert {
        session: session.into(),
        chunk_id,
        vector,
        facets: ChunkFacets {
            // Every third chunk is tagged, to check filtering.
            tags: (chunk_id % 3 == 0)
                .then(|| "kept".to_owned())
                .into_iter()
                .collect(),
            ..ChunkFacets::default()
        },
        terms: TermBag::default(),
    }
}

pub(super) fn session(i: usize) -> String {
    format!("conversation-{i}")
}

/// The truth: every chunk's session and vector.
pub(super) type Truth = HashMap<i64, (String, Vec<f32>)>;

/// The best `limit` chunks of `sessions` by f32 cosine (tagged ones only with `tagged`).
fn exact(
    truth: &Truth,
    sessions: &[String],
    query: &[f32],
    limit: usize,
    tagged: bool,
) -> Vec<(i64, f32)> {
    let mut all: Vec<(i64, f32)> = truth
        .iter()
        .filter(|(id, (s, _))| sessions.contains(s) && (!tagged || *id % 3 == 0))
        .map(|(id, (_, v))| (*id, v.iter().zip(query).map(|(a, b)| a * b).sum()))
        .filter(|(_, s)| *s > 0.0)
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(limit);
    all
}

/// `got` is `want` up to the rows' rounding: the same scores position by position, every chunk
/// one of the sessions searched.
pub(super) fn same(got: &[(i64, f32)], want: &[(i64, f32)], truth: &Truth, sessions: &[String]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for ((id, score), (_, expected)) in got.iter().zip(want) {
        assert!(
            sessions.contains(&truth[id].0),
            "chunk {id} of another session"
        );
        assert!((score - expected).abs() < 4e-3, "{got:?} vs {want:?}");
    }
}

fn tagged() -> FacetFilter {
    FacetFilter::new(Scope {
        filters: QueryFilters {
            tags_any: vec!["kept".into()],
            ..QueryFilters::default()
        },
        expired_at: None,
    })
}

/// `sessions` sessions of `rows` rows each, chunk ids numbered across them.
fn pooled(index: &VectorIndex, rows: &mut Rows, sessions: usize, each: usize) -> Truth {
    let mut truth = Truth::new();
    let mut changes = Vec::new();
    for s in 0..sessions {
        for r in 0..each {
            let id = (s * each + r) as i64;
            let v = rows.unit();
            truth.insert(id, (session(s), v.clone()));
            changes.push(upsert(&session(s), id, v));
        }
    }
    index.apply(&changes);
    truth
}

#[test]
fn pooled_sessions_answer_as_their_own_matrices_did() {
    let dims = 48;
    let mut rows = Rows::new(dims);
    for leg in [VectorLeg::Auto, VectorLeg::Exact, VectorLeg::Approximate] {
        let index = VectorIndex::with_leg("m", dims, leg);
        let mut truth = pooled(&index, &mut rows, 30, 40);
        assert!(
            index.own_sessions().is_empty(),
            "small sessions share the pool"
        );
        let all: Vec<String> = (0..30).map(session).collect();
        let few: Vec<String> = vec![session(3), session(17)];
        let one = vec![session(29)];
        let check = |index: &VectorIndex, truth: &Truth| {
            for _ in 0..10 {
                let q = Rows::new(dims).unit();
                for scope in [&all, &few, &one] {
                    let got = index.search(scope, &q, 10, None);
                    same(&got, &exact(truth, scope, &q, 10, false), truth, scope);
                    let got = index.search(scope, &q, 10, Some(&tagged()));
                    same(&got, &exact(truth, scope, &q, 10, true), truth, scope);
                }
            }
        };
        check(&index, &truth);
        // Removals move the pool's last row into the gap, across sessions.
        let gone: Vec<i64> = vec![0, 41, 85, 1199, 600, 601, 602];
        let removals: Vec<IndexChange> = gone
            .iter()
            .map(|id| IndexChange::Remove {
                session: truth[id].0.clone(),
                chunk_id: *id,
            })
            .collect();
        // A removal named under another session changes nothing.
        index.apply(&[IndexChange::Remove {
            session: session(5),
            chunk_id: 41,
        }]);
        assert_eq!(index.len(), 1200);
        index.apply(&removals);
        for id in &gone {
            truth.remove(id);
        }
        assert_eq!(index.len(), truth.len());
        check(&index, &truth);
        // A session emptied and filled again, and an update in place.
        let emptied: Vec<IndexChange> = (0..40)
            .filter(|r| truth.contains_key(&(400 + r)))
            .map(|r| IndexChange::Remove {
                session: session(10),
                chunk_id: 400 + r,
            })
            .collect();
        index.apply(&emptied);
        truth.retain(|_, (s, _)| *s != session(10));
        let v = rows.unit();
        index.apply(&[
            upsert(&session(10), 5000, v.clone()),
            upsert(&session(2), 80, v.clone()),
        ]);
        truth.insert(5000, (session(10), v.clone()));
        truth.insert(80, (session(2), v));
        check(&index, &truth);
        // Every change is held as applied.
        assert!(index.holds(&[upsert(&session(10), 5000, truth[&5000].1.clone())]));
        assert!(!index.holds(&[upsert(&session(11), 5000, truth[&5000].1.clone())]));
        assert!(index.allows(&session(2), 81, &tagged()));
        assert!(
            !index.allows(&session(3), 81, &tagged()),
            "another session's chunk"
        );
    }
}

#[test]
fn a_session_that_grows_leaves_the_pool() {
    let dims = 8;
    let mut rows = Rows::new(dims);
    let index = VectorIndex::new("m", dims);
    let mut truth = pooled(&index, &mut rows, 5, 100);
    let big = session(1);
    let grown: Vec<IndexChange> = (0..APPROX_MIN_ROWS as i64)
        .map(|i| {
            let v = rows.unit();
            truth.insert(10_000 + i, (big.clone(), v.clone()));
            upsert(&big, 10_000 + i, v)
        })
        .collect();
    // In two batches: the session crosses the threshold in the second.
    let (first, second) = grown.split_at(APPROX_MIN_ROWS - 200);
    index.apply(first);
    assert!(index.own_sessions().is_empty());
    index.apply(second);
    assert_eq!(index.own_sessions(), vec![big.clone()]);
    assert_eq!(index.len(), truth.len());
    let all: Vec<String> = (0..5).map(session).collect();
    for _ in 0..5 {
        let q = Rows::new(dims).unit();
        for scope in [all.clone(), vec![big.clone()], vec![session(0)]] {
            let got = index.search_with(VectorLeg::Exact, &scope, &q, 10, None);
            same(&got, &exact(&truth, &scope, &q, 10, false), &truth, &scope);
        }
    }
    // Its chunks are found in its own matrix now.
    assert!(index.holds(&[upsert(&big, 150, truth[&150].1.clone())]));
}

#[test]
fn the_pools_first_pass_finds_what_the_exact_scan_finds() {
    let dims = 64;
    let mut rows = Rows::new(dims);
    let index = VectorIndex::new("m", dims);
    // Rows in topics, as texts are (structureless rows would send the search to the exact scan).
    let topics: Vec<Vec<f32>> = (0..40).map(|_| rows.noise()).collect();
    let mut changes = Vec::new();
    for id in 0..12_000i64 {
        let topic = &topics[(id as usize * 7) % topics.len()];
        let noise = rows.noise();
        let mut v: Vec<f32> = topic.iter().zip(noise).map(|(t, n)| t + 0.4 * n).collect();
        crate::embedding::normalize(&mut v);
        changes.push(upsert(&session(id as usize / 200), id, v));
    }
    index.apply(&changes);
    assert!(
        !index.coded_rows().is_empty(),
        "a pool of 12,000 rows has binary codes"
    );
    let all: Vec<String> = (0..60).map(session).collect();
    let most: Vec<String> = (0..45).map(session).collect();
    // The searches below take the first pass: it keeps well under one row in eight.
    let reach = index.reach(&most);
    assert!(
        matches!(reach.as_slice(), [(12_000, share)] if *share < 0.1),
        "{reach:?}"
    );
    let (mut found, mut wanted) = (0usize, 0usize);
    for k in 0..50 {
        let noise = rows.noise();
        let mut q: Vec<f32> = topics[k % 40]
            .iter()
            .zip(noise)
            .map(|(t, n)| t + 0.6 * n)
            .collect();
        crate::embedding::normalize(&mut q);
        for scope in [&all, &most] {
            let truth: Vec<i64> = index
                .search_with(VectorLeg::Exact, scope, &q, 10, None)
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            let got = index.search_with(VectorLeg::Auto, scope, &q, 10, None);
            wanted += truth.len();
            found += got.iter().filter(|(id, _)| truth.contains(id)).count();
        }
    }
    let recall = found as f64 / wanted as f64;
    assert!(recall >= 0.99, "recall@10 {recall}");
}
