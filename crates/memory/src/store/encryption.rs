//! Encryption at rest for a local database file or an embedded replica: SQLite3 Multiple
//! Ciphers through libsql's `encryption` feature, AES-256-CBC, with a per-user key the caller
//! supplies (the runner creates it outside every workspace and hands it over in the bootstrap).
//!
//! libsql applies the key lazily: a wrong key (or a key for a plaintext file, or no key for an
//! encrypted one) only fails at the first statement. [`probe_file`] finds the mismatch before any
//! read-write connection exists (the file's header, then a read-only connection with the key: a
//! read-write connection with a wrong key that happened to close last would rebuild the WAL index
//! or checkpoint with that key), and [`check_readable`] runs a statement right after opening; both
//! turn the failure into one clear [`MemoryError::Unreadable`].
//! [`change_key`] encrypts a plaintext file, decrypts an encrypted one or replaces its key, in
//! place and in one transaction (SQLite's rekey), so a failure leaves the file as it was.

use std::path::Path;

use libsql::{Cipher, Connection, EncryptionConfig};

use crate::error::MemoryError;

/// Characters a key may hold: it is also written into a `PRAGMA` when the key changes, so it is
/// kept to characters that need no quoting (the runner's keys are 64 hex digits).
fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '-' | '.')
}

/// Shortest key accepted (a key is a secret, not a password to remember).
pub const MIN_KEY_CHARS: usize = 32;
/// Longest key accepted.
pub const MAX_KEY_CHARS: usize = 256;

/// A database encryption key. Its text never reaches a log or a `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct EncryptionKey(String);

impl EncryptionKey {
    /// The key in `text` (surrounding whitespace, such as a key file's newline, is ignored):
    /// 32 to 256 characters of letters, digits and `+/=_-.`.
    pub fn parse(text: &str) -> Result<Self, MemoryError> {
        let key = text.trim();
        let length_ok = (MIN_KEY_CHARS..=MAX_KEY_CHARS).contains(&key.len());
        if length_ok && key.chars().all(key_char) {
            Ok(Self(key.to_owned()))
        } else {
            Err(MemoryError::InvalidInput(format!(
                "a memory encryption key must be {MIN_KEY_CHARS} to {MAX_KEY_CHARS} characters of \
                 letters, digits and +/=_-. (e.g. 64 hex digits)"
            )))
        }
    }

    /// The key as its text (for writing the key file).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The libsql configuration that opens a file encrypted with this key.
    pub fn config(&self) -> EncryptionConfig {
        EncryptionConfig::new(
            Cipher::Aes256Cbc,
            bytes::Bytes::copy_from_slice(self.0.as_bytes()),
        )
    }
}

impl std::fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EncryptionKey(..)")
    }
}

/// Reads the schema once: the first statement on a connection is where libsql finds out whether
/// the key fits the file. `encrypted` says whether a key was given (it shapes the message).
pub(crate) async fn check_readable(conn: &Connection, encrypted: bool) -> Result<(), MemoryError> {
    let result = async {
        let mut rows = conn.query("SELECT count(*) FROM sqlite_master", ()).await?;
        while rows.next().await?.is_some() {}
        Ok::<(), libsql::Error>(())
    }
    .await;
    match result {
        Ok(()) => Ok(()),
        Err(e) if not_a_database(&e) => Err(MemoryError::Unreadable {
            with_key: encrypted,
            source: Some(e),
        }),
        Err(e) => Err(MemoryError::db("reading the memory database")(e)),
    }
}

/// The header every unencrypted SQLite database starts with.
const PLAIN_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Whether the database at `path` is unencrypted (its header readable): `None` for a file that
/// does not exist yet or is shorter than a header (a new database).
pub fn is_plaintext(path: &Path) -> Option<bool> {
    use std::io::Read;
    let mut header = [0u8; 16];
    let mut file = std::fs::File::open(path).ok()?;
    file.read_exact(&mut header).ok()?;
    Some(&header == PLAIN_HEADER)
}

/// Checks that the existing file at `path` fits `key` (or its absence) without opening it for
/// writing; a new file fits anything.
pub(crate) async fn probe_file(
    path: &Path,
    key: Option<&EncryptionKey>,
) -> Result<(), MemoryError> {
    let unreadable = |with_key: bool| MemoryError::Unreadable {
        with_key,
        source: None,
    };
    match (is_plaintext(path), key) {
        (None, _) | (Some(true), None) => Ok(()),
        (Some(true), Some(_)) => Err(unreadable(true)),
        (Some(false), None) => Err(unreadable(false)),
        (Some(false), Some(key)) => {
            let opened = libsql::Builder::new_local(path)
                .flags(libsql::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .encryption_config(key.config())
                .build()
                .await;
            // A read-only open can fail for reasons of its own (no WAL index yet); the
            // read-write connection's own check then decides.
            let Ok(db) = opened else { return Ok(()) };
            let Ok(conn) = connect(&db) else {
                return Ok(());
            };
            match check_readable(&conn, true).await {
                Err(e @ MemoryError::Unreadable { .. }) => Err(e),
                _ => Ok(()),
            }
        }
    }
}

fn not_a_database(e: &libsql::Error) -> bool {
    let text = e.to_string().to_ascii_lowercase();
    text.contains("not a database") || text.contains("notadb") || text.contains("encrypted")
}

/// Changes the encryption of the closed database file at `path` from `from` to `to` (`None` is
/// plaintext): encrypts, decrypts or re-keys it in place. The file must not be open anywhere
/// else (no agent running on it). Every note, session and event is kept; the vectors and the
/// full-text index move with the pages.
pub async fn change_key(
    path: &Path,
    from: Option<&EncryptionKey>,
    to: Option<&EncryptionKey>,
) -> Result<(), MemoryError> {
    if !path.is_file() {
        return Err(MemoryError::InvalidInput(
            "there is no memory database file to re-key yet".to_owned(),
        ));
    }
    probe_file(path, from).await?;
    let mut builder = libsql::Builder::new_local(path);
    if let Some(key) = from {
        builder = builder.encryption_config(key.config());
    }
    let db = builder
        .build()
        .await
        .map_err(MemoryError::db("opening the database"))?;
    let conn = connect(&db)?;
    check_readable(&conn, from.is_some()).await?;
    // SQLite3 Multiple Ciphers re-keys only outside WAL mode: fold the WAL in and leave it for
    // the rekey; the store turns WAL back on at its next open.
    pragma(&conn, "PRAGMA wal_checkpoint(TRUNCATE)").await?;
    pragma(&conn, "PRAGMA journal_mode=DELETE").await?;
    if from.is_none() {
        // A plaintext connection has the library's default cipher: name the store's.
        pragma(&conn, "PRAGMA cipher='aes256cbc'").await?;
    }
    let text = to.map_or("", |k| k.expose());
    pragma(&conn, &format!("PRAGMA rekey='{text}'")).await?;
    drop(conn);
    drop(db);
    // The file must now open with the new key (or none) and not with the old one.
    let mut check = libsql::Builder::new_local(path);
    if let Some(key) = to {
        check = check.encryption_config(key.config());
    }
    let db = check
        .build()
        .await
        .map_err(MemoryError::db("opening the database"))?;
    let conn = connect(&db)?;
    check_readable(&conn, to.is_some()).await?;
    pragma(&conn, "PRAGMA journal_mode=WAL").await
}

/// A connection that waits for other connections' locks like the store's own.
fn connect(db: &libsql::Database) -> Result<Connection, MemoryError> {
    let conn = db
        .connect()
        .map_err(MemoryError::db("connecting to the database"))?;
    conn.busy_timeout(crate::store::worker::BUSY_TIMEOUT)
        .map_err(MemoryError::db("configuring the connection"))?;
    Ok(conn)
}

/// Runs a pragma that may answer with rows.
async fn pragma(conn: &Connection, sql: &str) -> Result<(), MemoryError> {
    super::worker::pragma(conn, sql, "changing the encryption key").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_and_never_printed() {
        let hex = "0123456789abcdef".repeat(4);
        let key = EncryptionKey::parse(&format!("{hex}\n")).unwrap();
        assert_eq!(key.expose(), hex);
        assert_eq!(format!("{key:?}"), "EncryptionKey(..)");
        for bad in [
            "",
            "short",
            &"a".repeat(300),
            &format!("{}'", "a".repeat(40)),
        ] {
            assert!(EncryptionKey::parse(bad).is_err(), "{bad}");
        }
    }
}
