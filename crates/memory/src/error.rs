//! The crate's one error type.
//!
//! `Display` texts are short and safe to show a model: they never contain SQL, host paths or
//! credentials. The underlying cause (libSQL, I/O, JSON) is kept as the `#[source]` for logs.

use types::{NoteId, SessionId};

use memory_index::embedding::EmbedError;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// A statement failed; `context` names the operation, never the SQL.
    #[error("memory database error while {context}")]
    Database {
        context: &'static str,
        #[source]
        source: libsql::Error,
    },
    /// A file operation on the database or its directory failed; the path stays in the source.
    #[error("memory storage file operation failed while {context}")]
    Io {
        context: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("embedding failed: {source}")]
    Embedding {
        #[source]
        source: EmbedError,
    },
    #[error("note {0} was not found in this user's memory")]
    NoteNotFound(NoteId),
    /// A checked update named a version that is not the note's current one (the note changed, or
    /// the caller was never shown its whole text); nothing was changed.
    #[error("note {0} is not at the version given: read its current text first")]
    VersionMismatch(NoteId),
    #[error("session {0} was not found")]
    SessionNotFound(SessionId),
    #[error("session {0} belongs to another user")]
    SessionOwnedByOtherUser(SessionId),
    #[error("session {0} has run out of event sequence numbers")]
    SequenceOverflow(SessionId),
    /// Remote mode names an environment variable for the token, but it is not set.
    #[error("remote memory needs an auth token: set the environment variable {var}")]
    MissingAuthToken { var: String },
    /// The remote memory server cannot be used as configured; the text says why in one line and
    /// never contains the token.
    #[error("remote memory: {problem}")]
    Remote {
        problem: RemoteProblem,
        #[source]
        source: Option<libsql::Error>,
    },
    /// Bad input from a caller (empty note, note too long). The message says what to change.
    #[error("{0}")]
    InvalidInput(String),
    /// Stored data could not be decoded (a row written by something else, or damaged).
    #[error("stored memory data is malformed ({what})")]
    Corrupt {
        what: &'static str,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The local file (or replica) cannot be read with the key it was opened with: a wrong key,
    /// a key for a file that is not encrypted, or no key for one that is.
    #[error("{}", unreadable_text(*with_key))]
    Unreadable {
        with_key: bool,
        #[source]
        source: Option<libsql::Error>,
    },
    /// The database thread stopped (the store is shutting down or it panicked).
    #[error("the memory database worker is not running")]
    WorkerStopped,
}

/// Why a remote memory server could not be used (found when opening, by a probe statement).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RemoteProblem {
    #[error("remote_url must be an http://, https:// or libsql:// URL with a host")]
    BadUrl,
    #[error("the server cannot be reached (check remote_url and that the server is running)")]
    Unreachable,
    #[error("the server rejected the auth token (wrong, expired, or made for another server)")]
    Unauthorized,
    #[error("the auth token only allows reading; memory needs a read-write token")]
    ReadOnly,
}

impl MemoryError {
    /// The thing asked for does not exist (a note or a session); nothing was changed.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            MemoryError::NoteNotFound(_) | MemoryError::SessionNotFound(_)
        )
    }

    /// The caller's input was rejected; retrying the same call will fail again.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            MemoryError::InvalidInput(_)
                | MemoryError::VersionMismatch(_)
                | MemoryError::SessionOwnedByOtherUser(_)
                | MemoryError::NoteNotFound(_)
        )
    }

    /// Worth retrying later: a busy database or a flaky embedding endpoint.
    pub fn is_retryable(&self) -> bool {
        match self {
            MemoryError::Embedding { source } => source.is_retryable(),
            MemoryError::Database { source, .. } => {
                let text = source.to_string();
                // A libSQL server sometimes interrupts a write transaction (SQLITE_INTERRUPT);
                // it was rolled back, and the same call usually succeeds next time.
                text.contains("database is locked")
                    || text.contains("busy")
                    || text.contains("SQLITE_INTERRUPT")
            }
            _ => false,
        }
    }

    /// A libSQL server ended the write transaction this failed in and rolled it back (its
    /// transaction timeout, its statement interrupted, or its stream expired after idle
    /// seconds): nothing of it was written.
    pub(crate) fn is_ended_by_server(&self) -> bool {
        let MemoryError::Database { source, .. } = self else {
            return false;
        };
        let text = format!("{source} {source:?}").to_ascii_lowercase();
        text.contains("transaction timed out")
            || text.contains("transaction_timeout")
            || text.contains("sqlite_interrupt")
            || text.contains("interrupted")
            || text.contains("stream_expired")
    }

    pub(crate) fn db(context: &'static str) -> impl FnOnce(libsql::Error) -> MemoryError {
        move |source| MemoryError::Database { context, source }
    }

    pub(crate) fn io(context: &'static str) -> impl FnOnce(std::io::Error) -> MemoryError {
        move |source| MemoryError::Io { context, source }
    }

    pub(crate) fn corrupt<E>(what: &'static str) -> impl FnOnce(E) -> MemoryError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        move |e| MemoryError::Corrupt {
            what,
            source: Some(Box::new(e)),
        }
    }
}

fn unreadable_text(with_key: bool) -> &'static str {
    match with_key {
        true => {
            "the memory database cannot be read with this encryption key (a wrong key, or a file \
             that is not encrypted with it: `runner memory rekey` changes a file's key)"
        }
        false => {
            "the memory database cannot be read: it is encrypted (open it with its key, e.g. \
             through the runner) or it is not a database"
        }
    }
}

impl From<EmbedError> for MemoryError {
    fn from(source: EmbedError) -> Self {
        MemoryError::Embedding { source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(source: libsql::Error) -> MemoryError {
        MemoryError::Database {
            context: "keying a note",
            source,
        }
    }

    #[test]
    fn only_a_transaction_the_server_ended_counts_as_ended_by_server() {
        let hrana = |text: &str| libsql::Error::Hrana(text.to_owned().into());
        for ended in [
            failed(hrana(
                "stream error: Transaction timed out (TRANSACTION_TIMEOUT)",
            )),
            failed(hrana("SQLite error: interrupted")),
            failed(hrana(
                r#"status=400 Bad Request, body={"message":"The stream has expired due to inactivity","code":"STREAM_EXPIRED"}"#,
            )),
            failed(libsql::Error::RemoteSqliteFailure(
                9,
                9,
                "interrupted".into(),
            )),
        ] {
            assert!(ended.is_ended_by_server(), "{ended:?}");
        }
        for other in [
            failed(hrana("UNIQUE constraint failed: notes.note_id")),
            failed(hrana("status=401 Unauthorized")),
            failed(libsql::Error::SqliteFailure(5, "database is locked".into())),
            MemoryError::InvalidInput("interrupted".into()),
        ] {
            assert!(!other.is_ended_by_server(), "{other:?}");
        }
    }
}
