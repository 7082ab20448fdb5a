//! Shared fixtures: a store on a real file in a temp dir, a raw connection for SQL checks, and an
//! embedder that can be told to fail.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use memory::embedding::EmbedError;
use memory::{Embedder, HashEmbedder, MemoryStore};
use types::{SessionId, UserId};

pub const DIMS: usize = 64;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub store: MemoryStore,
}

pub async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let store = MemoryStore::open_local(&path, Arc::new(HashEmbedder::new(DIMS)))
        .await
        .unwrap();
    Fixture { dir, path, store }
}

pub fn user(name: &str) -> UserId {
    UserId::parse(name).unwrap()
}

pub fn session(name: &str) -> SessionId {
    SessionId::parse(name).unwrap()
}

/// A direct connection to the database file, for checks the store's API does not offer.
pub struct Raw {
    _db: libsql::Database,
    pub conn: libsql::Connection,
}

impl Raw {
    pub async fn open(path: &Path) -> Self {
        let db = libsql::Builder::new_local(path).build().await.unwrap();
        let conn = db.connect().unwrap();
        Self { _db: db, conn }
    }

    pub async fn count(&self, sql: &str, params: impl libsql::params::IntoParams) -> i64 {
        let mut rows = self.conn.query(sql, params).await.unwrap();
        rows.next().await.unwrap().unwrap().get(0).unwrap()
    }

    /// How many chunks FTS finds for a (quoted) term.
    pub async fn fts_matches(&self, term: &str) -> i64 {
        self.count(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?1",
            [format!("\"{term}\"")],
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
