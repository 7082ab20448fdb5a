//! The parts of one search timed alone, for the latency report's breakdown: the details read on a
//! connection of our own, and an exact f32 scan of the same number of vectors.

use std::time::Instant;

use crate::BenchResult;
use crate::latency::{DETAILS, ms};
use crate::stats::{Rng, percentile};

/// Times (ms) of `chunk_details`-like reads of `DETAILS` random chunks by id (what search reads
/// first after fusing), on a connection of our own (no thread hop).
pub(crate) async fn details_alone(path: &std::path::Path, repeats: usize) -> BenchResult<Vec<f64>> {
    let db = libsql::Builder::new_local(path).build().await?;
    let conn = db.connect()?;
    let mut out = Vec::with_capacity(repeats);
    let mut rng = Rng::new(11);
    let mut max_id = 1i64;
    if let Some(row) = conn
        .query("SELECT max(chunk_id) FROM chunks", ())
        .await?
        .next()
        .await?
    {
        max_id = row.get::<i64>(0).unwrap_or(1).max(1);
    }
    for _ in 0..repeats {
        let ids: Vec<libsql::Value> = (0..DETAILS)
            .map(|_| libsql::Value::Integer(1 + rng.below(max_id as usize) as i64))
            .collect();
        let marks = vec!["?"; ids.len()].join(", ");
        let details_sql = format!(
            "SELECT chunk_id, session_id, event_seq, note_id, text, metadata_json
             FROM chunks WHERE chunk_id IN ({marks})"
        );
        let t = Instant::now();
        let mut rows = conn.query(&details_sql, ids).await?;
        while let Some(row) = rows.next().await? {
            let meta: String = row.get(5)?;
            std::hint::black_box(serde_json::from_str::<serde_json::Value>(&meta)?);
        }
        out.push(ms(t));
    }
    Ok(out)
}

/// An exact top-50 f32 dot-product scan over `rows` random vectors: what the vector leg did
/// before the int8 index (kept as the reference).
pub(crate) fn scan_alone(rows: usize, dims: usize, repeats: usize) -> f64 {
    let mut rng = Rng::new(3);
    let data: Vec<f32> = (0..rows * dims).map(|_| rng.unit() as f32 - 0.5).collect();
    let mut times = Vec::new();
    for _ in 0..repeats.clamp(1, 100) {
        let query: Vec<f32> = (0..dims).map(|_| rng.unit() as f32 - 0.5).collect();
        let t = Instant::now();
        let mut best: Vec<(f32, usize)> = Vec::with_capacity(51);
        for (row, v) in data.chunks_exact(dims.max(1)).enumerate() {
            let s = dot(&query, v);
            if best.len() < 50 || best.last().is_some_and(|w| s > w.0) {
                let at = best.partition_point(|b| b.0 >= s);
                best.insert(at, (s, row));
                best.truncate(50);
            }
        }
        std::hint::black_box(&best);
        times.push(ms(t));
    }
    percentile(&times, 50.0)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut acc = [0.0f32; LANES];
    for (x, y) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum()
}
