//! Hybrid search: scope, run both legs, fuse, group per note or message.
//!
//! 0. Catch up: commits by other writers are applied to this process's indexes first (see
//!    [`crate::search::freshness`]).
//! 1. Scope: only chunks of the requested sessions (and passing the filters) are candidates, in both
//!    legs, before anything is ranked: a check of each candidate's facets (see [`memory_index::facets`]).
//!    Expired notes are hidden the same way, when the keyword index knows the sessions hold any.
//! 2. Keyword leg: BM25 over the in-memory postings of those sessions, within a budget of postings
//!    (see [`memory_index::keyword`] and [`memory_index::KeywordIndex`]).
//! 3. Vector leg: the in-memory vector index of those sessions, current model only — an exact int8
//!    scan of small sessions, a binary first pass over large ones — best candidates rescored with
//!    the f32 query (see [`memory_index::vector_index`] and [`memory_index::sign_codes`]); now and then the
//!    query is handed to the probe thread, which measures how far the first pass must reach (see
//!    [`memory_index::calibration`]).
//! 4. Fusion (see [`memory_index::fusion`]) of the chunk scores, lifted for chunks naming whom
//!    the query names and for longer chunks (see [`crate::search::priors`]), then one hit per
//!    note (or per message for conversation sessions) carrying its best chunk: the only step that
//!    reads the database (see [`crate::search::hits`]: one request to a remote server for most
//!    searches).
//!
//! Threads: the query is embedded on the caller's thread when that is cheap (the builtin model,
//! once loaded, takes ~10 µs for a short query); the keyword leg runs on the caller's thread (its
//! work is bounded by the posting budget); the vector scan runs inline when it is small, and when
//! it is not in place on a multi-threaded runtime (its other tasks handed to another worker), else
//! on the blocking pool beside the keyword leg; a query naming a time searches the whole scope and
//! the span in the same walk of each leg; ONE read (on the caller's thread for a file, see
//! `read_small`) then takes the details of the best chunks and the turns after conversation hits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::MemoryError;
use crate::memory_store::MemoryStore;
use crate::notes::indexing::embed_checked;
use crate::search::freshness::Delta;
use crate::search::hits::hits_of;
use crate::search::legs::{Legs, SPAN_SHARE, time_ranked, within};
use crate::search::query::{HybridQuery, Scope, SearchHit};
use crate::search::replies::with_replies;
use crate::store::batch_read::Reads;
use memory_index::FacetFilter;
use memory_index::embedding::{BUILTIN_MODEL_ID, BuiltinEmbedder, Embedder, normalize};
use memory_index::fusion::sanitize;
use memory_index::related_words::related_terms;
use memory_index::terms::{query_index_terms, query_names};
use memory_index::vector_index::VectorIndex;

/// Only the start of a long query is embedded: enough to carry its meaning, bounded in cost.
const MAX_EMBED_QUERY_CHARS: usize = 2000;
/// Queries up to this many bytes are embedded on the caller's thread by the builtin model.
const INLINE_EMBED_BYTES: usize = 512;
/// Scans reading more vector components than this (~10k rows of 384 dimensions, ~0.2 ms) run on
/// the blocking pool, so that the caller's async thread never blocks for long.
const INLINE_SCAN_COMPONENTS: usize = 4 << 20;

impl MemoryStore {
    /// Searches the query's sessions; hits are best first, at most `top_k`, scores in `0..=1`.
    pub async fn search(&self, query: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError> {
        let top_k = query.top_k.clamp(1, HybridQuery::MAX_TOP_K);
        let mut sessions: Vec<String> = query.sessions.iter().map(|s| s.to_string()).collect();
        sessions.sort();
        sessions.dedup();
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        // Other writers' commits (the runner CLI, another process) must be in the indexes. The
        // reader job that reads the hits also reads what was committed since this process last
        // caught up; unless the indexes held all of it already, it is applied and the search runs
        // again. A third search only runs when another writer committed again meanwhile, and it
        // takes the indexes as they are (as fresh as at its start).
        for check in [true, true, false] {
            let index = &self.inner.index;
            let generation = index.generation();
            let (hits, delta) = self.search_once(query, &sessions, top_k, check).await?;
            let Some(delta) = delta else {
                return Ok(hits);
            };
            // Usually the changes are this process's own writes, applied right after their commit
            // and so already in the indexes the legs searched (nothing applied since they ran):
            // then the hits stand.
            let held = match &delta {
                Delta::Current => true,
                Delta::TooFarBehind => false,
                Delta::Changes { changes, .. } => index.holds(changes),
            } && index.generation() == generation;
            self.apply_delta(delta).await?;
            if held {
                return Ok(hits);
            }
        }
        Ok(Vec::new())
    }

    /// One search over the indexes as they are, and, when `check_fresh`, the changes committed
    /// since this process last caught up (`None` when there are none).
    async fn search_once(
        &self,
        query: &HybridQuery,
        sessions: &[String],
        top_k: usize,
        check_fresh: bool,
    ) -> Result<(Vec<SearchHit>, Option<Delta>), MemoryError> {
        // Taken before the legs run: the indexes hold at least every change up to this point.
        let fresh = check_fresh.then(|| self.delta_reader());
        // Several chunks can belong to one note, so each leg brings more candidates than hits.
        let candidates = (top_k * 10).clamp(50, 1000);

        let (vector_weight, fts_weight) = sanitize(query.weights);
        let query_vector = if vector_weight > 0.0 {
            self.embed_query(&query.text).await
        } else {
            None
        };
        // The span the query's words speak of (an event as anchor is dated by a lookup first).
        let range = match &query.span {
            Some(span) => Some(span.clone()),
            None => self.time_in(query, sessions).await?,
        };
        let (terms, related, names) = if fts_weight > 0.0 {
            let terms = query_index_terms(&query.text);
            // Whom the query asks about: the terms the user's own text writes as names,
            // however the query writes them (see `KeywordIndex::names_among`).
            let names = self.inner.index.keywords().names_among(&terms);
            // Neither those nor what the query writes as a name bring related words: another
            // name is not the same person, even one the user's text never wrote.
            let mut unrelated = query_names(&query.text);
            unrelated.extend(names.iter().cloned());
            let related = related_terms(&query.text, &terms, &unrelated);
            (terms, related, names)
        } else {
            (Vec::new(), Vec::new(), Vec::new())
        };
        let legs = Legs {
            sessions,
            searched: self.inner.index.keywords().searched(sessions),
            candidates,
            vector: query_vector,
            terms,
            related,
            names,
        };
        // A time in the query's words: what was said then comes first. The search within it is
        // the same walk of both legs as the whole one.
        let fused = match range.and_then(|r| within(&query.filters, &r)) {
            Some(filters) => {
                let span = (candidates / SPAN_SHARE).max(top_k);
                let sets = [(&query.filters, candidates), (&filters, span)];
                let mut both = self.fused_each(query, &legs, &sets).await;
                let inside = both.pop().unwrap_or_default();
                time_ranked(both.pop().unwrap_or_default(), inside)
            }
            None => self.fused(query, &legs, &query.filters).await,
        };
        let batching = self.batching();
        // The turns after conversation hits join them under the query's own filters.
        let filter = FacetFilter::of(Scope {
            filters: query.filters.clone(),
            expired_at: None,
        });
        let index = Arc::clone(&self.inner.index);
        let conversations = query.sessions.iter().any(|s| !s.is_user_memory());
        self.read_small(move |conn| async move {
            let reads = Reads::new(conn, batching);
            let (hits, delta, after) = hits_of(&reads, fresh, fused, top_k, conversations).await?;
            let allows =
                |session: &str, id| filter.as_ref().is_none_or(|f| index.allows(session, id, f));
            Ok((
                with_replies(&reads, hits, after, top_k, allows).await?,
                delta,
            ))
        })
        .await
    }

    /// The vector leg under each of `filters`, at most `limits[i]` chunks for `filters[i]` (one
    /// list each, one walk of the rows for all): inline for a small scan; a large one in place
    /// on a multi-threaded runtime, else on the blocking pool.
    pub(crate) async fn vector_leg(
        &self,
        sessions: Vec<String>,
        query: Vec<f32>,
        limits: Vec<usize>,
        filters: Vec<Option<FacetFilter>>,
    ) -> Vec<Vec<(i64, f64)>> {
        let inline = self.inner.index.scan_size(&sessions) <= INLINE_SCAN_COMPONENTS;
        let index = Arc::clone(&self.inner.index);
        let passes = filters.len();
        let scan = move || {
            let refs: Vec<Option<&FacetFilter>> = filters.iter().map(Option::as_ref).collect();
            let (found, probe_due) =
                index.search_each(index.leg(), &sessions, &query, &limits, &refs, true);
            // Now and then the first pass's reach is measured on this real query, off the
            // search's path (see `memory_index::calibration`).
            if probe_due {
                spawn_probe(index, sessions, query);
            }
            found
                .into_iter()
                .map(|pass| pass.into_iter().map(|(id, s)| (id, f64::from(s))).collect())
                .collect::<Vec<Vec<(i64, f64)>>>()
        };
        if inline {
            return scan();
        }
        // A large scan on a multi-threaded runtime runs in place: the runtime first hands this
        // worker's other tasks to another worker, so nothing waits behind it, and the scan does
        // not wait for a blocking-pool thread to be scheduled (with the machine's other cores
        // busy, that wait was the tail of the search's latency).
        let here = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if here {
            return tokio::task::block_in_place(scan);
        }
        match tokio::task::spawn_blocking(scan).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "vector scan failed; searching by keywords only");
                vec![Vec::new(); passes]
            }
        }
    }

    /// The query's vector, or `None` (keyword-only search) when it is empty or the embedder fails.
    async fn embed_query(&self, text: &str) -> Option<Vec<f32>> {
        let text: String = text.trim().chars().take(MAX_EMBED_QUERY_CHARS).collect();
        if text.is_empty() {
            return None;
        }
        let inline = self.inner.inline_embedder.as_ref();
        if text.len() <= INLINE_EMBED_BYTES
            && let Some(v) = inline.and_then(|e| e.embed(&text))
        {
            return Some(v);
        }
        match embed_checked(self.inner.embedder.as_ref(), &[text]).await {
            Ok(mut v) => {
                if let Some(e) = inline {
                    e.mark_loaded();
                }
                v.pop()
            }
            Err(e) => {
                tracing::warn!(error = %e, "query embedding failed; searching by keywords only");
                None
            }
        }
    }
}

/// The builtin model called directly on the caller's thread, for short queries, once a first
/// query through [`Embedder::embed`] has loaded it (loading takes a second and must never block an
/// async thread; after that a short query costs ~10 µs, less than a hop to the blocking pool).
#[derive(Debug)]
pub(crate) struct InlineEmbedder {
    model: BuiltinEmbedder,
    loaded: AtomicBool,
}

impl InlineEmbedder {
    /// Only for the builtin model: the model id names it, so these vectors are the embedder's.
    pub(crate) fn for_embedder(embedder: &dyn Embedder) -> Option<Self> {
        (embedder.model_id() == BUILTIN_MODEL_ID)
            .then(|| BuiltinEmbedder::new(1).ok())
            .flatten()
            .map(|model| Self {
                model,
                loaded: AtomicBool::new(false),
            })
    }

    fn mark_loaded(&self) {
        self.loaded.store(true, Ordering::Relaxed);
    }

    /// The unit vector of `text`, or `None` (use the async path) before the model is loaded or
    /// on any failure.
    fn embed(&self, text: &str) -> Option<Vec<f32>> {
        if !self.loaded.load(Ordering::Relaxed) {
            return None;
        }
        let mut v = self.model.embed_blocking(&[text.to_owned()]).ok()?.pop()?;
        if v.len() != self.model.dimensions() {
            return None;
        }
        normalize(&mut v);
        Some(v)
    }
}

/// Hands a live recall probe to the probe thread (never in the search's time; skipped while
/// another probe runs).
fn spawn_probe(index: Arc<VectorIndex>, sessions: Vec<String>, query: Vec<f32>) {
    memory_index::calibration::in_background(move || index.check_recall(&sessions, &query));
}
