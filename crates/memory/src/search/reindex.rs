//! Embedding-model changes: re-embedding stored chunks and (re)loading the in-memory index.
//!
//! The active model id and size are kept in `store_meta`. At open, every chunk whose vector is
//! missing or belongs to another model (or size) is re-embedded in batches, then the meta switches.
//! Only stale chunks are selected, so an interrupted re-embedding simply continues at the next open.
//! The vector leg only ever ranks vectors of the active model.

use libsql::Connection;

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::facet_rows::{FACET_COLUMNS, facets_from_row, text_from_row};
use crate::notes::indexing::{blob_to_vector, embed_checked, insert_vector};
use crate::rooms::Upkeep;
use crate::search::freshness::log_head;
use crate::store::{begin, finish};
use memory_index::terms::{TermBag, text_terms};
use memory_index::vector_index::IndexChange;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Chunks without a vector of the active model.
    Stale,
    /// Every chunk.
    All,
}

/// Condition on chunk alias `c` joined with its vector `v` (params ?1 model id, ?2 dims).
const STALE: &str = "(v.chunk_id IS NULL OR v.model_id != ?1 OR v.dims != ?2)";

impl MemoryStore {
    pub(crate) async fn reindex_scope(
        &self,
        scope: Scope,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<usize, MemoryError> {
        let embedder = self.inner.embedder.clone();
        let model = embedder.model_id().to_owned();
        let dims = i64::try_from(embedder.dimensions()).unwrap_or(i64::MAX);
        let condition = match scope {
            Scope::Stale => STALE,
            Scope::All => "1 = 1",
        };
        let total = {
            let (model, sql) = (
                model.clone(),
                format!(
                "SELECT count(*) FROM chunks c LEFT JOIN chunk_vectors v ON v.chunk_id = c.chunk_id
                 WHERE ?1 = ?1 AND ?2 = ?2 AND {condition}"
            ),
            );
            self.read(
                move |conn| async move { count(&conn, &sql, libsql::params![model, dims]).await },
            )
            .await?
        };
        if total > 0 {
            tracing::info!(total, model = %model, "re-embedding memory chunks for the embedding model");
        }
        let mut done = 0;
        let mut after: i64 = 0;
        let batch = i64::try_from(self.inner.batch_size).unwrap_or(64);
        while done < total {
            let (model_q, sql) = (
                model.clone(),
                format!(
                    "SELECT c.chunk_id, c.text FROM chunks c
                 LEFT JOIN chunk_vectors v ON v.chunk_id = c.chunk_id
                 WHERE c.chunk_id > ?3 AND ?1 = ?1 AND ?2 = ?2 AND {condition}
                 ORDER BY c.chunk_id LIMIT ?4"
                ),
            );
            let rows: Vec<(i64, String)> = self
                .read(move |conn| async move {
                    let ctx = "re-embedding";
                    let mut rows = conn
                        .query(&sql, libsql::params![model_q, dims, after, batch])
                        .await
                        .map_err(MemoryError::db(ctx))?;
                    let mut out = Vec::new();
                    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
                        out.push((
                            row.get(0).map_err(MemoryError::db(ctx))?,
                            row.get(1).map_err(MemoryError::db(ctx))?,
                        ));
                    }
                    Ok(out)
                })
                .await?;
            let Some(&(last, _)) = rows.last() else { break };
            after = last;
            let texts: Vec<String> = rows.iter().map(|(_, t)| t.clone()).collect();
            let vectors = embed_checked(embedder.as_ref(), &texts).await?;
            let ids: Vec<i64> = rows.iter().map(|(id, _)| *id).collect();
            let model_w = model.clone();
            self.write(move |conn| async move {
                let tx = begin(&conn).await?;
                let outcome = async {
                    for (id, v) in ids.iter().zip(&vectors) {
                        insert_vector(&tx, *id, &model_w, v).await?;
                    }
                    Ok(())
                }
                .await;
                finish(tx, outcome).await
            })
            .await?;
            done += rows.len();
            progress(done.min(total), total);
            tracing::info!(done, total, "re-embedded memory chunks");
        }
        let model_m = model.clone();
        self.write(move |conn| async move {
            for (key, value) in [
                ("embedding_model_id", model_m),
                ("embedding_dims", dims.to_string()),
            ] {
                conn.execute(
                    "INSERT INTO store_meta (key, value) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [key, value.as_str()],
                )
                .await
                .map_err(MemoryError::db("recording the embedding model"))?;
            }
            Ok(())
        })
        .await?;
        if done > 0 {
            self.checkpoint().await?;
        }
        Ok(done)
    }

    /// At open, after the index is loaded: re-embeds the chunks without a vector of the active
    /// model, if any. The index holds a row for each chunk with such a vector and no other, so
    /// when it holds as many rows as there are chunks (counted from an index of `chunks`, not a
    /// join over every vector), none is missing and nothing more is read. `chunks`: the count a
    /// rebuild took in its own transaction (a remote store's open then makes no request of its
    /// own that could still be in flight when the caller's first write starts).
    pub(crate) async fn embed_stale(
        &self,
        chunks: Option<usize>,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<(), MemoryError> {
        let chunks = match chunks {
            Some(chunks) => chunks,
            None => {
                self.read(|conn| async move { count(&conn, CHUNKS, ()).await })
                    .await?
            }
        };
        if chunks == self.inner.index.len() {
            return Ok(());
        }
        if self.reindex_scope(Scope::Stale, progress).await? > 0 {
            self.reload_index().await?;
            self.write_snapshot().await;
        }
        Ok(())
    }

    /// Rebuilds the in-memory index from the stored vectors of the active model. Runs on the writer
    /// thread inside one read transaction, so the vectors and the change-log head it records as
    /// applied are one snapshot, and no write of this process slips in between.
    pub(crate) async fn reload_index(&self) -> Result<usize, MemoryError> {
        let store = self.clone();
        let loaded = self
            .write(move |conn| async move {
                let index = &store.inner.index;
                let tx = conn
                    .transaction_with_behavior(libsql::TransactionBehavior::Deferred)
                    .await
                    .map_err(MemoryError::db("loading vectors"))?;
                // Loaded page by page into a fresh index (only its int8 codes stay resident),
                // trained once at the end, then swapped in whole.
                let fresh = index.empty_like();
                let loaded = async {
                    let head = log_head(&tx).await?;
                    let vectors = load_vectors(&tx, index.model_id(), index.dims(), |page| {
                        fresh.apply_untrained(&page);
                    })
                    .await?;
                    let chunks = count(&tx, CHUNKS, ()).await?;
                    Ok((head, (vectors, chunks)))
                }
                .await;
                let (head, (vectors, chunks)) = finish(tx, loaded).await?;
                fresh.train();
                let mut applied = store.inner.freshness.lock();
                index.replace_with(fresh);
                *applied = head.last;
                Ok((vectors, chunks))
            })
            .await?;
        tracing::debug!(vectors = loaded.0, "loaded the vector index");
        Ok(loaded.1)
    }
}

/// Every chunk of the store, whatever its vectors.
const CHUNKS: &str = "SELECT count(*) FROM chunks";

async fn count(
    conn: &Connection,
    sql: &str,
    params: impl libsql::params::IntoParams,
) -> Result<usize, MemoryError> {
    let ctx = "counting chunks";
    let mut rows = conn
        .query(sql, params)
        .await
        .map_err(MemoryError::db(ctx))?;
    let n: i64 = match rows.next().await.map_err(MemoryError::db(ctx))? {
        Some(row) => row.get(0).map_err(MemoryError::db(ctx))?,
        None => 0,
    };
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Bytes read per query at most: a libSQL server refuses responses over 10 MB, so the load is
/// paged (in one transaction, so the pages are one snapshot).
const LOAD_PAGE_BYTES: usize = 4 * 1024 * 1024;

async fn load_vectors(
    conn: &Connection,
    model: &str,
    dims: usize,
    mut sink: impl FnMut(Vec<IndexChange>),
) -> Result<usize, MemoryError> {
    let ctx = "loading vectors";
    // A row: the f32 vector, its chunk's text (at most `CHUNK_CHARS` characters, up to four bytes
    // each) and the facets.
    let row_bytes = dims * 4 + memory_index::chunking::CHUNK_CHARS * 4 + 256;
    let page = (LOAD_PAGE_BYTES / row_bytes).max(64);
    let page_rows = i64::try_from(page).unwrap_or(i64::MAX);
    let dims_param = i64::try_from(dims).unwrap_or(i64::MAX);
    let sql = format!(
        "SELECT c.session_id, v.chunk_id, v.vector, {FACET_COLUMNS} FROM chunk_vectors v
         JOIN chunks c ON c.chunk_id = v.chunk_id
         LEFT JOIN notes n ON n.note_id = c.note_id
         WHERE v.model_id = ?1 AND v.dims = ?2 AND v.chunk_id > ?3
         ORDER BY v.chunk_id LIMIT ?4"
    );
    let mut count = 0;
    let mut after = i64::MIN;
    loop {
        let mut rows = conn
            .query(&sql, libsql::params![model, dims_param, after, page_rows])
            .await
            .map_err(MemoryError::db(ctx))?;
        let mut seen = 0;
        let mut out = Vec::with_capacity(page);
        let mut texts = Vec::with_capacity(page);
        while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
            seen += 1;
            let chunk_id: i64 = row.get(1).map_err(MemoryError::db(ctx))?;
            after = chunk_id;
            let blob: Vec<u8> = row.get(2).map_err(MemoryError::db(ctx))?;
            let Some(vector) = blob_to_vector(&blob, dims) else {
                tracing::warn!("skipping a malformed stored vector");
                continue;
            };
            out.push(IndexChange::Upsert {
                session: row.get(0).map_err(MemoryError::db(ctx))?,
                chunk_id,
                vector,
                facets: facets_from_row(&row, 3)?,
                terms: TermBag::default(),
            });
            texts.push(text_from_row(&row, 3)?);
        }
        drop(rows);
        fill_terms(&mut out, &texts);
        count += out.len();
        sink(out);
        if seen < page {
            return Ok(count);
        }
    }
}

/// Fills in the keyword terms of a page of loaded chunks from their `texts` (in the same order),
/// on every core: at a million chunks the load at open spends as long tokenizing as reading.
fn fill_terms(changes: &mut [IndexChange], texts: &[String]) {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(4);
    let per = changes.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (changes, texts) in changes.chunks_mut(per).zip(texts.chunks(per)) {
            scope.spawn(move || {
                for (change, text) in changes.iter_mut().zip(texts) {
                    if let IndexChange::Upsert { terms, .. } = change {
                        *terms = text_terms(text);
                    }
                }
            });
        }
    });
}

impl Upkeep<'_> {
    /// Re-embeds every chunk with the current model, reporting (done, total) as it goes, then
    /// reloads the in-memory index. Returns how many chunks were embedded.
    pub async fn reindex(
        &self,
        mut progress: impl FnMut(usize, usize) + Send,
    ) -> Result<usize, MemoryError> {
        let done = self.reindex_scope(Scope::All, &mut progress).await?;
        self.reload_index().await?;
        self.write_snapshot().await;
        Ok(done)
    }
}
