//! Reading a search's hits: the details of its best chunks and the texts of their notes, in fused
//! order, one hit per note (or per message), and the change log's head beside them.
//!
//! Details are read for about 3 × top_k chunks first on a server (usually enough for top_k
//! distinct notes, in one request) and 1.5 × top_k on a file (where a round is one statement more
//! and the rows read are what costs: ~0.2 ms less for a search of 10 hits over 110,000 chunks),
//! the window doubling while grouping (several chunks of one note) leaves hits missing. Each
//! window's reads — the chunks' details and their notes' texts, the first with the change log's
//! head — go as one [`Reads::each_in`] call: one request to a remote server for most searches
//! (there each plain query costs two, so the reads took six or seven), and the same statements
//! one by one on a file, each prepared once per connection ([`crate::store::stmt_cache`]). The statements run in that order, each on the database as committed when
//! it runs, as they did one by one: the log's head first, so the freshness check (see
//! [`crate::search::freshness`]) never records changes the hits were read without. On a server,
//! a search of conversations adds to the first window's request the turns after its messages
//! (see [`crate::search::replies`]).

use std::collections::{HashMap, HashSet};

use libsql::{Connection, Row, Value};
use types::{NoteId, SessionId};

use crate::error::MemoryError;
use crate::notes::indexing::ChunkMeta;
use crate::notes::metadata::NoteMetadata;
use crate::notes::sessions::{from_sql_seq, to_sql_seq};
use crate::search::freshness::{Delta, DeltaReader, head_row, log_head_stmt};
use crate::search::query::{HitSource, SearchHit};
use crate::search::replies::{Prefetched, after_chunks_stmt, after_row};
use crate::store::batch_read::Reads;
use crate::store::stmt::Stmt;
use crate::store::stmt_cache::each_row;
use crate::time;

const CTX: &str = "reading search results";

/// A note's whole text, metadata and namespace, by note id.
type NoteTexts = HashMap<String, (String, NoteMetadata, Option<String>)>;

/// What [`hits_of`] reads: the hits, the changes committed since this process last caught up
/// (`None` when there are none or when not asked), and what follows the conversation hits read
/// in the same round (see [`crate::search::replies`]).
pub(crate) type Read = (Vec<SearchHit>, Option<Delta>, Prefetched);

/// The hits of the fused chunks, and when `fresh` is given the changes committed since this
/// process last caught up. With `conversations` (the search holds conversation sessions), a
/// server's first round also reads what follows its chunks' messages.
pub(crate) async fn hits_of(
    reads: &Reads,
    fresh: Option<DeltaReader>,
    fused: Vec<(i64, f64)>,
    top_k: usize,
    conversations: bool,
) -> Result<Read, MemoryError> {
    let mut after = Prefetched::new();
    let mut grouper = Grouper::new(top_k);
    let mut texts = NoteTexts::new();
    let mut head = None;
    let mut window = if reads.batches() {
        (top_k * 3).max(10)
    } else {
        (top_k * 3 / 2).max(10)
    };
    let mut start = 0;
    loop {
        let end = (start + window).min(fused.len());
        let batch = &fused[start..end];
        let ids: Vec<i64> = batch.iter().map(|(id, _)| *id).collect();
        let read_head = fresh.is_some() && head.is_none();
        // On a server the turns after the window's messages come in the same request; on a
        // file they are read after, for the hits alone (a third of the rows).
        let with_after = conversations && reads.batches() && start == 0 && !ids.is_empty();
        let mut stmts = Vec::with_capacity(4);
        let mut parts = Vec::with_capacity(4);
        if read_head {
            stmts.push(log_head_stmt());
            parts.push(Part::Head);
        }
        if !ids.is_empty() {
            stmts.extend(detail_stmts(&ids));
            parts.extend([Part::Details, Part::Texts]);
        }
        if with_after {
            stmts.push(after_chunks_stmt(&ids));
            parts.push(Part::After);
        }
        if stmts.is_empty() {
            break;
        }
        let mut details = HashMap::new();
        let mut read_head_row = None;
        reads
            .each_in(stmts, CTX, |i, row| match parts.get(i) {
                Some(Part::Head) => {
                    read_head_row = Some(head_row(row)?);
                    Ok(())
                }
                Some(Part::Details) => {
                    let (id, detail) = detail_of(row)?;
                    details.insert(id, detail);
                    Ok(())
                }
                Some(Part::Texts) => note_text(row, &mut texts),
                Some(Part::After) => after_row(&mut after, row, None),
                None => Err(missing_rows()),
            })
            .await?;
        if read_head {
            head = Some(read_head_row.unwrap_or_default());
        }
        if !ids.is_empty() {
            grouper.add(batch, &details)?;
        }
        if with_after {
            // Read for the whole window; kept for the hits' messages.
            let wanted = grouper.conversation_turns()?;
            after.retain(|turn, _| wanted.contains(turn));
        }
        start = end;
        window *= 2;
        if start >= fused.len() || grouper.is_full() {
            break;
        }
    }
    let delta = match (fresh, head) {
        (Some(fresh), Some(head)) => fresh.after(reads, head).await?,
        _ => None,
    };
    let mut hits = grouper.hits;
    fill_note_texts(&mut hits, texts);
    Ok((hits, delta, after))
}

fn missing_rows() -> MemoryError {
    MemoryError::Corrupt {
        what: CTX,
        source: Some("a read of the batch came back without its rows".into()),
    }
}

/// What a search reads of one chunk.
pub(crate) struct ChunkDetail {
    pub(crate) session: String,
    pub(crate) event_seq: i64,
    pub(crate) note_id: Option<String>,
    pub(crate) text: String,
    pub(crate) meta: ChunkMeta,
}

/// The details of chunks `ids` (a deleted chunk has none), in one read on `conn` (its statement
/// prepared once per connection, see [`each_row`]).
pub(crate) async fn chunk_details_on(
    conn: &Connection,
    ids: &[i64],
) -> Result<HashMap<i64, ChunkDetail>, MemoryError> {
    let [details, _] = detail_stmts(ids);
    let mut out = HashMap::new();
    each_row(conn, &details.sql, details.args, CTX, |row| {
        let (id, detail) = detail_of(row)?;
        out.insert(id, detail);
        Ok(())
    })
    .await?;
    Ok(out)
}

/// The reads of a window of chunks: their details ([`detail_of`]), then the whole text,
/// metadata and namespace of the notes they belong to ([`note_texts`]).
fn detail_stmts(ids: &[i64]) -> [Stmt; 2] {
    let marks = vec!["?"; ids.len()].join(", ");
    let params: Vec<Value> = ids.iter().copied().map(Value::Integer).collect();
    [
        Stmt::built(
            format!(
                "SELECT chunk_id, session_id, event_seq, note_id, text, metadata_json
                 FROM chunks WHERE chunk_id IN ({marks})"
            ),
            params.clone(),
        ),
        Stmt::built(
            format!(
                "SELECT note_id, content, metadata_json, mem_namespace FROM notes WHERE note_id IN
                 (SELECT note_id FROM chunks WHERE chunk_id IN ({marks}))"
            ),
            params,
        ),
    ]
}

/// The chunk id and details in a row's first six columns (`chunk_id, session_id, event_seq,
/// note_id, text, metadata_json`).
pub(crate) fn detail_of(row: &Row) -> Result<(i64, ChunkDetail), MemoryError> {
    let meta: String = row.get(5).map_err(MemoryError::db(CTX))?;
    Ok((
        row.get::<i64>(0).map_err(MemoryError::db(CTX))?,
        ChunkDetail {
            session: row.get(1).map_err(MemoryError::db(CTX))?,
            event_seq: row.get(2).map_err(MemoryError::db(CTX))?,
            note_id: row.get(3).map_err(MemoryError::db(CTX))?,
            text: row.get(4).map_err(MemoryError::db(CTX))?,
            meta: serde_json::from_str(&meta).map_err(MemoryError::corrupt("chunk metadata"))?,
        },
    ))
}

impl ChunkDetail {
    /// The hit this chunk makes with `score` (a note's whole text and metadata are filled in
    /// later).
    pub(crate) fn hit(&self, score: f64) -> Result<SearchHit, MemoryError> {
        let note_id = match &self.note_id {
            Some(id) => Some(NoteId::parse(id).map_err(MemoryError::corrupt("note id"))?),
            None => None,
        };
        Ok(SearchHit {
            session_id: SessionId::parse(&self.session)
                .map_err(MemoryError::corrupt("session id"))?,
            source: HitSource::parse(&self.meta.source),
            note_id,
            text: self.text.clone(),
            note_text: None,
            category: None,
            tags: Vec::new(),
            context: None,
            namespace: None,
            unconfirmed: false,
            confirmed_text: None,
            score,
            created_at: time::parse(&self.meta.created_at)?,
            updated_at: time::parse(&self.meta.updated_at)?,
            event_seq: from_sql_seq(self.event_seq)?,
        })
    }
}

/// What each statement of a window's read is.
enum Part {
    Head,
    Details,
    Texts,
    After,
}

/// Adds the note's text, metadata and namespace in `row` to `texts`.
fn note_text(row: &Row, texts: &mut NoteTexts) -> Result<(), MemoryError> {
    let meta: String = row.get(2).map_err(MemoryError::db(CTX))?;
    let meta: NoteMetadata =
        serde_json::from_str(&meta).map_err(MemoryError::corrupt("note metadata"))?;
    let namespace: Option<String> = row.get(3).map_err(MemoryError::db(CTX))?;
    texts.insert(
        row.get::<String>(0).map_err(MemoryError::db(CTX))?,
        (
            row.get::<String>(1).map_err(MemoryError::db(CTX))?,
            meta,
            namespace,
        ),
    );
    Ok(())
}

/// Fills in the whole text, the metadata and the namespace of every note hit (a note deleted
/// since its chunk was read keeps none).
fn fill_note_texts(hits: &mut [SearchHit], mut texts: NoteTexts) {
    for hit in hits {
        if let Some((text, meta, namespace)) = hit
            .note_id
            .as_ref()
            .and_then(|id| texts.remove(id.as_str()))
        {
            hit.note_text = Some(text);
            hit.category = meta.category;
            hit.tags = meta.tags;
            hit.context = meta.context;
            hit.namespace = namespace;
            hit.unconfirmed = meta.provenance.as_ref().is_some_and(|p| !p.confirmed);
        }
    }
}

/// Builds the hits: one per note (or per message), in fused order, keeping the best chunk of each.
struct Grouper {
    top_k: usize,
    seen: HashSet<(String, Option<String>, i64)>,
    hits: Vec<SearchHit>,
}

impl Grouper {
    fn new(top_k: usize) -> Self {
        Self {
            top_k,
            seen: HashSet::new(),
            hits: Vec::with_capacity(top_k),
        }
    }

    fn is_full(&self) -> bool {
        self.hits.len() >= self.top_k
    }

    /// The (session, event) of each conversation hit so far.
    fn conversation_turns(&self) -> Result<HashSet<(String, i64)>, MemoryError> {
        self.hits
            .iter()
            .filter(|h| h.source == HitSource::Conversation)
            .map(|h| Ok((h.session_id.to_string(), to_sql_seq(h.event_seq)?)))
            .collect()
    }

    /// Takes the next fused chunks (in order) with their details.
    fn add(
        &mut self,
        fused: &[(i64, f64)],
        details: &HashMap<i64, ChunkDetail>,
    ) -> Result<(), MemoryError> {
        for (chunk_id, score) in fused {
            if self.is_full() {
                break;
            }
            // A chunk deleted since the legs ran has no details: skip it.
            let Some(d) = details.get(chunk_id) else {
                continue;
            };
            if !self
                .seen
                .insert((d.session.clone(), d.note_id.clone(), d.event_seq))
            {
                continue;
            }
            self.hits.push(d.hit(*score)?);
        }
        Ok(())
    }
}
