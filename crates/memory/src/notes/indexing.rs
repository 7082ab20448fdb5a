//! Making text searchable: chunk and embed (before any transaction), then write chunks and vectors
//! inside the caller's transaction (recording the index changes to apply after its commit), and
//! remove them again.

use libsql::{Connection, Value};
use serde::{Deserialize, Serialize};

use crate::error::MemoryError;
use crate::store::rows::query_first;
use crate::store::stmt::Stmt;
use memory_index::ChunkFacets;
use memory_index::chunking::chunk_text;
use memory_index::dot::quantize;
use memory_index::embedding::{EmbedError, Embedder, normalize};
use memory_index::terms::text_terms;
use memory_index::vector_index::IndexChange;

/// Text cut into chunks with one vector per chunk, ready to be written.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prepared {
    pub(crate) chunks: Vec<String>,
    pub(crate) vectors: Vec<Vec<f32>>,
    pub(crate) model_id: String,
}

/// Chunks and embeds `text`. Runs outside the database: a slow embedder never holds a lock.
pub(crate) async fn prepare(embedder: &dyn Embedder, text: &str) -> Result<Prepared, MemoryError> {
    let chunks = chunk_text(text);
    let vectors = embed_checked(embedder, &chunks).await?;
    Ok(Prepared {
        chunks,
        vectors,
        model_id: embedder.model_id().to_owned(),
    })
}

/// [`prepare`] for many texts, with the chunks of all of them embedded `batch` texts per call
/// (one model call or request per batch instead of one per text).
pub(crate) async fn prepare_many(
    embedder: &dyn Embedder,
    texts: &[&str],
    batch: usize,
) -> Result<Vec<Prepared>, MemoryError> {
    let chunked: Vec<Vec<String>> = texts.iter().map(|t| chunk_text(t)).collect();
    let all: Vec<String> = chunked.iter().flatten().cloned().collect();
    let mut vectors = Vec::with_capacity(all.len());
    for group in all.chunks(batch.max(1)) {
        vectors.extend(embed_checked(embedder, group).await?);
    }
    let mut vectors = vectors.into_iter();
    Ok(chunked
        .into_iter()
        .map(|chunks| Prepared {
            vectors: vectors.by_ref().take(chunks.len()).collect(),
            chunks,
            model_id: embedder.model_id().to_owned(),
        })
        .collect())
}

/// Embeds `texts` and checks that the embedder kept its promises (count, size, unit length).
pub(crate) async fn embed_checked(
    embedder: &dyn Embedder,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, MemoryError> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let mut vectors = embedder.embed(texts).await?;
    if vectors.len() != texts.len() {
        return Err(EmbedError::Endpoint(format!(
            "{} vectors returned for {} texts",
            vectors.len(),
            texts.len()
        ))
        .into());
    }
    let expected = embedder.dimensions();
    for v in &mut vectors {
        if v.len() != expected {
            return Err(EmbedError::Dimensions {
                expected,
                got: v.len(),
            }
            .into());
        }
        normalize(v);
    }
    Ok(vectors)
}

/// What every chunk records in `metadata_json`. New optional fields can be added freely: old rows
/// simply lack them and `json_extract` returns NULL.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ChunkMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) note_id: Option<String>,
    /// `user_memory` or `conversation`.
    pub(crate) source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<String>,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tags: Vec<String>,
}

/// Where the chunks of one event go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventRef<'a> {
    pub(crate) session: &'a str,
    pub(crate) seq: i64,
}

/// Writes the chunks and vectors of one event and records the index changes to apply after commit.
pub(crate) async fn insert_chunks(
    conn: &Connection,
    event: EventRef<'_>,
    meta: &ChunkMeta,
    facets: &ChunkFacets,
    prepared: &Prepared,
    changes: &mut Vec<IndexChange>,
) -> Result<(), MemoryError> {
    let meta_json = serde_json::to_string(meta).map_err(MemoryError::corrupt("chunk metadata"))?;
    for (ordinal, (text, vector)) in prepared.chunks.iter().zip(&prepared.vectors).enumerate() {
        let row = chunk_row(event, meta, &meta_json, ordinal, text);
        // A write read through a cursor: read to its end, or the server may cancel it after
        // its row and roll the transaction back unseen (see `store/rows.rs`).
        let chunk_id: i64 = query_first(conn, row.sql.as_ref(), row.args, "indexing text", |r| {
            r.get(0).map_err(MemoryError::db("indexing text"))
        })
        .await?
        .ok_or(MemoryError::Corrupt {
            what: "chunk id",
            source: None,
        })?;
        insert_vector(conn, chunk_id, &prepared.model_id, vector).await?;
        changes.push(IndexChange::Upsert {
            session: event.session.to_owned(),
            chunk_id,
            vector: as_stored(vector),
            facets: facets.clone(),
            terms: text_terms(text),
        });
    }
    Ok(())
}

/// The `chunks` row of chunk `ordinal` of `event` (its sequence number is placeholder `?1`, as
/// in [`crate::notes::note_rows::note_rows`]; the statement returns the new `chunk_id`).
pub(crate) fn chunk_row(
    event: EventRef<'_>,
    meta: &ChunkMeta,
    meta_json: &str,
    ordinal: usize,
    text: &str,
) -> Stmt {
    Stmt::new(
        "INSERT INTO chunks (session_id, event_seq, note_id, ordinal, text, metadata_json)
         VALUES (?2, ?1, ?3, ?4, ?5, ?6) RETURNING chunk_id",
        vec![
            Value::Integer(event.seq),
            Value::Text(event.session.to_owned()),
            meta.note_id.clone().map_or(Value::Null, Value::Text),
            Value::Integer(i64::try_from(ordinal).unwrap_or(i64::MAX)),
            Value::Text(text.to_owned()),
            Value::Text(meta_json.to_owned()),
        ],
    )
}

/// The vector of chunk `chunk_id` (placeholder `?1`), written only while the chunk exists.
pub(crate) fn vector_row(chunk_id: i64, model_id: &str, vector: &[f32]) -> Stmt {
    let dims = i64::try_from(vector.len()).unwrap_or(i64::MAX);
    Stmt::new(
        "INSERT OR REPLACE INTO chunk_vectors (chunk_id, model_id, dims, vector)
         SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM chunks WHERE chunk_id = ?1)",
        vec![
            Value::Integer(chunk_id),
            Value::Text(model_id.to_owned()),
            Value::Integer(dims),
            Value::Blob(vector_to_blob(vector)),
        ],
    )
}

pub(crate) async fn insert_vector(
    conn: &Connection,
    chunk_id: i64,
    model_id: &str,
    vector: &[f32],
) -> Result<(), MemoryError> {
    vector_row(chunk_id, model_id, vector)
        .run(conn, "storing a vector")
        .await?;
    Ok(())
}

/// Deletes one event with its chunks and vectors (explicitly, so correctness does not
/// depend on foreign-key settings of a remote server).
pub(crate) async fn delete_event(
    conn: &Connection,
    event: EventRef<'_>,
    changes: &mut Vec<IndexChange>,
) -> Result<(), MemoryError> {
    let mut rows = conn
        .query(
            "SELECT chunk_id FROM chunks WHERE session_id = ?1 AND event_seq = ?2",
            libsql::params![event.session, event.seq],
        )
        .await
        .map_err(MemoryError::db("removing indexed text"))?;
    while let Some(row) = rows
        .next()
        .await
        .map_err(MemoryError::db("removing indexed text"))?
    {
        let chunk_id: i64 = row
            .get(0)
            .map_err(MemoryError::db("removing indexed text"))?;
        changes.push(IndexChange::Remove {
            session: event.session.to_owned(),
            chunk_id,
        });
    }
    drop(rows);
    for sql in event_removal() {
        conn.execute(sql, libsql::params![event.session, event.seq])
            .await
            .map_err(MemoryError::db("removing indexed text"))?;
    }
    Ok(())
}

/// The statements that remove the event `(?1 session, ?2 seq)` with its chunks and vectors.
pub(crate) fn event_removal() -> [&'static str; 3] {
    [
        "DELETE FROM chunk_vectors WHERE chunk_id IN
            (SELECT chunk_id FROM chunks WHERE session_id = ?1 AND event_seq = ?2)",
        "DELETE FROM chunks WHERE session_id = ?1 AND event_seq = ?2",
        "DELETE FROM events WHERE session_id = ?1 AND seq = ?2",
    ]
}

/// First byte of a vector stored as int8 codes.
const INT8_TAG: u8 = 1;

/// A vector as `chunk_vectors` stores it: a tag byte, the little-endian `f32` scale and the int8
/// codes — what the in-memory index keeps of it ([`quantize`]), `dims + 5` bytes where `f32`
/// components took `4 × dims`. Search never sees more of a stored vector than these codes.
pub(crate) fn vector_to_blob(vector: &[f32]) -> Vec<u8> {
    let mut codes = vec![0i8; vector.len()];
    let scale = quantize(vector, &mut codes);
    let mut blob = Vec::with_capacity(vector.len() + 5);
    blob.push(INT8_TAG);
    blob.extend(scale.to_le_bytes());
    blob.extend(codes.iter().map(|&c| c.to_le_bytes()[0]));
    blob
}

/// A stored vector of `dims` components: the int8 layout, or the little-endian `f32` one of
/// stores written before it (`4 × dims` bytes, never `dims + 5`).
pub(crate) fn blob_to_vector(blob: &[u8], dims: usize) -> Option<Vec<f32>> {
    if blob.len() == dims * 4 {
        return Some(
            blob.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        );
    }
    let (&tag, rest) = blob.split_first()?;
    if tag != INT8_TAG || rest.len() != dims + 4 {
        return None;
    }
    let (scale, codes) = rest.split_at(4);
    let scale = f32::from_le_bytes([scale[0], scale[1], scale[2], scale[3]]);
    Some(
        codes
            .iter()
            .map(|&c| f32::from(i8::from_le_bytes([c])) * scale)
            .collect(),
    )
}

/// `vector` as it reads back from the store: what this process's index applies after a write,
/// so that it holds exactly what another reader loads from the rows.
pub(crate) fn as_stored(vector: &[f32]) -> Vec<f32> {
    blob_to_vector(&vector_to_blob(vector), vector.len()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_stored_as_the_index_codes_and_old_f32_rows_still_read() {
        let v = vec![0.5f32, -1.27, 0.01];
        let blob = vector_to_blob(&v);
        assert_eq!(blob.len(), 3 + 5);
        assert_eq!(blob[0], INT8_TAG);
        assert_eq!(&blob[5..], [50u8, 129, 1], "codes 50, -127, 1");
        let back = blob_to_vector(&blob, 3).unwrap();
        for (a, b) in v.iter().zip(&back) {
            assert!((a - b).abs() < 0.006, "{v:?} read back as {back:?}");
        }
        // Read back, a vector has the codes it was stored with (the index's rows do not drift),
        // and this process's index applies exactly what a reader loads.
        let (mut first, mut again) = ([0i8; 3], [0i8; 3]);
        let scale = quantize(&v, &mut first);
        let scale_again = quantize(&back, &mut again);
        assert_eq!(first, again);
        assert!((scale - scale_again).abs() <= scale * 1e-6);
        assert_eq!(as_stored(&v), back);
        // A store written before keeps its f32 rows.
        let old: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(blob_to_vector(&old, 3), Some(v));
        assert_eq!(blob_to_vector(&blob, 4), None, "wrong size");
        assert_eq!(
            blob_to_vector(&[2, 0, 0, 0, 0, 1, 2, 3], 3),
            None,
            "unknown tag"
        );
    }

    #[tokio::test]
    async fn prepare_many_equals_prepare_one_by_one() {
        let embedder = memory_index::embedding::HashEmbedder::new(32);
        let long = "word ".repeat(800);
        let texts = ["short note", long.as_str(), "another note", ""];
        for batch in [1, 2, 64] {
            let many = prepare_many(&embedder, &texts, batch).await.unwrap();
            assert_eq!(many.len(), texts.len());
            for (text, got) in texts.iter().zip(&many) {
                let one = prepare(&embedder, text).await.unwrap();
                assert_eq!((&got.chunks, &got.vectors), (&one.chunks, &one.vectors));
            }
        }
        assert!(
            many_chunks(&embedder, long.as_str()).await > 1,
            "the long text is split"
        );
    }

    async fn many_chunks(embedder: &dyn Embedder, text: &str) -> usize {
        prepare(embedder, text).await.unwrap().chunks.len()
    }
}
