//! Hybrid search: scope, run both legs, fuse, group per note or message.
//!
//! 1. Scope: only chunks of the requested sessions (and passing the filters) are candidates, in both
//!    legs, before anything is ranked.
//! 2. Keyword leg: FTS5 BM25 over the sanitized `OR` of the query's terms (see [`crate::fts`]).
//! 3. Vector leg: exact cosine over the in-memory index of those sessions, current model only.
//! 4. Fusion (see [`crate::fusion`]) of the chunk scores, then one hit per note (or per message for
//!    conversation sessions) carrying its best chunk.

use std::collections::{HashMap, HashSet};

use libsql::{Connection, Value};
use types::{NoteId, SessionId};

use crate::error::MemoryError;
use crate::fts::{query_terms, quote, terms_expression};
use crate::fusion::{fuse, sanitize};
use crate::indexing::{ChunkMeta, embed_checked};
use crate::query::{HitSource, HybridQuery, QueryFilters, SearchHit};
use crate::sessions::from_sql_seq;
use crate::store::MemoryStore;
use crate::time;

/// Only the start of a long query is embedded: enough to carry its meaning, bounded in cost.
const MAX_EMBED_QUERY_CHARS: usize = 2000;

impl MemoryStore {
    /// Searches the query's sessions; hits are best first, at most `top_k`, scores in `0..=1`.
    pub async fn hybrid_query(&self, query: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError> {
        let top_k = query.top_k.clamp(1, HybridQuery::MAX_TOP_K);
        let mut sessions: Vec<String> = query.sessions.iter().map(|s| s.to_string()).collect();
        sessions.sort();
        sessions.dedup();
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        // Several chunks can belong to one note, so each leg brings more candidates than hits.
        let candidates = (top_k * 10).clamp(50, 1000);

        let (vector_weight, fts_weight) = sanitize(query.weights);
        let query_vector = if vector_weight > 0.0 {
            self.embed_query(&query.text).await
        } else {
            None
        };
        let allowed = if query.filters.is_empty() {
            None
        } else {
            let (sessions, filters) = (sessions.clone(), query.filters.clone());
            Some(
                self.read(move |conn| allowed_chunks(conn, sessions, filters))
                    .await?,
            )
        };

        let fts_leg = async {
            let terms = query_terms(&query.text);
            match Some(terms).filter(|t| !t.is_empty() && fts_weight > 0.0) {
                Some(terms) => {
                    let (sessions, filters) = (sessions.clone(), query.filters.clone());
                    self.read(move |conn| keyword_leg(conn, terms, sessions, filters, candidates))
                        .await
                }
                None => Ok(Vec::new()),
            }
        };
        // The keyword job is sent first, then the scan runs here while the reader thread works.
        let vector_leg = async {
            match &query_vector {
                Some(v) => self
                    .inner
                    .index
                    .search(&sessions, v, candidates, allowed.as_ref()),
                None => Vec::new(),
            }
        };
        let (fts, vector) = tokio::join!(fts_leg, vector_leg);
        let fts = fts?;
        let vector: Vec<(i64, f64)> = vector
            .into_iter()
            .map(|(id, s)| (id, f64::from(s)))
            .collect();

        let fused = fuse(query.fusion, query.weights, &vector, &fts);
        if fused.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = fused.iter().map(|(id, _)| *id).collect();
        let details = self.read(move |conn| chunk_details(conn, ids)).await?;
        let hits = group(&fused, &details, top_k)?;
        tracing::debug!(
            sessions = sessions.len(),
            vector = vector.len(),
            keyword = fts.len(),
            hits = hits.len(),
            "hybrid query"
        );
        Ok(hits)
    }

    /// The query's vector, or `None` (keyword-only search) when it is empty or the embedder fails.
    async fn embed_query(&self, text: &str) -> Option<Vec<f32>> {
        let text: String = text.trim().chars().take(MAX_EMBED_QUERY_CHARS).collect();
        if text.is_empty() {
            return None;
        }
        match embed_checked(self.inner.embedder.as_ref(), &[text]).await {
            Ok(mut v) => v.pop(),
            Err(e) => {
                tracing::warn!(error = %e, "query embedding failed; searching by keywords only");
                None
            }
        }
    }
}

/// `AND ...` conditions on chunk alias `c` for the sessions and filters, with their parameters.
fn scope_sql(sessions: &[String], filters: &QueryFilters, params: &mut Vec<Value>) -> String {
    let marks = vec!["?"; sessions.len()].join(", ");
    params.extend(sessions.iter().map(|s| Value::Text(s.clone())));
    let mut sql = format!(" AND c.session_id IN ({marks})");
    if let Some(after) = filters.created_after {
        sql.push_str(" AND json_extract(c.metadata_json, '$.created_at') >= ?");
        params.push(Value::Text(time::to_text(after)));
    }
    if let Some(before) = filters.created_before {
        sql.push_str(" AND json_extract(c.metadata_json, '$.created_at') < ?");
        params.push(Value::Text(time::to_text(before)));
    }
    if !filters.tags_any.is_empty() {
        let marks = vec!["?"; filters.tags_any.len()].join(", ");
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM json_each(c.metadata_json, '$.tags') t WHERE t.value IN ({marks}))"
        ));
        params.extend(filters.tags_any.iter().map(|t| Value::Text(t.clone())));
    }
    sql
}

async fn allowed_chunks(
    conn: Connection,
    sessions: Vec<String>,
    filters: QueryFilters,
) -> Result<HashSet<i64>, MemoryError> {
    let mut params = Vec::new();
    let sql = format!(
        "SELECT c.chunk_id FROM chunks c WHERE 1 = 1{}",
        scope_sql(&sessions, &filters, &mut params)
    );
    let ctx = "searching";
    let mut rows = conn
        .query(&sql, params)
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut out = HashSet::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        out.insert(row.get::<i64>(0).map_err(MemoryError::db(ctx))?);
    }
    Ok(out)
}

/// (chunk id, relevance ≥ 0) best first; BM25 is negated so that larger is better.
async fn keyword_leg(
    conn: Connection,
    terms: Vec<String>,
    sessions: Vec<String>,
    filters: QueryFilters,
    limit: usize,
) -> Result<Vec<(i64, f64)>, MemoryError> {
    let terms = discriminating_terms(&conn, terms).await?;
    let Some(expr) = terms_expression(&terms) else {
        return Ok(Vec::new());
    };
    let mut params = vec![Value::Text(expr)];
    let scope = scope_sql(&sessions, &filters, &mut params);
    params.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    let sql = format!(
        "SELECT c.chunk_id, bm25(chunks_fts) AS rank
         FROM chunks_fts JOIN chunks c ON c.chunk_id = chunks_fts.rowid
         WHERE chunks_fts MATCH ?{scope}
         ORDER BY rank LIMIT ?"
    );
    let ctx = "searching by keywords";
    let mut rows = conn
        .query(&sql, params)
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        let id: i64 = row.get(0).map_err(MemoryError::db(ctx))?;
        let rank: f64 = row.get(1).map_err(MemoryError::db(ctx))?;
        out.push((id, (-rank).max(0.0)));
    }
    Ok(out)
}

/// A term found in more chunks than this is "common": it is dropped from the keyword leg when the
/// query has rarer terms. BM25 would give it little weight anyway, but scoring every chunk that
/// contains "user" or "likes" dominates the cost of a search.
const COMMON_TERM_CHUNKS: i64 = 1000;

/// The query's terms without the common ones (all of them if every term is common, so that a query
/// of common words still finds something). Counting stops at the threshold, so this costs at most
/// `COMMON_TERM_CHUNKS` index steps per term.
async fn discriminating_terms(
    conn: &Connection,
    terms: Vec<String>,
) -> Result<Vec<String>, MemoryError> {
    let ctx = "searching by keywords";
    let mut kept = Vec::new();
    for term in &terms {
        let mut rows = conn
            .query(
                "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?1 LIMIT ?2)",
                libsql::params![quote(term), COMMON_TERM_CHUNKS + 1],
            )
            .await
            .map_err(MemoryError::db(ctx))?;
        let n: i64 = match rows.next().await.map_err(MemoryError::db(ctx))? {
            Some(row) => row.get(0).map_err(MemoryError::db(ctx))?,
            None => 0,
        };
        if n > 0 && n <= COMMON_TERM_CHUNKS {
            kept.push(term.clone());
        }
    }
    Ok(if kept.is_empty() { terms } else { kept })
}

struct ChunkDetail {
    session: String,
    event_seq: i64,
    note_id: Option<String>,
    text: String,
    meta: ChunkMeta,
}

async fn chunk_details(
    conn: Connection,
    ids: Vec<i64>,
) -> Result<HashMap<i64, ChunkDetail>, MemoryError> {
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!(
        "SELECT chunk_id, session_id, event_seq, note_id, text, metadata_json
         FROM chunks WHERE chunk_id IN ({marks})"
    );
    let ctx = "reading search results";
    let params: Vec<Value> = ids.into_iter().map(Value::Integer).collect();
    let mut rows = conn
        .query(&sql, params)
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut out = HashMap::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        let meta: String = row.get(5).map_err(MemoryError::db(ctx))?;
        out.insert(
            row.get::<i64>(0).map_err(MemoryError::db(ctx))?,
            ChunkDetail {
                session: row.get(1).map_err(MemoryError::db(ctx))?,
                event_seq: row.get(2).map_err(MemoryError::db(ctx))?,
                note_id: row.get(3).map_err(MemoryError::db(ctx))?,
                text: row.get(4).map_err(MemoryError::db(ctx))?,
                meta: serde_json::from_str(&meta)
                    .map_err(MemoryError::corrupt("chunk metadata"))?,
            },
        );
    }
    Ok(out)
}

/// One hit per note (or per message), in fused order, keeping the best chunk of each.
fn group(
    fused: &[(i64, f64)],
    details: &HashMap<i64, ChunkDetail>,
    top_k: usize,
) -> Result<Vec<SearchHit>, MemoryError> {
    let mut seen = HashSet::new();
    let mut hits = Vec::new();
    for (chunk_id, score) in fused {
        // A chunk deleted since the legs ran has no details: skip it.
        let Some(d) = details.get(chunk_id) else {
            continue;
        };
        let key = (d.session.as_str(), d.note_id.as_deref(), d.event_seq);
        if !seen.insert(key) {
            continue;
        }
        let note_id = match &d.note_id {
            Some(id) => Some(NoteId::parse(id).map_err(MemoryError::corrupt("note id"))?),
            None => None,
        };
        hits.push(SearchHit {
            session_id: SessionId::parse(&d.session).map_err(MemoryError::corrupt("session id"))?,
            source: HitSource::parse(&d.meta.source),
            note_id,
            text: d.text.clone(),
            score: *score,
            created_at: time::parse(&d.meta.created_at)?,
            updated_at: time::parse(&d.meta.updated_at)?,
            event_seq: from_sql_seq(d.event_seq)?,
        });
        if hits.len() == top_k {
            break;
        }
    }
    Ok(hits)
}
