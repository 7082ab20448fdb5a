//! The parts of one search timed alone, for the latency report's breakdown: the keyword leg's SQL
//! on a connection of our own, and an exact f32 scan of the same number of vectors.

use std::time::Instant;

use memory::match_expression;

use crate::BenchResult;
use crate::latency::{DETAILS, ms};
use crate::stats::{Rng, percentile};

/// Times (ms) of the search's SQL run on a connection of our own (no thread hop).
#[derive(Debug, Default)]
pub(crate) struct SqlTimes {
    /// The keyword leg's statement before migration 2: all terms `OR`ed, joined with `chunks` for
    /// the session scope.
    pub(crate) joined: Vec<f64>,
    /// The same match scoped on the FTS table's `session_id`, ordered by its `rank` column.
    pub(crate) fts_only: Vec<f64>,
    /// Rows matching the `OR` expression before the limit.
    pub(crate) matches: Vec<f64>,
    /// `chunk_details`-like read of `DETAILS` chunks.
    pub(crate) details: Vec<f64>,
}

pub(crate) async fn keyword_sql_alone(
    path: &std::path::Path,
    session: &str,
    queries: &[String],
) -> BenchResult<SqlTimes> {
    let db = libsql::Builder::new_local(path).build().await?;
    let conn = db.connect()?;
    let sql = "SELECT c.chunk_id, bm25(chunks_fts) AS rank
         FROM chunks_fts JOIN chunks c ON c.chunk_id = chunks_fts.rowid
         WHERE chunks_fts MATCH ?1 AND c.session_id IN (?2)
         ORDER BY rank LIMIT 50";
    let fts_only_sql = "SELECT rowid, rank FROM chunks_fts
         WHERE chunks_fts MATCH ?1 AND session_id IN (?2) ORDER BY rank LIMIT 50";
    let count_sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?1";
    let mut out = SqlTimes::default();
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
    for q in queries {
        let Some(expr) = match_expression(q) else {
            continue;
        };
        let t = Instant::now();
        let mut rows = conn
            .query(sql, libsql::params![expr.as_str(), session])
            .await?;
        while rows.next().await?.is_some() {}
        out.joined.push(ms(t));
        let t = Instant::now();
        let mut rows = conn
            .query(fts_only_sql, libsql::params![expr.as_str(), session])
            .await?;
        while rows.next().await?.is_some() {}
        out.fts_only.push(ms(t));
        let mut rows = conn
            .query(count_sql, libsql::params![expr.as_str()])
            .await?;
        if let Some(row) = rows.next().await? {
            out.matches.push(row.get::<i64>(0)? as f64);
        }
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
        out.details.push(ms(t));
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
