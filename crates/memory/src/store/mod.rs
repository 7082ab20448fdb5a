//! The database: where it is and how it is opened (local file, encrypted file, remote server,
//! embedded replica), the threads that own its connections, migrations, and the statements shared
//! by local and remote writes. Nothing here knows what a note or a search is.

pub(crate) mod batch_read;
pub(crate) mod encryption;
pub(crate) mod inline_read;
pub(crate) mod migrations;
pub(crate) mod placement;
pub(crate) mod remote;
pub(crate) mod rows;
pub(crate) mod stmt;
pub(crate) mod stmt_cache;
pub(crate) mod worker;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use libsql::{Connection, Transaction, TransactionBehavior};

use crate::error::MemoryError;
use batch_read::Batching;
use inline_read::InlineReader;
use migrations::migrate;
use worker::{DbThread, Target};

/// How many times a write runs when the server keeps ending its transaction (see [`Db::write`]).
const SERVER_ENDED_ATTEMPTS: u32 = 3;

/// Reader threads for a local file (WAL lets them read while the writer writes).
const LOCAL_READERS: usize = 2;

/// One open database: a writer thread, reader threads and (for a local file) an inline reader.
#[derive(Debug)]
pub(crate) struct Db {
    writer: DbThread,
    readers: Vec<DbThread>,
    /// A local file's connection for a search's last small read (see [`inline_read`]).
    inline_reader: Option<InlineReader>,
    next_reader: AtomicUsize,
    /// Set for a remote server: its reader jobs batch their reads (see [`batch_read`]).
    batching: Batching,
    target: Target,
}

impl Db {
    /// Opens `target` and brings its schema up to date.
    pub(crate) async fn open(target: Target) -> Result<Self, MemoryError> {
        worker::probe(&target).await?;
        let writer = DbThread::spawn("memory-writer", target.clone()).await?;
        // The migrations are also the write probe: a read-only token fails here, clearly.
        writer
            .run(|conn| async move { migrate(&conn).await })
            .await
            .map_err(|e| match target.has_server() {
                true => remote::explain(e),
                false => e,
            })?;
        // A replica's readers read its file (synced by the writer's connection, which owns the
        // replication) through plain read-only connections, as a local store's do.
        let reader_count = match target {
            Target::Local { .. } | Target::Replica { .. } | Target::ReplicaFile { .. } => {
                LOCAL_READERS
            }
            Target::Remote { .. } => 1,
        };
        let mut readers = Vec::with_capacity(reader_count);
        for i in 0..reader_count {
            let name = format!("memory-reader-{i}");
            readers.push(DbThread::spawn(&name, target.for_readers()).await?);
        }
        let inline_reader = InlineReader::open(&target.for_readers()).await?;
        let batching = match target {
            Target::Remote { .. } => Batching::remote(),
            _ => Batching::default(),
        };
        Ok(Self {
            writer,
            readers,
            inline_reader,
            next_reader: AtomicUsize::new(0),
            batching,
            target,
        })
    }

    /// Whether every request is a round trip to a server (no local file at all).
    pub(crate) fn is_remote(&self) -> bool {
        matches!(self.target, Target::Remote { .. })
    }

    /// Whether a save goes to the server as one transactional batch (see
    /// [`crate::notes::one_trip`]): a remote store's, and an embedded replica's, whose connection
    /// forwards the batch to the primary as one program and syncs the replica after it, so the
    /// save is readable at once.
    pub(crate) fn saves_in_one_batch(&self) -> bool {
        matches!(self.target, Target::Remote { .. } | Target::Replica { .. })
    }

    /// Whether a reader job sends its reads as one batch (see [`batch_read::Reads`]).
    pub(crate) fn batching(&self) -> Batching {
        self.batching.clone()
    }

    /// What [`Db::wait_ended`] waits for: the end of every database thread.
    pub(crate) fn ended(&self) -> Vec<tokio::sync::watch::Receiver<()>> {
        std::iter::once(&self.writer)
            .chain(self.readers.iter())
            .map(DbThread::ended)
            .collect()
    }

    pub(crate) async fn wait_ended(ended: Vec<tokio::sync::watch::Receiver<()>>) {
        for thread in ended {
            DbThread::wait_ended(thread).await;
        }
    }

    /// Runs a job on the writer thread (every write goes through here, one at a time).
    ///
    /// A libSQL server ends a write transaction held open past its transaction timeout (5 s by
    /// default) once another connection waits for the write lock, and rolls it back: the job's
    /// next statement fails with `Transaction timed out`, or the statement running then with
    /// `interrupted`; a stream left idle too long between two statements expires
    /// (`STREAM_EXPIRED`) and its transaction with it. Nothing of the job was written, so the job
    /// runs again, on a new stream,
    /// up to [`SERVER_ENDED_ATTEMPTS`] times; a slow machine or network then costs time, not
    /// the write.
    pub(crate) async fn write<T, F, Fut>(&self, job: F) -> Result<T, MemoryError>
    where
        F: FnOnce(Connection) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = Result<T, MemoryError>> + 'static,
        T: Send + 'static,
    {
        let mut attempt = 1;
        let outcome = loop {
            let outcome = self.writer.run(job.clone()).await;
            match outcome {
                Err(e)
                    if self.target.has_server()
                        && e.is_ended_by_server()
                        && attempt < SERVER_ENDED_ATTEMPTS =>
                {
                    tracing::warn!(error = %e, attempt, "the memory server ended a write transaction; running the write again");
                    attempt += 1;
                }
                outcome => break outcome,
            }
        };
        // A server that went away (or revoked the token) is named as such, not as a failed
        // statement; nothing was committed.
        match self.target.has_server() {
            true => outcome.map_err(remote::explain),
            false => outcome,
        }
    }

    /// An embedded replica pulls the primary's latest changes now. No-op otherwise.
    pub(crate) async fn sync(&self) -> Result<(), MemoryError> {
        if !matches!(self.target, Target::Replica { .. }) {
            return Ok(());
        }
        self.writer
            .run_with_db(|_conn, db| async move {
                db.sync()
                    .await
                    .map_err(MemoryError::db("syncing the memory replica"))?;
                Ok(())
            })
            .await
            .map_err(remote::explain)
    }

    /// Runs a small read-only job on the caller's thread when the store is a local file and its
    /// inline connection is free, else on a reader thread.
    pub(crate) async fn read_small<T, F, Fut>(&self, job: F) -> Result<T, MemoryError>
    where
        F: FnOnce(Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, MemoryError>> + 'static,
        T: Send + 'static,
    {
        let job = match &self.inline_reader {
            Some(inline) => match inline.try_run(job).await {
                Ok(outcome) => return outcome,
                Err(job) => job,
            },
            None => job,
        };
        self.read(job).await
    }

    /// Runs a read-only job on one of the reader threads.
    pub(crate) async fn read<T, F, Fut>(&self, job: F) -> Result<T, MemoryError>
    where
        F: FnOnce(Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, MemoryError>> + 'static,
        T: Send + 'static,
    {
        let readers = &self.readers;
        let i = self.next_reader.fetch_add(1, Ordering::Relaxed) % readers.len().max(1);
        match readers.get(i) {
            Some(reader) => reader.run(job).await,
            None => self.writer.run(job).await,
        }
    }

    /// Folds the WAL back into the database file (after bulk loads). No-op for a remote server.
    pub(crate) async fn checkpoint(&self) -> Result<(), MemoryError> {
        if !self.target.is_local() {
            return Ok(());
        }
        self.write(|conn| async move {
            worker::pragma(&conn, "PRAGMA wal_checkpoint(TRUNCATE)", "checkpointing").await
        })
        .await
    }
}

/// Starts a write transaction that takes the write lock at once (no upgrade deadlocks).
pub(crate) async fn begin(conn: &Connection) -> Result<Transaction, MemoryError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .await
        .map_err(MemoryError::db("starting a transaction"))
}

/// Commits `tx` with a `COMMIT` statement whose result is read, not libsql's
/// `Transaction::commit`: on a server, libsql 0.10 decides from its own record of the stream
/// whether a transaction is open, and when the server had rolled it back unseen (a statement
/// cancelled after the client stopped reading its result, see [`rows`]), `commit` returns `Ok`
/// without sending anything. A `COMMIT` statement always reaches the server, which answers with
/// an error when there is no transaction to commit (`tests/remote_commits.rs`). On a file and on
/// a replica it is what libsql runs anyway.
pub(crate) async fn commit(tx: Transaction, ctx: &'static str) -> Result<(), MemoryError> {
    tx.execute("COMMIT", ())
        .await
        .map_err(MemoryError::db(ctx))?;
    Ok(())
}

/// Commits on success (through [`commit`]); rolls back on failure and returns the failure.
pub(crate) async fn finish<T>(
    tx: Transaction,
    outcome: Result<T, MemoryError>,
) -> Result<T, MemoryError> {
    match outcome {
        Ok(value) => {
            commit(tx, "committing").await?;
            Ok(value)
        }
        Err(e) => {
            if let Err(rollback) = tx.rollback().await {
                tracing::error!(error = %rollback, "rollback failed");
            }
            Err(e)
        }
    }
}
