//! [`MemoryStore`]: the handle, opening, and the plumbing every operation shares.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use libsql::Connection;
use types::MemoryConfig;

use crate::error::MemoryError;
use crate::notes::duplicates::{DEFAULT_DUPLICATE_SIMILARITY, fill_missing_hashes};
use crate::notes::lifecycle::DEFAULT_TOMBSTONE_RETENTION_DAYS;
use crate::search::freshness::Freshness;
use crate::search::hybrid::InlineEmbedder;
use crate::store::Db;
use crate::store::batch_read::Batching;
use crate::store::encryption::EncryptionKey;
use crate::store::placement::{self, LegacyDir};
use crate::store::rows::query_first;
use crate::store::worker::Target as DbTarget;
use memory_index::embedding::{self, Embedder};
use memory_index::vector_index::{VectorIndex, VectorLeg};

/// Called with (done, total) while chunks are re-embedded.
pub type ProgressFn = Box<dyn FnMut(usize, usize) + Send>;

/// How to open a store beyond the configuration.
#[derive(Default)]
pub struct OpenOptions {
    /// Where to look for a database left by an older version (default: the working directory).
    pub legacy_dir: LegacyDir,
    /// Progress of a re-embedding triggered by a model change (it is also logged).
    pub progress: Option<ProgressFn>,
    /// How the vector leg finds its candidates (default: exact for small sessions, a binary first
    /// pass with exact rescoring for large ones).
    pub vector_leg: VectorLeg,
    /// Encrypts a local file or a replica at rest with this key (the runner's per-user key).
    pub encryption_key: Option<EncryptionKey>,
    /// The embedder (default: the one `[memory.embedding]` names, or the builtin model for a
    /// target given by path or URL).
    pub embedder: Option<Arc<dyn Embedder>>,
}

impl OpenOptions {
    /// Default options with `embedder`.
    pub fn with_embedder(embedder: Arc<dyn Embedder>) -> Self {
        Self {
            embedder: Some(embedder),
            ..Self::default()
        }
    }
}

/// Where a store's database is.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// As `[memory]` says for the user whose workspace root is `user_root`: the local file at
    /// `db_path` (default `<user_root>/.oxydra/memory.db`), or the remote server, or a replica.
    Config {
        config: &'a MemoryConfig,
        user_root: &'a Path,
    },
    /// The database file at this path (created with its folder when missing).
    File(&'a Path),
    /// The libSQL server at `url` with `token` (empty for a server without authentication).
    Remote { url: &'a str, token: &'a str },
    /// An embedded replica: the local file `path`, synced from the server at `url`. Reads are
    /// served from the file; writes go to the server and are visible here once acknowledged.
    Replica {
        path: &'a Path,
        url: &'a str,
        token: &'a str,
    },
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("legacy_dir", &self.legacy_dir)
            .field("progress", &self.progress.is_some())
            .field("vector_leg", &self.vector_leg)
            .field("encrypted", &self.encryption_key.is_some())
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id()))
            .finish()
    }
}

/// One user's memory database. Cheap to clone; every clone shares the same threads and index.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    /// The database (its connections are private to `store/`).
    pub(crate) db: Db,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) index: Arc<VectorIndex>,
    /// How far this process has applied the change log (other writers' commits).
    pub(crate) freshness: Freshness,
    pub(crate) batch_size: usize,
    /// Set for the builtin model: embeds short queries without a thread hop.
    pub(crate) inline_embedder: Option<InlineEmbedder>,
    /// Days a deleted note stays restorable (`[memory] tombstone_retention_days`).
    pub(crate) tombstone_retention_days: u32,
    /// Cosine at or above which a new note is a near-duplicate (`[memory] duplicate_similarity`).
    pub(crate) duplicate_similarity: f32,
    /// Where the index snapshot lives (plain local stores only: see `search/snapshot.rs`).
    pub(crate) snapshot: Option<std::path::PathBuf>,
}

/// The note-lifecycle settings of `[memory]`.
#[derive(Debug, Clone, Copy)]
struct NotePolicy {
    tombstone_retention_days: u32,
    duplicate_similarity: f32,
}

impl Default for NotePolicy {
    fn default() -> Self {
        Self {
            tombstone_retention_days: DEFAULT_TOMBSTONE_RETENTION_DAYS,
            duplicate_similarity: DEFAULT_DUPLICATE_SIMILARITY,
        }
    }
}

/// Texts per embedding call when re-embedding without a configured batch size.
const DEFAULT_BATCH: usize = 64;

impl MemoryStore {
    /// Opens (or creates) the store at `target` and brings it up to date: migrations, a
    /// re-embedding when the model changed, the in-memory indexes loaded.
    pub async fn open(target: Target<'_>, options: OpenOptions) -> Result<Self, MemoryError> {
        let (db_target, embedder, batch_size, policy) = match target {
            Target::Config { config, user_root } => {
                let place = placement::target(config, user_root, &options.legacy_dir)?;
                let embedder = match options.embedder {
                    Some(embedder) => embedder,
                    None => embedding::from_config(&config.embedding)?,
                };
                let policy = NotePolicy {
                    tombstone_retention_days: config.tombstone_retention_days,
                    duplicate_similarity: config.duplicate_similarity,
                };
                (place, embedder, config.embedding.batch_size, policy)
            }
            Target::File(path) => {
                placement::create_parent(path)?;
                let place = DbTarget::Local {
                    path: path.to_owned(),
                    key: None,
                };
                by_path(place, options.embedder)?
            }
            Target::Remote { url, token } => {
                crate::store::remote::check_url(url)?;
                let place = DbTarget::Remote {
                    url: url.to_owned(),
                    token: token.to_owned(),
                };
                by_path(place, options.embedder)?
            }
            Target::Replica { path, url, token } => {
                crate::store::remote::check_url(url)?;
                placement::create_parent(path)?;
                let place = DbTarget::Replica {
                    path: path.to_owned(),
                    url: url.to_owned(),
                    token: token.to_owned(),
                    key: None,
                };
                by_path(place, options.embedder)?
            }
        };
        Self::open_target(
            db_target.with_key(options.encryption_key)?,
            embedder,
            batch_size,
            options.progress,
            policy,
            options.vector_leg,
        )
        .await
    }

    async fn open_target(
        target: DbTarget,
        embedder: Arc<dyn Embedder>,
        batch_size: usize,
        progress: Option<ProgressFn>,
        policy: NotePolicy,
        leg: VectorLeg,
    ) -> Result<Self, MemoryError> {
        tracing::debug!(?target, model = embedder.model_id(), "opening memory store");
        // The keyword leg's related words are parsed beside the open, not on the first search.
        drop(tokio::task::spawn_blocking(
            memory_index::related_words::warm,
        ));
        let snapshot = match &target {
            DbTarget::Local { path, key: None } => {
                Some(crate::search::snapshot_file::path_for(path))
            }
            _ => None,
        };
        let db = Db::open(target).await?;
        db.write(|conn| async move { fill_hashes_once(&conn).await })
            .await?;
        let index = Arc::new(VectorIndex::with_leg(
            embedder.model_id(),
            embedder.dimensions(),
            leg,
        ));
        let store = Self {
            inner: Arc::new(Inner {
                db,
                inline_embedder: InlineEmbedder::for_embedder(embedder.as_ref()),
                embedder,
                index,
                freshness: Freshness::default(),
                batch_size: batch_size.max(1),
                tombstone_retention_days: policy.tombstone_retention_days,
                duplicate_similarity: policy.duplicate_similarity,
                snapshot,
            }),
        };
        let mut progress = progress.unwrap_or_else(|| Box::new(|_, _| {}));
        let chunks = store.load_index().await?;
        store.embed_stale(chunks, &mut *progress).await?;
        Ok(store)
    }

    /// Drops this handle; when it is the last one, waits until every database thread has closed
    /// its connection (the files are then free for another process, a re-key or a removal).
    pub async fn close(self) {
        let ended = self.inner.db.ended();
        let last = Arc::strong_count(&self.inner) == 1;
        drop(self);
        if last {
            Db::wait_ended(ended).await;
        }
    }

    /// The embedding model whose vectors this store ranks.
    pub fn model_id(&self) -> &str {
        self.inner.embedder.model_id()
    }

    /// Runs a job on the writer thread (every write goes through here, one at a time).
    pub(crate) async fn write<T, F, Fut>(&self, job: F) -> Result<T, MemoryError>
    where
        F: FnOnce(Connection) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = Result<T, MemoryError>> + 'static,
        T: Send + 'static,
    {
        self.inner.db.write(job).await
    }

    /// An embedded replica pulls the primary's latest changes now (it also does so every few
    /// seconds in the background, and after each of its own writes). No-op otherwise.
    pub async fn sync(&self) -> Result<(), MemoryError> {
        self.inner.db.sync().await
    }

    /// Runs a small read-only job on the caller's thread when the store is a local file and its
    /// inline connection is free (see [`crate::store::inline_read`]), else on a reader thread.
    pub(crate) async fn read_small<T, F, Fut>(&self, job: F) -> Result<T, MemoryError>
    where
        F: FnOnce(Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, MemoryError>> + 'static,
        T: Send + 'static,
    {
        self.inner.db.read_small(job).await
    }

    /// Runs a read-only job on one of the reader threads.
    pub(crate) async fn read<T, F, Fut>(&self, job: F) -> Result<T, MemoryError>
    where
        F: FnOnce(Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, MemoryError>> + 'static,
        T: Send + 'static,
    {
        self.inner.db.read(job).await
    }

    /// Whether reader jobs send their reads as one batch (a remote server's store; see
    /// [`crate::store::batch_read`]).
    pub(crate) fn batching(&self) -> Batching {
        self.inner.db.batching()
    }

    /// The benches' switch (the `bench` feature): a remote store sends a reader job's reads as
    /// one batch (`true`, the default) or statement by statement, to compare both in one run.
    #[cfg(feature = "bench")]
    pub fn set_read_batching(&self, on: bool) {
        self.inner.db.batching().set(on);
    }

    /// Folds the WAL back into the database file (after bulk loads). No-op for a remote server.
    pub(crate) async fn checkpoint(&self) -> Result<(), MemoryError> {
        self.inner.db.checkpoint().await
    }
}

/// What a store opened by path or URL runs with: `embedder` (default the builtin model) and the
/// default batch size and note policy.
fn by_path(
    place: DbTarget,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<(DbTarget, Arc<dyn Embedder>, usize, NotePolicy), MemoryError> {
    let embedder = match embedder {
        Some(embedder) => embedder,
        None => embedding::from_config(&Default::default())?,
    };
    Ok((place, embedder, DEFAULT_BATCH, NotePolicy::default()))
}

/// The `store_meta` key recorded once every note has its `text_hash`. Every write sets it since
/// migration 7, so only notes written before lack one: later opens skip the scan of every note.
const HASHES_FILLED: &str = "note_hashes_filled";

async fn fill_hashes_once(conn: &libsql::Connection) -> Result<(), MemoryError> {
    let ctx = "hashing older notes";
    let filled = query_first(
        conn,
        "SELECT 1 FROM store_meta WHERE key = ?1",
        [HASHES_FILLED],
        ctx,
        |_| Ok(()),
    )
    .await?;
    if filled.is_some() {
        return Ok(());
    }
    fill_missing_hashes(conn).await?;
    conn.execute(
        "INSERT INTO store_meta (key, value) VALUES (?1, '1') ON CONFLICT (key) DO NOTHING",
        [HASHES_FILLED],
    )
    .await
    .map_err(MemoryError::db(ctx))?;
    Ok(())
}
