//! Tests of a search within a span of time: a narrow span's chunks are listed once
//! ([`VectorIndex::chunks_within`]) and scored exactly, whatever the leg, in the pool and in a
//! session's own matrix alike; a wide span, or a filter without one, is searched as before; and
//! several filters searched in one walk answer as each alone.

use chrono::{DateTime, Duration, Utc};

use super::pool_tests::{Rows, Truth, same, session};
use super::*;
use crate::facets::ChunkFacets;
use crate::filters::{QueryFilters, Scope, time_text};
use crate::terms::TermBag;

const DIMS: usize = 32;
/// The session large enough for a matrix of its own.
const BIG: &str = "big";

fn day(n: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).expect("a time") + Duration::days(n)
}

/// Chunk `id` was created on day `id / 10`; every third chunk is tagged.
fn facets(id: i64) -> ChunkFacets {
    ChunkFacets {
        tags: (id % 3 == 0)
            .then(|| "kept".to_owned())
            .into_iter()
            .collect(),
        created_at: time_text(day(id / 10)),
        ..ChunkFacets::default()
    }
}

/// Forty pooled sessions of fifty chunks (ids 0..2000, days 0..200) and one of its own
/// (ids 10,000 on, days 1,000 on).
fn fixture(leg: VectorLeg) -> (VectorIndex, Truth) {
    let index = VectorIndex::with_leg("m", DIMS, leg);
    let mut rows = Rows::new(DIMS);
    let mut truth = Truth::new();
    let big = (0..APPROX_MIN_ROWS as i64 + 500).map(|r| (BIG.to_owned(), 10_000 + r));
    let pooled = (0..2000).map(|id| (session(id as usize / 50), id));
    let changes: Vec<IndexChange> = pooled
        .chain(big)
        .map(|(session, chunk_id)| {
            let vector = rows.unit();
            truth.insert(chunk_id, (session.clone(), vector.clone()));
            IndexChange::Upsert {
                session,
                chunk_id,
                vector,
                facets: facets(chunk_id),
                terms: TermBag::default(),
            }
        })
        .collect();
    index.apply(&changes);
    assert_eq!(index.own_sessions(), vec![BIG.to_owned()]);
    (index, truth)
}

/// Chunks created from day `from` to before day `to`, tagged ones only with `tagged`.
fn span(from: i64, to: i64, tagged: bool) -> FacetFilter {
    FacetFilter::new(Scope {
        filters: QueryFilters {
            created_after: Some(day(from)),
            created_before: Some(day(to)),
            tags_any: if tagged { vec!["kept".into()] } else { vec![] },
            ..QueryFilters::default()
        },
        expired_at: None,
    })
}

/// The ids of `sessions`' chunks that `filter` allows, ascending.
fn allowed(truth: &Truth, sessions: &[String], filter: &FacetFilter) -> Vec<i64> {
    let mut ids: Vec<i64> = truth
        .iter()
        .filter(|(id, (s, _))| sessions.contains(s) && filter.allows(&facets(**id)))
        .map(|(id, _)| *id)
        .collect();
    ids.sort_unstable();
    ids
}

/// The best `limit` of them by f32 cosine.
fn exact(truth: &Truth, sessions: &[String], q: &[f32], filter: &FacetFilter) -> Vec<(i64, f32)> {
    let mut all: Vec<(i64, f32)> = allowed(truth, sessions, filter)
        .into_iter()
        .map(|id| (id, truth[&id].1.iter().zip(q).map(|(a, b)| a * b).sum()))
        .filter(|(_, s)| *s > 0.0)
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(10);
    all
}

#[test]
fn a_narrow_span_is_listed_and_scored_exactly_by_every_leg() {
    let all: Vec<String> = (0..40).map(session).chain([BIG.to_owned()]).collect();
    let few = vec![session(3), BIG.to_owned()];
    // In the pool; tagged there; in the own matrix; across both; before every chunk.
    let spans = [
        span(5, 9, false),
        span(5, 30, true),
        span(1010, 1030, false),
        span(150, 1020, false),
        span(-30, -1, false),
    ];
    let mut queries = Rows::seeded(DIMS, 5);
    for leg in [VectorLeg::Auto, VectorLeg::Exact, VectorLeg::Approximate] {
        let (index, truth) = fixture(leg);
        for scope in [&all, &few] {
            for filter in &spans {
                let listed = index.chunks_within(scope, filter);
                assert_eq!(listed, Some(allowed(&truth, scope, filter)), "{leg:?}");
                for _ in 0..5 {
                    let q = queries.unit();
                    let got = index.search(scope, &q, 10, Some(filter));
                    same(&got, &exact(&truth, scope, &q, filter), &truth, scope);
                }
            }
        }
        // Session 1 (days 5 to 9) is not searched: nothing of the span is.
        assert_eq!(index.chunks_within(&few, &spans[0]), Some(vec![]));
        let q = queries.unit();
        assert!(index.search(&few, &q, 10, Some(&spans[0])).is_empty());
    }
}

#[test]
fn a_wide_span_or_none_is_searched_as_before() {
    let (index, truth) = fixture(VectorLeg::Exact);
    let all: Vec<String> = (0..40).map(session).chain([BIG.to_owned()]).collect();
    let wide = span(0, 2000, false);
    let untimed = FacetFilter::new(Scope {
        filters: QueryFilters {
            tags_any: vec!["kept".into()],
            ..QueryFilters::default()
        },
        expired_at: None,
    });
    let mut queries = Rows::seeded(DIMS, 7);
    for filter in [&wide, &untimed] {
        assert_eq!(index.chunks_within(&all, filter), None);
        for _ in 0..5 {
            let q = queries.unit();
            let got = index.search(&all, &q, 10, Some(filter));
            same(&got, &exact(&truth, &all, &q, filter), &truth, &all);
        }
    }
}

#[test]
fn several_filters_in_one_walk_answer_as_each_alone() {
    let all: Vec<String> = (0..40).map(session).chain([BIG.to_owned()]).collect();
    let few = vec![session(3), session(30), BIG.to_owned()];
    let narrow = span(1010, 1030, false);
    let wide = span(0, 2000, false);
    let tagged = span(-1, 3000, true);
    let filters = [None, Some(&narrow), Some(&wide), Some(&tagged)];
    let mut queries = Rows::seeded(DIMS, 9);
    for leg in [VectorLeg::Auto, VectorLeg::Exact, VectorLeg::Approximate] {
        let (index, _) = fixture(leg);
        for scope in [&all, &few] {
            for _ in 0..5 {
                let q = queries.unit();
                let (together, _) =
                    index.search_each(leg, scope, &q, &vec![10; filters.len()], &filters, false);
                assert_eq!(together.len(), filters.len());
                for (got, filter) in together.iter().zip(filters) {
                    let alone = index.search_with(leg, scope, &q, 10, filter);
                    assert_eq!(got, &alone, "{leg:?}");
                    assert!(!got.is_empty());
                }
            }
        }
    }
}

/// Each filter takes its own number of results in the one walk (the span of a query's time
/// fewer than the whole search), and gets what it would alone with that number.
#[test]
fn each_filter_takes_its_own_limit_in_one_walk() {
    let all: Vec<String> = (0..40).map(session).chain([BIG.to_owned()]).collect();
    let narrow = span(1010, 1030, false);
    let wide = span(0, 2000, false);
    let filters = [None, Some(&narrow), Some(&wide)];
    let limits = [20, 5, 8];
    let mut queries = Rows::seeded(DIMS, 17);
    for leg in [VectorLeg::Exact, VectorLeg::Approximate] {
        let (index, _) = fixture(leg);
        for _ in 0..5 {
            let q = queries.unit();
            let (together, _) = index.search_each(leg, &all, &q, &limits, &filters, false);
            for ((got, filter), limit) in together.iter().zip(filters).zip(limits) {
                let alone = index.search_with(leg, &all, &q, limit, filter);
                assert_eq!(got, &alone, "{leg:?}, limit {limit}");
                assert_eq!(got.len(), limit, "{leg:?}");
            }
        }
        let q = queries.unit();
        let (none, _) = index.search_each(leg, &all, &q, &[10, 0, 10], &filters, false);
        assert!(none.iter().all(Vec::is_empty), "a limit of 0 finds nothing");
        assert_eq!(none.len(), filters.len());
    }
}

/// A span too large to gather whole (more rows than twice the first pass's candidates for as
/// many) takes its candidates from the first pass, as many as a matrix of the span's rows would
/// need: it finds the span's best as often as the unfiltered pass finds the matrix's (against
/// the exact scan's, same int8 scoring). Spans of a twentieth (gathered), a seventh (listed,
/// then left to the pass) and two fifths of 24,000 rows (counted); alone and beside the
/// unfiltered search, whose distances they share.
#[test]
fn a_span_too_large_to_gather_finds_its_best_through_the_first_pass() {
    let rows = 24_000i64;
    let index = VectorIndex::with_leg("m", DIMS, VectorLeg::Approximate);
    let mut vectors = Rows::seeded(DIMS, 11);
    let changes: Vec<IndexChange> = (0..rows)
        .map(|chunk_id| IndexChange::Upsert {
            session: BIG.to_owned(),
            chunk_id,
            vector: vectors.unit(),
            // Ten chunks a day, as `facets` says: days 0 to 2,400.
            facets: facets(chunk_id),
            terms: TermBag::default(),
        })
        .collect();
    index.apply(&changes);
    let scope = vec![BIG.to_owned()];
    let ids = |found: &[(i64, f32)]| found.iter().map(|(id, _)| *id).collect::<Vec<_>>();
    // Of `exact`'s ids, how many `got` holds.
    let shared = |got: &[i64], exact: &[i64]| exact.iter().filter(|id| got.contains(id)).count();
    let spans = [
        span(0, 120, false),
        span(600, 940, false),
        span(1000, 1960, false),
    ];
    let mut queries = Rows::seeded(DIMS, 13);
    let (mut unfiltered, mut within, mut expected) = (0, 0, 0);
    for (n, filter) in spans.iter().enumerate() {
        let (found, wanted) = (within, expected);
        for _ in 0..20 {
            let q = queries.unit();
            let passes = [None, Some(filter)];
            let each = |leg| {
                index
                    .search_each(leg, &scope, &q, &[10, 10], &passes, false)
                    .0
            };
            let (exact, both) = (each(VectorLeg::Exact), each(VectorLeg::Approximate));
            let alone = index.search_with(VectorLeg::Approximate, &scope, &q, 10, Some(filter));
            assert_eq!(
                both[1], alone,
                "the span beside the unfiltered search answers as alone"
            );
            assert!(
                alone.iter().all(|(id, _)| filter.allows(&facets(*id))),
                "{alone:?}"
            );
            assert_eq!((exact[0].len(), exact[1].len()), (10, 10));
            unfiltered += shared(&ids(&both[0]), &ids(&exact[0]));
            within += shared(&ids(&alone), &ids(&exact[1]));
            expected += 10;
        }
        let recall = (within - found) as f64 / (expected - wanted) as f64;
        assert!(recall >= 0.98, "recall@10 within span {n}: {recall:.3}");
    }
    let (unfiltered, within) = (
        unfiltered as f64 / expected as f64,
        within as f64 / expected as f64,
    );
    assert!(
        within >= unfiltered - 0.005,
        "recall@10 within the spans {within:.4}, of the whole {unfiltered:.4}"
    );
}
