//! The first pass measures its own reach: rows whose codes rank them well ask for few candidates,
//! scattered ones for many (or the exact scan), and live probes with real queries raise the count.

use std::collections::HashSet;

use super::*;
use crate::dot::int8_rows;
use crate::embedding::normalize;
use crate::facets::ChunkFacets;
use crate::sign_codes::{Centring, SignCodes, candidate_count};
use crate::terms::TermBag;
use crate::vector_index::{IndexChange, VectorIndex, VectorLeg};

const DIMS: usize = 64;
const ROWS: usize = 6000;

/// A seeded generator of standard normal numbers (Box–Muller over a 64-bit LCG).
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

/// Directions with no structure: a query's exact neighbours are barely closer than any row, so
/// one bit per dimension scatters them.
fn scattered(rng: &mut Normal, n: usize) -> Vec<Vec<f32>> {
    (0..n).map(|_| rng.unit()).collect()
}

/// Tight groups of twenty around random centres: a row's ten nearest are group mates, which share
/// almost all its bits.
fn grouped(rng: &mut Normal, n: usize) -> Vec<Vec<f32>> {
    let mut rows = Vec::with_capacity(n);
    while rows.len() < n {
        let centre = rng.unit();
        for _ in 0..20 {
            let mut v: Vec<f32> = centre.iter().map(|c| c + 0.02 * rng.next()).collect();
            normalize(&mut v);
            rows.push(v);
        }
    }
    rows.truncate(n);
    rows
}

fn codes_of(vectors: &[Vec<f32>]) -> SignCodes {
    let (codes, scales) = int8_rows(vectors);
    SignCodes::build(&codes, &scales, DIMS, Centring::Mean)
}

/// Upserts of rows `range` of `vectors` into session `s`, chunk id = row.
fn upserts(vectors: &[Vec<f32>], range: std::ops::Range<usize>) -> Vec<IndexChange> {
    range
        .map(|i| IndexChange::Upsert {
            session: "s".into(),
            chunk_id: i as i64,
            vector: vectors[i].clone(),
            facets: ChunkFacets::default(),
            terms: TermBag::default(),
        })
        .collect()
}

fn index_of(vectors: &[Vec<f32>], leg: VectorLeg) -> VectorIndex {
    let index = VectorIndex::with_leg("m", DIMS, leg);
    index.apply(&upserts(vectors, 0..vectors.len()));
    index
}

fn top10(index: &VectorIndex, q: &[f32]) -> HashSet<i64> {
    index
        .search(&["s".to_owned()], q, 10, None)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

#[test]
fn rows_that_codes_rank_well_need_few_candidates_and_scattered_ones_many() {
    let mut rng = Normal(7);
    let tight = codes_of(&grouped(&mut rng, ROWS)).needed_share();
    let loose = codes_of(&scattered(&mut rng, ROWS)).needed_share();
    assert!(tight < 0.01, "grouped rows: {tight}");
    assert!(loose > 0.1, "scattered rows: {loose}");
    // Too few rows to measure: the fixed count takes them all anyway.
    assert_eq!(codes_of(&scattered(&mut rng, 500)).needed_share(), 0.0);
}

#[test]
fn the_default_leg_keeps_recall_where_a_fixed_candidate_count_loses_it() {
    let mut rng = Normal(11);
    let rows = scattered(&mut rng, ROWS);
    let queries: Vec<Vec<f32>> = (0..100).map(|_| rng.unit()).collect();
    let exact = index_of(&rows, VectorLeg::Exact);
    let auto = index_of(&rows, VectorLeg::Auto);
    assert_eq!(
        auto.coded_rows(),
        vec![(ROWS, ROWS)],
        "the first pass is there"
    );
    let truth: Vec<HashSet<i64>> = queries.iter().map(|q| top10(&exact, q)).collect();
    let relevant: usize = truth.iter().map(HashSet::len).sum();

    // A fixed count (a twelfth of the rows) would miss some of the exact top ten ...
    let signs = codes_of(&rows);
    let fixed = ROWS / 12;
    let fixed_recall = signs.candidate_recall(&queries, &truth, fixed, true);
    assert!(fixed_recall < 0.99, "{fixed} candidates: {fixed_recall}");

    // ... the measured count does not.
    let found: usize = queries
        .iter()
        .zip(&truth)
        .map(|(q, truth)| truth.intersection(&top10(&auto, q)).count())
        .sum();
    let recall = found as f64 / relevant as f64;
    assert!(
        recall >= 0.99,
        "default leg: {recall} (fixed count {fixed_recall})"
    );
}

#[test]
fn live_probes_with_real_queries_raise_the_count() {
    let mut rng = Normal(13);
    // Rows that rank each other well, and queries from nowhere near them.
    let rows = grouped(&mut rng, ROWS);
    let index = index_of(&rows, VectorLeg::Auto);
    let sampled = index.needed_shares();
    assert_eq!(sampled.len(), 1);
    assert!(sampled[0] < 0.01, "{sampled:?}");
    let session = ["s".to_owned()];
    for _ in 0..20 {
        index.check_recall(&session, &rng.unit());
    }
    let live = index.needed_shares();
    assert!(live[0] > sampled[0] * 4.0, "{sampled:?} → {live:?}");
    assert!(live[0] > 0.05, "{live:?}");
}

#[test]
fn a_probe_reads_no_rows_while_a_search_runs() {
    let mut rng = Normal(29);
    let index = std::sync::Arc::new(index_of(&grouped(&mut rng, ROWS), VectorLeg::Auto));
    let sampled = index.needed_shares()[0];
    let queries: Vec<Vec<f32>> = (0..20).map(|_| rng.unit()).collect();
    let searching = index.searching();
    let probe = {
        let index = std::sync::Arc::clone(&index);
        std::thread::spawn(move || {
            for q in &queries {
                index.check_recall(&["s".to_owned()], q);
            }
        })
    };
    // Twenty probes of 6,000 rows take a few milliseconds; held back, none has finished.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        index.needed_shares()[0],
        sampled,
        "a probe ran beside a search"
    );
    drop(searching);
    probe.join().unwrap();
    assert!(
        index.needed_shares()[0] > sampled * 4.0,
        "the probes ran once it ended"
    );
}

#[test]
fn probes_come_every_sixteenth_search_then_rarely_and_the_count_only_grows() {
    let mut rng = Normal(17);
    let signs = codes_of(&grouped(&mut rng, ROWS));
    let fixed = candidate_count(50, ROWS);
    assert_eq!(signs.candidate_count(50, ROWS), fixed);
    let due: Vec<bool> = (0..33).map(|_| signs.probe_due()).collect();
    assert_eq!(
        due.iter().filter(|d| **d).count(),
        3,
        "searches 0, 16 and 32"
    );
    assert!(due[0] && due[16] && due[32]);

    signs.observe(&[0.4; 10]);
    let raised = signs.candidate_count(50, ROWS);
    assert!(
        raised >= (0.4 * LIVE_MARGIN * ROWS as f64) as usize,
        "{raised}"
    );
    // A probe that needed less never lowers it.
    signs.observe(&[0.0; 10]);
    assert_eq!(signs.candidate_count(50, ROWS), raised);

    // Settled after 32 probes: one search in 256.
    for _ in 0..32 {
        signs.observe(&[0.0; 10]);
    }
    let due = (0..512).filter(|_| signs.probe_due()).count();
    assert_eq!(due, 2);
}

/// Grouped rows, and an index holding the first 1,200 of them through its first pass.
fn first_1200_of(rng: &mut Normal) -> (Vec<Vec<f32>>, VectorIndex) {
    let rows = grouped(rng, 6000);
    let index = VectorIndex::with_leg("m", DIMS, VectorLeg::Approximate);
    index.apply(&upserts(&rows, 0..1200));
    assert_eq!(index.coded_rows(), vec![(1200, 1200)]);
    (rows, index)
}

#[test]
fn what_live_probes_learnt_survives_the_rebuild_after_growth() {
    let mut rng = Normal(19);
    let (rows, index) = first_1200_of(&mut rng);
    for _ in 0..20 {
        index.check_recall(&["s".to_owned()], &rng.unit());
    }
    let learnt = index.needed_shares()[0];
    assert!(learnt > 0.05, "{learnt}");
    // Four-fold growth: the codes are built again around a new centre.
    index.apply(&upserts(&rows, 1200..6000));
    assert_eq!(index.coded_rows(), vec![(6000, 6000)]);
    assert!(index.needed_shares()[0] >= learnt);
}

#[test]
fn the_rebuild_after_growth_measures_the_grown_rows_afresh() {
    let (rows, index) = first_1200_of(&mut Normal(23));
    // Rows as queries: a neighbour's rank is a larger share of a small matrix's rows.
    let small = index.needed_shares()[0];
    assert!(small > 0.0, "{small}");
    index.apply(&upserts(&rows, 1200..6000));
    assert_eq!(index.coded_rows(), vec![(6000, 6000)]);
    let grown = index.needed_shares()[0];
    assert!(
        grown < small,
        "the small matrix's share {small} was kept by the grown one ({grown})"
    );
}

#[test]
fn probes_run_on_their_own_thread_one_at_a_time() {
    use std::sync::mpsc::channel;
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::{Duration, Instant};

    let (started_tx, started) = channel();
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let offer = || {
        let (tx, gate) = (started_tx.clone(), Arc::clone(&gate));
        in_background(move || {
            let nice = rustix::process::getpriority_process(None).unwrap();
            tx.send((std::thread::current().id(), nice)).unwrap();
            let (open, opened) = &*gate;
            let mut open = open.lock().unwrap();
            while !*open {
                open = opened.wait(open).unwrap();
            }
        })
    };
    // Another test's probe may hold the thread for a moment: offer until it takes this one.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !offer() {
        assert!(
            Instant::now() < deadline,
            "the probe thread never took a job"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mine = rustix::process::getpriority_process(None).unwrap();
    let (ran_on, nice) = started.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_ne!(ran_on, std::thread::current().id());
    // The probe thread yields to everything else; the rest of the process keeps its priority
    // (on Linux the nice value is per thread).
    assert_eq!(nice, 19);
    assert!(mine < nice, "this thread's nice value is {mine}");
    // While it runs, a probe due is skipped, not queued.
    assert!(!in_background(|| {}));
    let (open, opened) = &*gate;
    *open.lock().unwrap() = true;
    opened.notify_all();
    // Then the thread takes the next one, and it is the same thread.
    while !offer() {
        assert!(Instant::now() < deadline, "the probe thread stayed busy");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        started.recv_timeout(Duration::from_secs(30)).unwrap().0,
        ran_on
    );
}

#[test]
fn a_users_search_through_the_first_pass_counts_towards_probes_and_others_do_not() {
    let mut rng = Normal(23);
    let session = ["s".to_owned()];
    // Grouped rows, enough that the first pass pays (its ~1,000 candidates under an eighth of
    // the rows): it is taken, and the first counted search is due.
    let grouped = index_of(&grouped(&mut rng, 12_000), VectorLeg::Auto);
    let q = rng.unit();
    // Searches that do not count (the duplicate check, benches) leave the cadence alone.
    grouped.search(&session, &q, 10, None);
    let due: Vec<bool> = (0..17)
        .map(|_| {
            grouped
                .search_counted(VectorLeg::Auto, &session, &q, 10, None, true)
                .1
        })
        .collect();
    assert!(due[0] && due[16], "{due:?}");
    assert_eq!(due.iter().filter(|d| **d).count(), 2);
    // Scattered rows: the measured share sends the search to the exact scan, nothing to probe.
    let scattered = index_of(&scattered(&mut rng, ROWS), VectorLeg::Auto);
    assert!((0..20).all(|_| {
        !scattered
            .search_counted(VectorLeg::Auto, &session, &q, 10, None, true)
            .1
    }));
}
