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
use crate::search::reindex::Scope;
use crate::store::Db;
use crate::store::encryption::EncryptionKey;
use crate::store::placement::{self, LegacyDir};
use crate::store::worker::Target;
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
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("legacy_dir", &self.legacy_dir)
            .field("progress", &self.progress.is_some())
            .field("vector_leg", &self.vector_leg)
            .field("encrypted", &self.encryption_key.is_some())
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
    /// Opens the store described by `config` for the user whose workspace root is `user_root`:
    /// the local file at `db_path` (default `<user_root>/.oxydra/memory.db`), or the remote server.
    pub async fn open(config: &MemoryConfig, user_root: &Path) -> Result<Self, MemoryError> {
        Self::open_with(config, user_root, OpenOptions::default()).await
    }

    pub async fn open_with(
        config: &MemoryConfig,
        user_root: &Path,
        options: OpenOptions,
    ) -> Result<Self, MemoryError> {
        let target = placement::target(config, user_root, &options.legacy_dir)?
            .with_key(options.encryption_key)?;
        let embedder = embedding::from_config(&config.embedding)?;
        let policy = NotePolicy {
            tombstone_retention_days: config.tombstone_retention_days,
            duplicate_similarity: config.duplicate_similarity,
        };
        Self::open_target(
            target,
            embedder,
            config.embedding.batch_size,
            options.progress,
            policy,
            options.vector_leg,
        )
        .await
    }

    /// Opens (or creates) the database file at `path` with `embedder`. For tests and benches.
    pub async fn open_local(path: &Path, embedder: Arc<dyn Embedder>) -> Result<Self, MemoryError> {
        Self::open_local_with(path, embedder, None).await
    }

    /// Opens (or creates) the database file at `path`, encrypted at rest with `key`. For tests
    /// and benches; `open_with` does the same with [`OpenOptions::encryption_key`].
    pub async fn open_encrypted(
        path: &Path,
        key: EncryptionKey,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, MemoryError> {
        placement::create_parent(path)?;
        let target = Target::Local {
            path: path.to_owned(),
            key: Some(key),
        };
        Self::open_target(
            target,
            embedder,
            DEFAULT_BATCH,
            None,
            NotePolicy::default(),
            VectorLeg::Auto,
        )
        .await
    }

    pub async fn open_local_with(
        path: &Path,
        embedder: Arc<dyn Embedder>,
        progress: Option<ProgressFn>,
    ) -> Result<Self, MemoryError> {
        placement::create_parent(path)?;
        Self::open_target(
            Target::Local {
                path: path.to_owned(),
                key: None,
            },
            embedder,
            DEFAULT_BATCH,
            progress,
            NotePolicy::default(),
            VectorLeg::Auto,
        )
        .await
    }

    /// Opens the database on the libSQL server at `url` with `token` (empty for a server without
    /// authentication) and `embedder`. For tests and benches; `open` reads the same from config.
    pub async fn open_remote(
        url: &str,
        token: &str,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, MemoryError> {
        crate::store::remote::check_url(url)?;
        let target = Target::Remote {
            url: url.to_owned(),
            token: token.to_owned(),
        };
        Self::open_target(
            target,
            embedder,
            DEFAULT_BATCH,
            None,
            NotePolicy::default(),
            VectorLeg::Auto,
        )
        .await
    }

    /// Opens an embedded replica: the local file `path`, synced from the server at `url`. Reads
    /// are served from the file; writes go to the server and are visible here once acknowledged.
    /// For tests and benches; `open` does the same for `[memory] replica = true`.
    pub async fn open_replica(
        path: &Path,
        url: &str,
        token: &str,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, MemoryError> {
        Self::open_replica_with(path, url, token, None, embedder).await
    }

    /// Like [`MemoryStore::open_replica`], the replica file encrypted at rest with `key` when
    /// one is given.
    pub async fn open_replica_with(
        path: &Path,
        url: &str,
        token: &str,
        key: Option<EncryptionKey>,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, MemoryError> {
        crate::store::remote::check_url(url)?;
        placement::create_parent(path)?;
        let target = Target::Replica {
            path: path.to_owned(),
            url: url.to_owned(),
            token: token.to_owned(),
            key,
        };
        Self::open_target(
            target,
            embedder,
            DEFAULT_BATCH,
            None,
            NotePolicy::default(),
            VectorLeg::Auto,
        )
        .await
    }

    async fn open_target(
        target: Target,
        embedder: Arc<dyn Embedder>,
        batch_size: usize,
        progress: Option<ProgressFn>,
        policy: NotePolicy,
        leg: VectorLeg,
    ) -> Result<Self, MemoryError> {
        tracing::debug!(?target, model = embedder.model_id(), "opening memory store");
        let db = Db::open(target).await?;
        db.write(|conn| async move { fill_missing_hashes(&conn).await })
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
            }),
        };
        let mut progress = progress.unwrap_or_else(|| Box::new(|_, _| {}));
        store.reindex_scope(Scope::Stale, &mut *progress).await?;
        store.reload_index().await?;
        Ok(store)
    }

    /// Switches how the vector leg finds its candidates (binary codes are built or dropped now). For
    /// benches and tests; stores opened from config take [`OpenOptions::vector_leg`].
    pub fn set_vector_leg(&self, leg: VectorLeg) {
        self.inner.index.set_leg(leg);
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
        F: FnOnce(Connection) -> Fut + Send + 'static,
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

    /// Folds the WAL back into the database file (after bulk loads). No-op for a remote server.
    pub(crate) async fn checkpoint(&self) -> Result<(), MemoryError> {
        self.inner.db.checkpoint().await
    }
}
