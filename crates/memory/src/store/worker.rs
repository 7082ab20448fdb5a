//! Dedicated database threads.
//!
//! libSQL's local API is `async` but blocks inside SQLite calls, so no statement runs on the
//! caller's async threads. Each [`DbThread`] owns one connection and a single-threaded tokio runtime
//! and runs jobs one at a time, in the order they were sent. The store has one writer thread (all
//! writes are serialized through it, so sequence numbers and index updates follow commit order) and
//! a few reader threads.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use libsql::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::error::MemoryError;
use crate::store::encryption::{EncryptionKey, check_readable, probe_file};
use crate::store::stmt_cache::{StmtCache, scoped};

type Job =
    Box<dyn FnOnce(Connection, Rc<libsql::Database>) -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// Where the connections go: a local file, a libSQL server, or an embedded replica of one (a
/// local file synced from the server; reads are local, writes go to the server).
#[derive(Clone)]
pub(crate) enum Target {
    /// A file; encrypted at rest when `key` is given.
    Local {
        path: PathBuf,
        key: Option<EncryptionKey>,
    },
    Remote {
        url: String,
        token: String,
    },
    /// A replica file (encrypted at rest when `key` is given) of the server's database.
    Replica {
        path: PathBuf,
        url: String,
        token: String,
        key: Option<EncryptionKey>,
    },
    /// A replica's file read through a plain read-only connection: a replica's reader threads.
    /// libsql writes the primary's frames into the file through an ordinary SQLite write
    /// transaction on the file's WAL (`BEGIN IMMEDIATE`, frames, commit) and keeps its
    /// replication position in the `-info` file, so other connections read it like any WAL
    /// database, without libsql parsing every statement to route it. Read-only: nothing but
    /// replication ever writes to a replica.
    ReplicaFile {
        path: PathBuf,
        key: Option<EncryptionKey>,
    },
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Local { path, key } => f
                .debug_struct("Local")
                .field("path", path)
                .field("encrypted", &key.is_some())
                .finish(),
            // The token never reaches a log.
            Target::Remote { url, .. } => f.debug_struct("Remote").field("url", url).finish(),
            Target::Replica { path, url, key, .. } => f
                .debug_struct("Replica")
                .field("path", path)
                .field("url", url)
                .field("encrypted", &key.is_some())
                .finish(),
            Target::ReplicaFile { path, key } => f
                .debug_struct("ReplicaFile")
                .field("path", path)
                .field("encrypted", &key.is_some())
                .finish(),
        }
    }
}

impl Target {
    pub(crate) fn is_local(&self) -> bool {
        matches!(self, Target::Local { .. })
    }

    /// Where a store's reader threads connect: a replica's readers read its file directly.
    pub(crate) fn for_readers(&self) -> Self {
        match self {
            Target::Replica { path, key, .. } => Target::ReplicaFile {
                path: path.clone(),
                key: key.clone(),
            },
            other => other.clone(),
        }
    }

    /// The target with `key` applied: a local file or a replica is encrypted at rest with it. A
    /// remote server keeps its own storage, so a key for one is refused rather than ignored.
    pub(crate) fn with_key(self, key: Option<EncryptionKey>) -> Result<Self, MemoryError> {
        match (self, key) {
            (target, None) => Ok(target),
            (Target::Local { path, .. }, key) => Ok(Target::Local { path, key }),
            (
                Target::Replica {
                    path, url, token, ..
                },
                key,
            ) => Ok(Target::Replica {
                path,
                url,
                token,
                key,
            }),
            (Target::ReplicaFile { path, .. }, key) => Ok(Target::ReplicaFile { path, key }),
            (Target::Remote { .. }, Some(_)) => Err(MemoryError::InvalidInput(
                "encryption at rest applies to local files and replicas; a remote memory server \
                 encrypts its own storage"
                    .to_owned(),
            )),
        }
    }

    fn key(&self) -> Option<&EncryptionKey> {
        match self {
            Target::Local { key, .. }
            | Target::Replica { key, .. }
            | Target::ReplicaFile { key, .. } => key.as_ref(),
            Target::Remote { .. } => None,
        }
    }

    /// Whether statements can fail because of a server (remote or replica).
    pub(crate) fn has_server(&self) -> bool {
        !self.is_local()
    }
}

/// How often an embedded replica pulls the primary's changes in the background (its own writes
/// are visible at once: libsql syncs after each of them).
const REPLICA_SYNC_INTERVAL: Duration = Duration::from_secs(2);

/// Waits this long for another connection's lock before giving up with "database is locked".
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub(crate) struct DbThread {
    jobs: mpsc::UnboundedSender<Job>,
    /// Closed once the thread has closed its connection and ended.
    ended: tokio::sync::watch::Receiver<()>,
}

impl DbThread {
    /// Starts a thread, opens its connection there and returns once the connection is ready.
    pub(crate) async fn spawn(name: &str, target: Target) -> Result<Self, MemoryError> {
        let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
        let (ready_tx, ready_rx) = oneshot::channel::<Result<(), MemoryError>>();
        let (ended_tx, ended) = tokio::sync::watch::channel(());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(MemoryError::io("starting the database thread"))?;
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                // Dropped last, after the connection and the database: then the thread has ended.
                let _ended = ended_tx;
                runtime.block_on(async move {
                    // `db` lives as long as the thread: the connection belongs to it.
                    let (db, conn) = match connect(&target).await {
                        Ok(opened) => {
                            let _ = ready_tx.send(Ok(()));
                            opened
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let db = Rc::new(db);
                    let remote = matches!(target, Target::Remote { .. });
                    // A local connection keeps the statements its jobs repeat (see `stmt_cache`).
                    let cache = Arc::new(StmtCache::default());
                    while let Some(job) = rx.recv().await {
                        // A remote connection is a server-side stream that expires after a few
                        // idle seconds (STREAM_EXPIRED): each job gets a new one, which costs no
                        // round trip (the stream opens with the job's first request).
                        match remote {
                            true => {
                                let job_conn = db.connect().unwrap_or_else(|_| conn.clone());
                                job(job_conn, Rc::clone(&db)).await;
                            }
                            false => scoped(&cache, job(conn.clone(), Rc::clone(&db))).await,
                        }
                    }
                });
            })
            .map_err(MemoryError::io("starting the database thread"))?;
        ready_rx.await.map_err(|_| MemoryError::WorkerStopped)??;
        Ok(Self { jobs, ended })
    }

    /// Something to wait on for the thread's end (see [`DbThread::wait_ended`]).
    pub(crate) fn ended(&self) -> tokio::sync::watch::Receiver<()> {
        self.ended.clone()
    }

    /// Waits until the thread behind `ended` has closed its connection and ended.
    pub(crate) async fn wait_ended(mut ended: tokio::sync::watch::Receiver<()>) {
        while ended.changed().await.is_ok() {}
    }

    /// Runs `job` on this thread's connection and returns its result.
    pub(crate) async fn run<T, F, Fut>(&self, job: F) -> Result<T, MemoryError>
    where
        F: FnOnce(Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, MemoryError>> + 'static,
        T: Send + 'static,
    {
        self.run_with_db(move |conn, _db| job(conn)).await
    }

    /// Like [`DbThread::run`], with the thread's database object too (an embedded replica's sync).
    pub(crate) async fn run_with_db<T, F, Fut>(&self, job: F) -> Result<T, MemoryError>
    where
        F: FnOnce(Connection, Rc<libsql::Database>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, MemoryError>> + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn, db| {
            Box::pin(async move {
                let _ = tx.send(job(conn, db).await);
            })
        });
        self.jobs
            .send(job)
            .map_err(|_| MemoryError::WorkerStopped)?;
        rx.await.map_err(|_| MemoryError::WorkerStopped)?
    }
}

/// Runs `SELECT 1` on the server: a remote database is opened lazily, so this first statement is
/// what finds a bad server or token (and names it).
async fn probe_server(url: &str, token: &str) -> Result<(), MemoryError> {
    let db = libsql::Builder::new_remote(url.to_owned(), token.to_owned())
        .build()
        .await
        .map_err(MemoryError::db("opening the database"))
        .map_err(crate::store::remote::explain)?;
    let conn = db
        .connect()
        .map_err(MemoryError::db("connecting to the database"))?;
    conn.query("SELECT 1", ())
        .await
        .map_err(MemoryError::db("probing the memory server"))
        .map_err(crate::store::remote::explain)?;
    Ok(())
}

/// Checks the target once, before a store opens its first connection: a file that does not fit
/// the key (or its absence) and an unreachable or refusing server are named before anything
/// writes. Never called while a connection to the file is open in this process: reading the file's
/// header through a descriptor of our own and closing it would drop every POSIX lock this
/// process's SQLite connections hold on it, and another process could then checkpoint and delete
/// the WAL under them (stale and torn reads).
pub(crate) async fn probe(target: &Target) -> Result<(), MemoryError> {
    match target {
        Target::Local { path, key } => probe_file(path, key.as_ref()).await,
        Target::Remote { url, token } => probe_server(url, token).await,
        Target::Replica {
            path,
            url,
            token,
            key,
        } => {
            probe_server(url, token).await?;
            probe_file(path, key.as_ref()).await
        }
        // Only ever opened after its replica, which probed the file.
        Target::ReplicaFile { .. } => Ok(()),
    }
}

pub(crate) async fn connect(
    target: &Target,
) -> Result<(libsql::Database, Connection), MemoryError> {
    let db = match target {
        Target::Local { path, key } => {
            let mut builder = libsql::Builder::new_local(path);
            if let Some(key) = key {
                builder = builder.encryption_config(key.config());
            }
            builder.build().await
        }
        Target::Remote { url, token } => {
            libsql::Builder::new_remote(url.clone(), token.clone())
                .build()
                .await
        }
        Target::Replica {
            path,
            url,
            token,
            key,
        } => {
            let mut builder = libsql::Builder::new_remote_replica(path, url.clone(), token.clone())
                .read_your_writes(true)
                .sync_interval(REPLICA_SYNC_INTERVAL);
            if let Some(key) = key {
                builder = builder.encryption_config(key.config());
            }
            builder.build().await
        }
        Target::ReplicaFile { path, key } => {
            let mut builder =
                libsql::Builder::new_local(path).flags(libsql::OpenFlags::SQLITE_OPEN_READ_ONLY);
            if let Some(key) = key {
                builder = builder.encryption_config(key.config());
            }
            builder.build().await
        }
    }
    .map_err(MemoryError::db("opening the database"))
    .map_err(crate::store::remote::explain)?;
    if matches!(target, Target::Replica { .. }) {
        // The first pull brings the replica up to date before anything reads it.
        db.sync()
            .await
            .map_err(MemoryError::db("syncing the memory replica"))
            .map_err(crate::store::remote::explain)?;
    }
    let conn = db
        .connect()
        .map_err(MemoryError::db("connecting to the database"))?;
    if let Target::ReplicaFile { .. } = target {
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(MemoryError::db("configuring the connection"))?;
        check_readable(&conn, target.key().is_some()).await?;
        keep_temp_in_memory(&conn).await?;
    }
    if target.is_local() {
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(MemoryError::db("configuring the connection"))?;
        // The first statement is where a wrong, missing or unexpected key shows.
        check_readable(&conn, target.key().is_some()).await?;
        pragma(
            &conn,
            "PRAGMA journal_mode=WAL",
            "enabling write-ahead logging",
        )
        .await?;
        // NORMAL is durable across application crashes in WAL mode; only a power loss can drop
        // the last commits. It keeps a save well under a millisecond of fsync wait.
        conn.execute("PRAGMA synchronous=NORMAL", ())
            .await
            .map_err(MemoryError::db("configuring the connection"))?;
        conn.execute("PRAGMA foreign_keys=ON", ())
            .await
            .map_err(MemoryError::db("configuring the connection"))?;
        keep_temp_in_memory(&conn).await?;
        if target.key().is_none() {
            read_mapped(&conn).await?;
        }
    }
    Ok((db, conn))
}

/// SQLite puts statement journals and large sorts in `etilqs_*` files under /var/tmp or /tmp
/// once a store grows; the sandbox (Landlock, or the container) allows neither, so every later
/// write would fail. Keep them in memory, on every connection, every surface.
async fn keep_temp_in_memory(conn: &Connection) -> Result<(), MemoryError> {
    conn.execute("PRAGMA temp_store=MEMORY", ())
        .await
        .map_err(MemoryError::db("configuring the connection"))?;
    Ok(())
}

/// Bytes of an unencrypted database file read through a memory map rather than `read` calls
/// into SQLite's page cache: a search's reads of its hits (chunks, events, a few pages each, at
/// random in a file of hundreds of megabytes) no longer copy every page from the kernel's cache
/// (docs/benchmarks.md, *Reads through a map*). An encrypted file is read as before (its pages
/// are decrypted into the page cache).
const MMAP_SIZE: i64 = 1 << 30;

async fn read_mapped(conn: &Connection) -> Result<(), MemoryError> {
    let sql = format!("PRAGMA mmap_size={MMAP_SIZE}");
    pragma(conn, &sql, "configuring the connection").await
}

/// Runs a pragma that may answer with rows (`journal_mode`, `mmap_size`, `wal_checkpoint`…:
/// such a statement runs as a query), reading them to the end.
pub(crate) async fn pragma(
    conn: &Connection,
    sql: &str,
    doing: &'static str,
) -> Result<(), MemoryError> {
    let mut rows = conn.query(sql, ()).await.map_err(MemoryError::db(doing))?;
    while rows.next().await.map_err(MemoryError::db(doing))?.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value `PRAGMA <name>` answers on a fresh local, unencrypted store's connection.
    async fn pragma_value(name: &'static str) -> Option<i64> {
        let dir = tempfile::tempdir().unwrap();
        let thread = DbThread::spawn(
            "test-db",
            Target::Local {
                path: dir.path().join("m.db"),
                key: None,
            },
        )
        .await
        .unwrap();
        thread
            .run(move |conn| async move {
                let mut rows = conn
                    .query(&format!("PRAGMA {name}"), ())
                    .await
                    .map_err(MemoryError::db("reading a pragma"))?;
                let row = rows
                    .next()
                    .await
                    .map_err(MemoryError::db("reading a pragma"))?;
                Ok(row.and_then(|r| r.get::<i64>(0).ok()))
            })
            .await
            .unwrap()
    }

    /// SQLite's temporary files stay in memory on every local connection: a sandbox gives
    /// `oxydra-vm` no temporary directory (see `connect`).
    #[tokio::test]
    async fn local_connections_keep_temporary_files_in_memory() {
        // 2 = MEMORY.
        assert_eq!(pragma_value("temp_store").await, Some(2));
    }

    /// An unencrypted local file is read through a map of up to `MMAP_SIZE` bytes.
    #[tokio::test]
    async fn a_local_file_is_read_through_a_map() {
        assert_eq!(pragma_value("mmap_size").await, Some(MMAP_SIZE));
    }
}
