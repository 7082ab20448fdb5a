//! Shared fixtures: a store on a real file in a temp dir or on a real `sqld` ([`Backend`]), a raw
//! connection for SQL checks, an embedder that can be told to fail, and [`on_both_backends!`],
//! which runs one behavioural test against a local file and against a remote server; a counting,
//! holding proxy in front of `sqld` (`proxy`).

#![allow(dead_code, reason = "each test binary uses a different subset")]

pub mod proxy;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use memory::embedding::EmbedError;
use memory::{Embedder, EncryptionKey, HashEmbedder, MemoryStore, OpenOptions, Target, VectorLeg};
use types::{SessionId, UserId};

pub const DIMS: usize = 64;

/// Where a fixture's database lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A file in a temporary directory.
    Local,
    /// A real `sqld` on loopback with JWT auth (the test is `#[ignore = "needs sqld"]`).
    Remote,
    /// An embedded replica of such a server in a temporary directory (each store its own file,
    /// as on another host).
    Replica,
    /// A file in a temporary directory, encrypted at rest with [`test_key`].
    Encrypted,
    /// An embedded replica whose file is encrypted at rest with [`test_key`].
    EncryptedReplica,
}

impl Backend {
    fn encrypted(self) -> bool {
        matches!(self, Backend::Encrypted | Backend::EncryptedReplica)
    }

    fn has_server(self) -> bool {
        matches!(
            self,
            Backend::Remote | Backend::Replica | Backend::EncryptedReplica
        )
    }
}

/// The key of the encrypted fixtures (64 hex digits, like the runner's keys).
pub fn test_key() -> EncryptionKey {
    EncryptionKey::parse(&"5eed".repeat(16)).unwrap()
}

/// The server of a remote fixture and a read-write token for it.
pub struct RemoteDb {
    pub server: test_support::Sqld,
    pub token: String,
    /// Stores open embedded replicas (in the fixture's directory) instead of remote connections.
    pub replica: bool,
}

static NEXT_REPLICA: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub struct Fixture {
    pub dir: tempfile::TempDir,
    /// The database file (local fixtures; unused by remote ones).
    pub path: PathBuf,
    pub store: MemoryStore,
    pub remote: Option<RemoteDb>,
    /// The key the files are encrypted with (encrypted fixtures).
    pub key: Option<EncryptionKey>,
}

pub async fn fixture() -> Fixture {
    fixture_on(Backend::Local).await
}

pub async fn fixture_on(backend: Backend) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let remote = backend.has_server().then(|| {
        let server = test_support::Sqld::start_with_auth();
        let token = server.token(r#"{"a":"rw"}"#);
        RemoteDb {
            server,
            token,
            replica: backend != Backend::Remote,
        }
    });
    let key = backend.encrypted().then(test_key);
    let store = open_at(
        &path,
        remote.as_ref(),
        key.clone(),
        Arc::new(HashEmbedder::new(DIMS)),
    )
    .await;
    Fixture {
        dir,
        path,
        store,
        remote,
        key,
    }
}

/// Set (to any value) by `approximate::the_suite_passes_with_the_approximate_leg` for the run of the
/// suite it starts: every fixture store then searches through the binary first pass at every size.
pub const APPROXIMATE_ENV: &str = "MEMORY_TEST_APPROXIMATE_LEG";

async fn open_at(
    path: &Path,
    remote: Option<&RemoteDb>,
    key: Option<EncryptionKey>,
    embedder: Arc<dyn Embedder>,
) -> MemoryStore {
    let vector_leg = match std::env::var_os(APPROXIMATE_ENV) {
        Some(_) => VectorLeg::Approximate,
        None => VectorLeg::Auto,
    };
    let url = remote.map(|db| db.server.url()).unwrap_or_default();
    let replica_file;
    let (target, key) = match remote {
        None => (Target::File(path), key),
        Some(db) if db.replica => {
            let n = NEXT_REPLICA.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            replica_file = path.with_file_name(format!("replica-{n}.db"));
            let target = Target::Replica {
                path: &replica_file,
                url: &url,
                token: &db.token,
            };
            (target, key)
        }
        // A remote server is never encrypted by the client.
        Some(db) => (
            Target::Remote {
                url: &url,
                token: &db.token,
            },
            None,
        ),
    };
    let options = OpenOptions {
        encryption_key: key,
        vector_leg,
        ..OpenOptions::with_embedder(embedder)
    };
    MemoryStore::open(target, options).await.unwrap()
}

impl Fixture {
    /// Another store on the same database (a second process, a reopen), with `embedder`.
    pub async fn open(&self, embedder: Arc<dyn Embedder>) -> MemoryStore {
        open_at(&self.path, self.remote.as_ref(), self.key.clone(), embedder).await
    }

    /// Another store on the same database with the fixture's embedder.
    pub async fn reopen(&self) -> MemoryStore {
        self.open(Arc::new(HashEmbedder::new(DIMS))).await
    }

    /// A raw connection to the same database (the primary, for a replica fixture).
    pub async fn raw(&self) -> Raw {
        match &self.remote {
            None => Raw::open_with_key(&self.path, self.key.as_ref()).await,
            Some(db) => {
                let built = libsql::Builder::new_remote(db.server.url(), db.token.clone())
                    .build()
                    .await
                    .unwrap();
                let conn = built.connect().unwrap();
                Raw { _db: built, conn }
            }
        }
    }
}

/// For each named `async fn name(backend: Backend)`, a module `name` with five tests: `local`,
/// `encrypted` (a local file encrypted at rest), `remote`, `replica` and `encrypted_replica` (the
/// last three `#[ignore = "needs sqld"]`, run by scripts/test.sh and CI).
macro_rules! on_both_backends {
    ($($test:ident),* $(,)?) => {
        $(
            mod $test {
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn local() {
                    super::$test($crate::common::Backend::Local).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn encrypted() {
                    super::$test($crate::common::Backend::Encrypted).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                #[ignore = "needs sqld"]
                async fn encrypted_replica() {
                    test_support::need(test_support::Need::Sqld);
                    super::$test($crate::common::Backend::EncryptedReplica).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                #[ignore = "needs sqld"]
                async fn remote() {
                    test_support::need(test_support::Need::Sqld);
                    super::$test($crate::common::Backend::Remote).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                #[ignore = "needs sqld"]
                async fn replica() {
                    test_support::need(test_support::Need::Sqld);
                    super::$test($crate::common::Backend::Replica).await;
                }
            }
        )*
    };
}
pub(crate) use on_both_backends;

pub fn user(name: &str) -> UserId {
    UserId::parse(name).unwrap()
}

pub fn session(name: &str) -> SessionId {
    SessionId::parse(name).unwrap()
}

/// Saves `text` as a plain note of `owner`'s, whatever similar notes the store holds.
pub async fn save_note(store: &MemoryStore, owner: &UserId, text: &str) -> memory::Note {
    store
        .save(
            owner,
            None,
            text,
            memory::NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap()
}

/// A direct connection to the database file, for checks the store's API does not offer.
pub struct Raw {
    _db: libsql::Database,
    pub conn: libsql::Connection,
}

impl Raw {
    pub async fn open(path: &Path) -> Self {
        Self::open_with_key(path, None).await
    }

    /// A connection to a file encrypted with `key` (plaintext when `None`).
    pub async fn open_with_key(path: &Path, key: Option<&EncryptionKey>) -> Self {
        let mut builder = libsql::Builder::new_local(path);
        if let Some(key) = key {
            builder = builder.encryption_config(key.config());
        }
        let db = builder.build().await.unwrap();
        let conn = db.connect().unwrap();
        Self { _db: db, conn }
    }

    pub async fn count(&self, sql: &str, params: impl libsql::params::IntoParams) -> i64 {
        let mut rows = self.conn.query(sql, params).await.unwrap();
        rows.next().await.unwrap().unwrap().get(0).unwrap()
    }

    /// How many stored chunks hold `term` (as a case-insensitive substring of their text).
    pub async fn chunks_holding(&self, term: &str) -> i64 {
        self.count(
            "SELECT count(*) FROM chunks WHERE instr(lower(text), lower(?1)) > 0",
            [term.to_owned()],
        )
        .await
    }

    /// The first column of the first row. (Rows are dropped before returning: a live row keeps
    /// its statement, and with it an old read snapshot, open.)
    pub async fn blob(&self, sql: &str) -> Vec<u8> {
        let mut rows = self.conn.query(sql, ()).await.unwrap();
        rows.next().await.unwrap().unwrap().get(0).unwrap()
    }

    pub async fn strings(&self, sql: &str) -> Vec<String> {
        let mut rows = self.conn.query(sql, ()).await.unwrap();
        let mut out = Vec::new();
        while let Some(row) = rows.next().await.unwrap() {
            out.push(row.get::<String>(0).unwrap());
        }
        out
    }
}

/// `HashEmbedder` that fails while `fail` is set.
#[derive(Debug)]
pub struct FlakyEmbedder {
    inner: HashEmbedder,
    pub fail: AtomicBool,
}

impl FlakyEmbedder {
    pub fn new() -> Self {
        Self {
            inner: HashEmbedder::new(DIMS),
            fail: AtomicBool::new(false),
        }
    }

    pub fn set_failing(&self, fail: bool) {
        self.fail.store(fail, Ordering::SeqCst);
    }
}

#[async_trait]
impl Embedder for FlakyEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(EmbedError::Endpoint("injected failure".into()));
        }
        self.inner.embed(texts).await
    }
}
