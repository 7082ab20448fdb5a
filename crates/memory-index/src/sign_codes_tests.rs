//! The binary first pass against the exact scan, on the builtin model's vectors of generated
//! sentences: recall (with and without centring), filters before ranking, codes in step with every
//! change, the centre taken again on growth.

use std::collections::HashSet;

use super::*;
use crate::dot::int8_rows;
use crate::embedding::{BuiltinEmbedder, normalize};
use crate::facets::{ChunkFacets, FacetFilter};
use crate::filters::{QueryFilters, Scope};
use crate::terms::TermBag;
use crate::vector_index::{IndexChange, VectorIndex, VectorLeg};

pub(super) struct Lcg(pub(super) u64);

impl Lcg {
    pub(super) fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.next() % words.len()]
    }
}

const WHO: &[&str] = &[
    "my sister",
    "the landlord",
    "our team lead",
    "Dr. Patel",
    "the kids",
    "my manager",
    "a neighbour",
    "the dentist",
    "grandma",
    "the new intern",
    "Sam",
    "the accountant",
    "my running club",
    "the plumber",
    "our client in Berlin",
    "the school",
    "Maria",
    "the vet",
];
const DID: &[&str] = &[
    "moved",
    "cancelled",
    "asked about",
    "paid for",
    "forgot",
    "rescheduled",
    "recommended",
    "complained about",
    "finished",
    "booked",
    "needs help with",
    "sent the invoice for",
    "is allergic to",
    "loves",
    "is learning",
    "broke",
    "repaired",
    "wants to discuss",
];
const WHAT: &[&str] = &[
    "the quarterly report",
    "a trip to Lisbon",
    "the kitchen sink",
    "peanut butter",
    "the piano lessons",
    "a birthday party",
    "the database migration",
    "a marathon",
    "the rent increase",
    "a vegan lasagna recipe",
    "the car insurance",
    "Spanish grammar",
    "the flu vaccine",
    "a job interview",
    "the garden fence",
    "a sourdough starter",
    "the tax return",
    "the API rate limits",
    "a photography course",
    "the wedding playlist",
    "the broken laptop",
    "a chess tournament",
    "the hiking boots",
    "a podcast episode",
];
const WHEN: &[&str] = &[
    "next Tuesday",
    "before the holidays",
    "last weekend",
    "in March",
    "every morning",
    "after the meeting",
    "by Friday",
    "tonight",
    "at the end of the month",
    "yesterday",
    "during the conference",
    "since January",
];
const WHY: &[&str] = &[
    "",
    "because of the weather",
    "to save money",
    "since the deadline moved",
    "as promised",
    "for the third time",
    "which was a surprise",
    "with some hesitation",
];

/// Varied short notes, like a user's memories.
pub(super) fn sentences(rng: &mut Lcg, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let words = [WHO, DID, WHAT, WHEN, WHY].map(|list| rng.pick(list));
            words.join(" ").trim().to_owned()
        })
        .collect()
}

pub(super) fn embed(texts: &[String]) -> Vec<Vec<f32>> {
    let mut vectors = BuiltinEmbedder::new(256)
        .unwrap()
        .embed_blocking(texts)
        .unwrap();
    vectors.iter_mut().for_each(|v| normalize(v));
    vectors
}

pub(super) const DIMS: usize = 384;

pub(super) fn upsert(chunk_id: i64, vector: &[f32], tagged: bool) -> IndexChange {
    IndexChange::Upsert {
        session: "s".into(),
        chunk_id,
        vector: vector.to_vec(),
        facets: ChunkFacets {
            tags: tagged.then(|| "rare".to_owned()).into_iter().collect(),
            ..ChunkFacets::default()
        },
        terms: TermBag::default(),
    }
}

pub(super) fn both(changes: &[IndexChange]) -> (VectorIndex, VectorIndex) {
    let exact = VectorIndex::with_leg("m", DIMS, VectorLeg::Exact);
    let approx = VectorIndex::with_leg("m", DIMS, VectorLeg::Approximate);
    exact.apply(changes);
    approx.apply(changes);
    (exact, approx)
}

pub(super) fn ids(found: &[(i64, f32)]) -> HashSet<i64> {
    found.iter().map(|(id, _)| *id).collect()
}

pub(super) fn session() -> [String; 1] {
    ["s".to_owned()]
}

/// The share of the exact top 10 found by `approx`, over `queries`.
pub(super) fn recall_at_10(exact: &VectorIndex, approx: &VectorIndex, queries: &[Vec<f32>]) -> f64 {
    let mut found = 0;
    let mut relevant = 0;
    for q in queries {
        let truth = ids(&exact.search(&session(), q, 10, None));
        relevant += truth.len();
        found += truth
            .intersection(&ids(&approx.search(&session(), q, 10, None)))
            .count();
    }
    found as f64 / relevant.max(1) as f64
}

#[test]
fn the_first_pass_recalls_the_exact_top_10_and_centring_and_the_mask_matter() {
    let mut rng = Lcg(11);
    let rows = embed(&sentences(&mut rng, 6000));
    let queries = embed(&sentences(&mut rng, 200));
    let changes: Vec<IndexChange> = rows
        .iter()
        .enumerate()
        .map(|(i, v)| upsert(i as i64, v, false))
        .collect();
    let (exact, approx) = both(&changes);
    assert_eq!(approx.coded_rows(), vec![(6000, 6000)]);
    assert!(
        exact.coded_rows().is_empty(),
        "the exact index has no codes"
    );
    let recall = recall_at_10(&exact, &approx, &queries);
    assert!(recall >= 0.99, "recall@10 {recall}");

    // The first pass alone, around the mean and around zero, at a few candidate counts.
    let (codes, scales) = int8_rows(&rows);
    let centred = SignCodes::build(&codes, &scales, DIMS, Centring::Mean);
    let plain = SignCodes::build(&codes, &scales, DIMS, Centring::Zero);
    // Chunk ids are row numbers here (no row was removed).
    let truth: Vec<HashSet<i64>> = queries
        .iter()
        .map(|q| ids(&exact.search(&session(), q, 10, None)))
        .collect();
    for want in [50, 100, 200, 400, 800] {
        let with = centred.candidate_recall(&queries, &truth, want, true);
        let without = plain.candidate_recall(&queries, &truth, want, true);
        let unmasked = centred.candidate_recall(&queries, &truth, want, false);
        eprintln!(
            "{want} candidates of 6000: recall@10 {with:.4} centred, {without:.4} not, {unmasked:.4} centred without the mask"
        );
        assert!(
            with >= unmasked,
            "{want}: masked {with}, plain Hamming {unmasked}"
        );
        if want <= 100 {
            assert!(
                with > unmasked,
                "{want}: masked {with}, plain Hamming {unmasked}"
            );
        }
        assert!(
            with >= without,
            "{want}: centred {with}, around zero {without}"
        );
        if want <= 100 {
            assert!(
                with > without,
                "{want}: centred {with}, around zero {without}"
            );
        }
    }
}

#[test]
fn a_code_has_one_bit_per_component_above_the_centre() {
    let mut rng = Lcg(2);
    for dims in [1usize, 63, 64, 100, 384] {
        let centre: Vec<f32> = (0..dims)
            .map(|_| (rng.next() % 21) as f32 / 100.0 - 0.1)
            .collect();
        let code: Vec<i8> = (0..dims).map(|_| (rng.next() % 255) as i8).collect();
        let scale = 0.002;
        let mut out = vec![0u64; dims.div_ceil(64)];
        encode(&centre, &code, scale, &mut out);
        let naive: Vec<bool> = code
            .iter()
            .zip(&centre)
            .map(|(&c, &m)| f32::from(c) * scale > m)
            .collect();
        let bits: Vec<bool> = (0..dims)
            .map(|i| out[i / 64] >> (i % 64) & 1 == 1)
            .collect();
        assert_eq!(bits, naive, "{dims} dimensions");
        // Bits past the last component stay clear.
        if dims % 64 != 0 {
            assert_eq!(out[dims / 64] >> (dims % 64), 0, "{dims} dimensions");
        }
    }
}

#[test]
fn a_selective_filter_applies_before_ranking() {
    let mut rng = Lcg(5);
    let rows = embed(&sentences(&mut rng, 4000));
    // One row in a hundred is tagged: the closest codes hold few of them.
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
    for q in embed(&sentences(&mut rng, 30)) {
        let truth = exact.search(&session(), &q, 10, Some(&rare));
        let got = approx.search(&session(), &q, 10, Some(&rare));
        assert!(got.iter().all(|(id, _)| id % 100 == 0), "{got:?}");
        assert_eq!(got.len(), 10);
        assert_eq!(ids(&got), ids(&truth));
    }
}

/// The candidates `signs` gives `query` under `admit`, and how many rows `admit` was asked about.
fn asked_and_found(
    signs: &SignCodes,
    query: &crate::hamming::QueryCode,
    admit: impl Fn(usize) -> bool,
) -> (usize, Vec<u32>) {
    // The filter is a `Fn` (one walk of the distances may serve several): counted in a cell.
    let asked = std::cell::Cell::new(0usize);
    let mut found = Vec::new();
    let counted = |row| {
        asked.set(asked.get() + 1);
        admit(row)
    };
    signs.candidates(query, 100, counted, &mut found);
    (asked.get(), found)
}

#[test]
fn the_filter_is_asked_only_about_rows_near_the_cut_off() {
    let mut rng = Lcg(8);
    let rows = embed(&sentences(&mut rng, 3000));
    let (codes, scales) = int8_rows(&rows);
    let signs = SignCodes::build(&codes, &scales, DIMS, Centring::Mean);
    let query = signs.query_code(&embed(&sentences(&mut rng, 1))[0]);
    let (asked, found) = asked_and_found(&signs, &query, |_| true);
    assert!(
        found.len() >= 100 && asked == found.len(),
        "{asked} asked, {} found",
        found.len()
    );
    assert!(asked < 400, "asked about {asked} rows of 3000");
    // A filter that admits every other row: asked about more rows, still enough found.
    let (asked, found) = asked_and_found(&signs, &query, |row| row % 2 == 0);
    assert!(found.len() >= 100 && found.iter().all(|r| r % 2 == 0));
    assert!(asked < 1000, "asked about {asked} rows of 3000");
    // Nothing admitted: every row asked once, none found.
    let (asked, found) = asked_and_found(&signs, &query, |_| false);
    assert_eq!((asked, found.len()), (3000, 0));
}

#[test]
fn the_codes_follow_updates_moves_and_deletes() {
    let mut rng = Lcg(3);
    let texts = sentences(&mut rng, 5000);
    let vectors = embed(&texts);
    let changes: Vec<IndexChange> = vectors[..2000]
        .iter()
        .enumerate()
        .map(|(i, v)| upsert(i as i64, v, false))
        .collect();
    let (exact, approx) = both(&changes);
    let mut spare = vectors[2000..].iter();
    // Delete every third row (the last rows move into the holes), give every fifth another text,
    // add new rows, one batch at a time, as saves, updates and deletes do.
    for round in 0..3i64 {
        let mut batch = Vec::new();
        for id in (round..2000).step_by(3) {
            batch.push(IndexChange::Remove {
                session: "s".into(),
                chunk_id: id,
            });
        }
        for id in (1..2000).step_by(5) {
            batch.push(upsert(id, spare.next().unwrap(), false));
        }
        for i in 0..300 {
            batch.push(upsert(
                10_000 + round * 1000 + i,
                spare.next().unwrap(),
                false,
            ));
        }
        exact.apply(&batch);
        approx.apply(&batch);
        assert_eq!(approx.len(), exact.len());
        assert_eq!(approx.coded_rows()[0].0, approx.len());
        // Asking for as many as there are rows takes every row: the same set as the exact scan.
        let q = &vectors[round as usize];
        let all = exact.len();
        assert_eq!(
            ids(&approx.search(&session(), q, all, None)),
            ids(&exact.search(&session(), q, all, None))
        );
        // Each row's code is its own: searching with a row's own vector finds that row first.
        for (i, v) in vectors[2000..2300].iter().enumerate().step_by(10) {
            let truth = exact.search(&session(), v, 1, None);
            let got = approx.search(&session(), v, 1, None);
            assert_eq!(
                got.first().map(|h| h.0),
                truth.first().map(|h| h.0),
                "row {i}"
            );
        }
        let queries = embed(&sentences(&mut rng, 50));
        let recall = recall_at_10(&exact, &approx, &queries);
        assert!(recall >= 0.99, "round {round}: recall@10 {recall}");
    }
}

#[test]
fn the_centre_is_taken_again_on_growth_and_the_leg_switches() {
    let mut rng = Lcg(9);
    let vectors = embed(&sentences(&mut rng, 900));
    let index = VectorIndex::with_leg("m", DIMS, VectorLeg::Auto);
    let first: Vec<IndexChange> = (0..100)
        .map(|i| upsert(i, &vectors[i as usize], false))
        .collect();
    index.apply(&first);
    assert!(index.coded_rows().is_empty(), "small sessions are scanned");
    index.set_leg(VectorLeg::Approximate);
    assert_eq!(index.coded_rows(), vec![(100, 100)]);
    // Up to four times the rows the centre was taken at, codes are added with that centre ...
    let more: Vec<IndexChange> = (100..400)
        .map(|i| upsert(i, &vectors[i as usize], false))
        .collect();
    index.apply(&more);
    assert_eq!(index.coded_rows(), vec![(400, 100)]);
    // ... past that, they are all taken again around a new one.
    index.apply(&[upsert(400, &vectors[400], false)]);
    assert_eq!(index.coded_rows(), vec![(401, 401)]);
    // Exact searches ignore the codes but keep them in step; Auto drops them at this size.
    index.set_leg(VectorLeg::Exact);
    index.apply(&[IndexChange::Remove {
        session: "s".into(),
        chunk_id: 0,
    }]);
    assert_eq!(index.coded_rows(), vec![(400, 401)]);
    index.set_leg(VectorLeg::Auto);
    assert!(index.coded_rows().is_empty());
}
