//! The keyword leg of hybrid search: which terms to match (the [`KeywordPlan`] within a budget of
//! matches), the scope as conditions of the same statement, and FTS5's BM25 ranking.

use libsql::{Connection, Value};

use crate::error::MemoryError;
use crate::fts::quote;
use crate::query::Scope;
use crate::term_counts::TermCounts;
use crate::time;

/// `AND ...` conditions on chunk alias `c` for the sessions and filters, with their parameters.
fn scope_sql(sessions: &[String], scope: &Scope, params: &mut Vec<Value>) -> String {
    let filters = &scope.filters;
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
    if !filters.tags_all.is_empty() {
        let marks = vec!["?"; filters.tags_all.len()].join(", ");
        sql.push_str(&format!(
            " AND (SELECT count(DISTINCT t.value) FROM json_each(c.metadata_json, '$.tags') t
                   WHERE t.value IN ({marks})) = ?"
        ));
        let mut wanted = filters.tags_all.clone();
        wanted.sort();
        wanted.dedup();
        let n = i64::try_from(wanted.len()).unwrap_or(i64::MAX);
        params.extend(wanted.into_iter().map(Value::Text));
        params.push(Value::Integer(n));
    }
    if let Some(category) = filters.category {
        // Correlated: one primary-key probe per keyword match (at most about `MATCH_BUDGET` of
        // them), never a walk over the category's notes.
        sql.push_str(
            " AND EXISTS (SELECT 1 FROM notes n WHERE n.note_id = c.note_id AND n.category = ?)",
        );
        params.push(Value::Text(category.as_str().to_owned()));
    }
    if let Some(now) = &scope.expired_at {
        sql.push_str(
            " AND NOT EXISTS (SELECT 1 FROM notes n WHERE n.note_id = c.note_id AND n.expires_at <= ?)",
        );
        params.push(Value::Text(now.clone()));
    }
    sql
}

/// Whether any note of `sessions` has expired at `now` (and is not swept yet). The expiry index
/// is named: without it the planner walks every note of the session (~100 ms at 100k notes), with
/// it only the expired ones, which the sweeper keeps few.
pub(crate) async fn any_expired(
    conn: Connection,
    sessions: Vec<String>,
    now: String,
) -> Result<bool, MemoryError> {
    let marks = vec!["?"; sessions.len()].join(", ");
    let sql = format!(
        "SELECT 1 FROM notes INDEXED BY notes_by_expiry
         WHERE expires_at IS NOT NULL AND expires_at <= ? AND session_id IN ({marks}) LIMIT 1"
    );
    let mut params = vec![Value::Text(now)];
    params.extend(sessions.into_iter().map(Value::Text));
    let ctx = "searching";
    let mut rows = conn
        .query(&sql, params)
        .await
        .map_err(MemoryError::db(ctx))?;
    Ok(rows.next().await.map_err(MemoryError::db(ctx))?.is_some())
}

/// (chunk id, relevance ≥ 0) best first; BM25 is negated so that larger is better.
pub(crate) async fn keyword_leg(
    conn: &Connection,
    terms: &[String],
    sessions: &[String],
    scope: &Scope,
    limit: usize,
    stored_chunks: usize,
    cache: &TermCounts,
) -> Result<Vec<(i64, f64)>, MemoryError> {
    // A store with no more chunks than the budget cannot exceed it: no need to count.
    let plan = if i64::try_from(stored_chunks).unwrap_or(i64::MAX) <= MATCH_BUDGET {
        Some(KeywordPlan {
            expression: terms
                .iter()
                .map(|t| quote(t))
                .collect::<Vec<_>>()
                .join(" OR "),
            fallback: None,
        })
    } else {
        keyword_plan(conn, terms, cache).await?
    };
    let Some(plan) = plan else {
        return Ok(Vec::new());
    };
    let found = ranked_matches(conn, plan.expression, sessions, scope, limit).await?;
    match plan.fallback {
        Some(fallback) if found.is_empty() => {
            ranked_matches(conn, fallback, sessions, scope, limit).await
        }
        _ => Ok(found),
    }
}

/// The chunks of the scope matching `expression`, best BM25 first, at most `limit`. The scope (and
/// filters) are conditions of the same statement, so they apply before `LIMIT`.
async fn ranked_matches(
    conn: &Connection,
    expression: String,
    sessions: &[String],
    scope: &Scope,
    limit: usize,
) -> Result<Vec<(i64, f64)>, MemoryError> {
    let mut params = vec![Value::Text(expression)];
    let sql = if scope.is_empty() {
        // Scope on the FTS table's own column: FTS5 ranks by `rank` (BM25) and SQLite stops at
        // the LIMIT-th in-scope row; no per-match join.
        let marks = vec!["?"; sessions.len()].join(", ");
        params.extend(sessions.iter().map(|s| Value::Text(s.clone())));
        format!(
            "SELECT rowid, rank FROM chunks_fts
             WHERE chunks_fts MATCH ? AND session_id IN ({marks})
             ORDER BY rank LIMIT ?"
        )
    } else {
        let scope = scope_sql(sessions, scope, &mut params);
        format!(
            "SELECT c.chunk_id, bm25(chunks_fts) AS score
             FROM chunks_fts JOIN chunks c ON c.chunk_id = chunks_fts.rowid
             WHERE chunks_fts MATCH ?{scope}
             ORDER BY score LIMIT ?"
        )
    };
    params.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
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

/// The keyword leg ranks at most about this many matching chunks. FTS5 computes BM25 for every
/// chunk matching the expression before sorting, so the number of matches is the cost of the leg
/// (~1 µs each); terms found in very many chunks are also the ones BM25 weighs least.
const MATCH_BUDGET: i64 = 1000;

/// The `MATCH` expression to run, and a second one for when the first finds nothing.
#[derive(Debug, PartialEq)]
pub(crate) struct KeywordPlan {
    expression: String,
    fallback: Option<String>,
}

/// Chooses the terms: the rarest ones, `OR`ed, as long as their match counts add up to at most
/// [`MATCH_BUDGET`]. When even the rarest term matches more (every term is common in a large
/// store), the `AND` of all the terms is used instead (the chunks BM25 would rank first anyway),
/// falling back to the rarest term alone if no chunk has them all. Terms found nowhere are dropped;
/// no term found anywhere means no keyword leg. The counts are cached until the next write (see
/// [`crate::term_counts`]).
async fn keyword_plan(
    conn: &Connection,
    terms: &[String],
    cache: &TermCounts,
) -> Result<Option<KeywordPlan>, MemoryError> {
    let counts = term_counts(conn, terms, cache).await?;
    Ok(plan_from_counts(counts.into_iter().zip(terms).collect()))
}

/// The match count of every term, capped at `MATCH_BUDGET + 1`: from the cache, else counted (and
/// then cached).
pub(crate) async fn term_counts(
    conn: &Connection,
    terms: &[String],
    cache: &TermCounts,
) -> Result<Vec<i64>, MemoryError> {
    let snapshot = cache.get(terms);
    let missing: Vec<&String> = terms
        .iter()
        .zip(&snapshot.counts)
        .filter(|(_, n)| n.is_none())
        .map(|(t, _)| t)
        .collect();
    let counted = count_terms(conn, &missing).await?;
    cache.put(snapshot.generation, &counted);
    let mut counted = counted.into_iter();
    Ok(snapshot
        .counts
        .into_iter()
        .map(|n| n.or_else(|| counted.next().map(|(_, n)| n)).unwrap_or(0))
        .collect())
}

/// Counts the matches of each term in the whole FTS table, capped at `MATCH_BUDGET + 1`, in one
/// statement (saving a round trip per term). Counting stops past the cap, so it costs at most
/// `MATCH_BUDGET` index steps per term.
async fn count_terms<'t>(
    conn: &Connection,
    terms: &[&'t String],
) -> Result<Vec<(&'t String, i64)>, MemoryError> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let counts_sql = format!(
        "SELECT {}",
        (1..=terms.len())
            .map(|i| format!(
                "(SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?{i} LIMIT ?{}))",
                terms.len() + 1
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut params: Vec<Value> = terms.iter().map(|t| Value::Text(quote(t))).collect();
    params.push(Value::Integer(MATCH_BUDGET + 1));
    let ctx = "searching by keywords";
    let mut rows = conn
        .query(&counts_sql, params)
        .await
        .map_err(MemoryError::db(ctx))?;
    let row = rows
        .next()
        .await
        .map_err(MemoryError::db(ctx))?
        .ok_or(MemoryError::Corrupt {
            what: "term counts",
            source: None,
        })?;
    let mut counted = Vec::with_capacity(terms.len());
    for (i, term) in (0i32..).zip(terms) {
        counted.push((*term, row.get::<i64>(i).map_err(MemoryError::db(ctx))?));
    }
    Ok(counted)
}

/// [`keyword_plan`] once the (capped) match count of every term is known.
fn plan_from_counts(mut counted: Vec<(i64, &String)>) -> Option<KeywordPlan> {
    counted.retain(|(n, _)| *n > 0);
    // Stable: equally rare terms keep the query's order.
    counted.sort_by_key(|(n, _)| *n);
    let mut total = 0;
    let mut chosen = Vec::new();
    for (n, term) in &counted {
        if total + n > MATCH_BUDGET {
            break;
        }
        total += n;
        chosen.push(quote(term));
    }
    if !chosen.is_empty() {
        return Some(KeywordPlan {
            expression: chosen.join(" OR "),
            fallback: None,
        });
    }
    let rarest = quote(counted.first()?.1);
    if counted.len() == 1 {
        return Some(KeywordPlan {
            expression: rarest,
            fallback: None,
        });
    }
    Some(KeywordPlan {
        expression: counted
            .iter()
            .map(|(_, t)| quote(t))
            .collect::<Vec<_>>()
            .join(" AND "),
        fallback: Some(rarest),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(counts: &[(i64, &str)], expected: Option<(&str, Option<&str>)>) {
        let terms: Vec<String> = counts.iter().map(|(_, t)| (*t).to_owned()).collect();
        let counted = counts.iter().map(|(n, _)| *n).zip(&terms).collect();
        let expected = expected.map(|(expression, fallback)| KeywordPlan {
            expression: expression.to_owned(),
            fallback: fallback.map(str::to_owned),
        });
        assert_eq!(plan_from_counts(counted), expected, "{counts:?}");
    }

    #[test]
    fn keyword_plans() {
        // Small stores: every term, rarest first.
        check(
            &[(3, "tea"), (1, "oolong")],
            Some(("\"oolong\" OR \"tea\"", None)),
        );
        // Terms found nowhere are dropped; none found, no keyword leg.
        check(&[(0, "zzz"), (5, "tea")], Some(("\"tea\"", None)));
        check(&[(0, "zzz")], None);
        check(&[], None);
        // The commonest terms go once the budget is spent.
        check(
            &[
                (1600, "user"),
                (40, "kyoto"),
                (400, "trip"),
                (1700, "likes"),
            ],
            Some(("\"kyoto\" OR \"trip\"", None)),
        );
        // Every term common: all of them must match, else the rarest alone.
        check(
            &[(2001, "alice"), (2001, "berlin"), (2001, "prefer")],
            Some(("\"alice\" AND \"berlin\" AND \"prefer\"", Some("\"alice\""))),
        );
        check(&[(2001, "user")], Some(("\"user\"", None)));
    }
}
