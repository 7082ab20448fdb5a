//! Counts and sizes for the CLI and for operators.

use serde::{Deserialize, Serialize};

use crate::error::MemoryError;
use crate::rooms::Upkeep;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreStats {
    pub notes: u64,
    pub sessions: u64,
    pub events: u64,
    pub chunks: u64,
    /// Stored vectors of the active model.
    pub vectors: u64,
    /// Vectors held by the in-memory index (equals `vectors` once open).
    pub indexed_vectors: u64,
    pub model_id: String,
    pub db_bytes: u64,
}

impl Upkeep<'_> {
    pub async fn stats(&self) -> Result<StoreStats, MemoryError> {
        // The index counts what every writer has committed (a remote save reaches it this way).
        self.catch_up().await?;
        let model = self.model_id().to_owned();
        let indexed_vectors = u64::try_from(self.inner.index.len()).unwrap_or(u64::MAX);
        let model_q = model.clone();
        let counts = self
            .read(move |conn| async move {
                let ctx = "reading statistics";
                let mut rows = conn
                    .query(
                        "SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM sessions),
                                (SELECT count(*) FROM events), (SELECT count(*) FROM chunks),
                                (SELECT count(*) FROM chunk_vectors WHERE model_id = ?1),
                                (SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size())",
                        [model_q],
                    )
                    .await
                    .map_err(MemoryError::db(ctx))?;
                let row = rows
                    .next()
                    .await
                    .map_err(MemoryError::db(ctx))?
                    .ok_or(MemoryError::Corrupt { what: "statistics", source: None })?;
                let mut out = [0u64; 6];
                for (i, slot) in (0i32..).zip(out.iter_mut()) {
                    let n: i64 = row.get(i).map_err(MemoryError::db(ctx))?;
                    *slot = u64::try_from(n).unwrap_or(0);
                }
                Ok(out)
            })
            .await?;
        let [notes, sessions, events, chunks, vectors, db_bytes] = counts;
        Ok(StoreStats {
            notes,
            sessions,
            events,
            chunks,
            vectors,
            indexed_vectors,
            model_id: model,
            db_bytes,
        })
    }
}
