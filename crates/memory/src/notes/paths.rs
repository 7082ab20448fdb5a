//! Note paths: the `/memories` tree of the `memory` tool, kept as notes of the user's namespace.
//!
//! A file is a note with a path (column `notes.path`, unique per namespace): its text is chunked,
//! embedded and indexed like any note's, so `memory_search` finds it. Directories are not stored:
//! a directory exists while some file lies beneath it. Every write here (put, move, delete) is one
//! transaction; a put that names the edit token of the text it read fails with [`PathPut::Changed`] when another
//! writer got there first, so concurrent edits never lose an update.
//!
//! Paths reaching this module are canonical (`/memories` or `/memories/a/b`, no empty, `.` or
//! `..` segments); the tool validates what the model sends before calling.

use libsql::Connection;
use types::{AuditTag, NoteId, SessionId, UserId};

use crate::error::MemoryError;
use crate::notes::bounds::{MAX_NOTE_BYTES, TooLong};
use crate::notes::indexing::prepare;
use crate::notes::lifecycle::{entomb, keep_version};
use crate::notes::note::{LoadedNote, NoteMetadata, NoteWrite, insert_note, note_from_row};
use crate::notes::provenance::after_rewrite;
use crate::notes::receipts::edit_token;
use crate::rooms::Files;
use crate::store::rows::query_first;
use crate::store::{begin, finish};
use crate::time::{now_text, to_text};
use memory_index::vector_index::IndexChange;

/// The root of every file path.
pub const MEMORIES_ROOT: &str = "/memories";

/// One file of the tree, without its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    pub path: String,
    pub note_id: NoteId,
    /// Size of the text in bytes of UTF-8.
    pub bytes: u64,
}

/// One file with its text and that text's edit token (see [`edit_token`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFile {
    pub path: String,
    pub note_id: NoteId,
    pub content: String,
    pub edit_token: String,
}

/// What a [`Files::put_file`](crate::Files::put_file) may find before it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathExpect {
    /// Nothing is at the path yet (a new file).
    Absent,
    /// A file is there, whatever its text.
    Present,
    /// A file is there with this text, named by its edit token (a read-modify-write).
    EditToken(String),
}

/// How a [`Files::put_file`](crate::Files::put_file) ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathPut {
    Written(PathFile),
    /// A file or a directory is already at the path (with [`PathExpect::Absent`]).
    Exists,
    /// No file is at the path.
    Missing,
    /// The file's text is no longer the one the caller read.
    Changed,
    /// This ancestor of the path is a file, so the path cannot be a file.
    UnderFile(String),
}

/// How a [`Files::move_path`](crate::Files::move_path) ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathMove {
    /// This many files were moved.
    Moved(usize),
    Missing,
    /// A file or directory is already at the destination.
    Exists,
    /// This ancestor of the destination is a file.
    UnderFile(String),
}

/// Bounds of the files strictly below directory `dir` in byte order: `[dir/, dir0)`.
fn below(dir: &str) -> (String, String) {
    let dir = dir.trim_end_matches('/');
    (format!("{dir}/"), format!("{dir}0"))
}

/// The ancestors of `path` below the root, nearest last (`/memories/a/b/c` → `/memories/a`,
/// `/memories/a/b`).
fn ancestors(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut end = MEMORIES_ROOT.len();
    while let Some(i) = path.get(end + 1..).and_then(|rest| rest.find('/')) {
        end += 1 + i;
        if let Some(a) = path.get(..end) {
            out.push(a);
        }
    }
    out
}

fn check_canonical(path: &str) -> Result<(), MemoryError> {
    let rest = path.strip_prefix(MEMORIES_ROOT);
    let ok = match rest {
        Some("") => true,
        Some(rest) => {
            rest.starts_with('/')
                && rest[1..]
                    .split('/')
                    .all(|s| !s.is_empty() && s != "." && s != ".." && !s.contains('\0'))
        }
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(MemoryError::InvalidInput(
            "a file path must look like /memories/notes.md".into(),
        ))
    }
}

/// Why nothing new may be put at `path`: a file or directory is there, or an ancestor is a file.
async fn blocked_new(
    conn: &Connection,
    session: &SessionId,
    path: &str,
) -> Result<Option<PathPut>, MemoryError> {
    if path == MEMORIES_ROOT || !tree(conn, session, path).await?.is_empty() {
        return Ok(Some(PathPut::Exists));
    }
    for ancestor in ancestors(path) {
        if file_at(conn, session, ancestor).await?.is_some() {
            return Ok(Some(PathPut::UnderFile(ancestor.to_owned())));
        }
    }
    Ok(None)
}

async fn tree(
    conn: &Connection,
    session: &SessionId,
    dir: &str,
) -> Result<Vec<PathEntry>, MemoryError> {
    let ctx = "listing memory files";
    let (low, high) = below(dir);
    let mut rows = conn
        .query(
            "SELECT path, note_id, length(CAST(content AS BLOB)) FROM notes
             WHERE session_id = ?1 AND path IS NOT NULL
               AND (path = ?2 OR (path >= ?3 AND path < ?4))
             ORDER BY path",
            [session.as_str(), dir, low.as_str(), high.as_str()],
        )
        .await
        .map_err(MemoryError::db(ctx))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().await.map_err(MemoryError::db(ctx))? {
        let id = row.get::<String>(1).map_err(MemoryError::db(ctx))?;
        out.push(PathEntry {
            path: row.get::<String>(0).map_err(MemoryError::db(ctx))?,
            note_id: NoteId::parse(&id).map_err(MemoryError::corrupt("note id"))?,
            bytes: u64::try_from(row.get::<i64>(2).map_err(MemoryError::db(ctx))?).unwrap_or(0),
        });
    }
    Ok(out)
}

async fn file_at(
    conn: &Connection,
    session: &SessionId,
    path: &str,
) -> Result<Option<(PathFile, LoadedNote)>, MemoryError> {
    let ctx = "reading a memory file";
    let loaded = query_first(
        conn,
        "SELECT note_id, content, metadata_json, created_at, updated_at, event_seq
         FROM notes WHERE session_id = ?1 AND path = ?2",
        [session.as_str(), path],
        ctx,
        note_from_row,
    )
    .await?;
    let Some(loaded) = loaded else {
        return Ok(None);
    };
    let file = PathFile {
        path: path.to_owned(),
        note_id: loaded.note.note_id.clone(),
        edit_token: edit_token(&loaded.note.content),
        content: loaded.note.content.clone(),
    };
    Ok(Some((file, loaded)))
}

impl Files<'_> {
    /// Every file at or below `dir` (a file path names just that file), in path order.
    pub async fn file_tree(&self, user: &UserId, dir: &str) -> Result<Vec<PathEntry>, MemoryError> {
        check_canonical(dir)?;
        let (session, dir) = (SessionId::user_memory(user), dir.to_owned());
        self.read(move |conn| async move { tree(&conn, &session, &dir).await })
            .await
    }

    /// The file at `path`, if there is one.
    pub async fn read_file(
        &self,
        user: &UserId,
        path: &str,
    ) -> Result<Option<PathFile>, MemoryError> {
        check_canonical(path)?;
        let (session, path) = (SessionId::user_memory(user), path.to_owned());
        self.read(
            move |conn| async move { Ok(file_at(&conn, &session, &path).await?.map(|(f, _)| f)) },
        )
        .await
    }

    /// Writes `content` as the file at `path` if what is there matches `expect`, in one
    /// transaction (the note keeps its id and creation time when it is replaced).
    /// With `audit` (a governed call), the write records its audit row in the same transaction.
    /// `provenance` replaces the file's (an unconfirmed write makes the file unconfirmed again);
    /// `None` keeps it.
    pub async fn put_file(
        &self,
        user: &UserId,
        path: &str,
        content: &str,
        expect: PathExpect,
        audit: Option<&AuditTag>,
        provenance: Option<crate::Provenance>,
    ) -> Result<PathPut, MemoryError> {
        check_canonical(path)?;
        if path == MEMORIES_ROOT {
            return Ok(PathPut::Exists);
        }
        if let Err(too_long) = TooLong::check(content, MAX_NOTE_BYTES) {
            return Err(MemoryError::InvalidInput(format!(
                "the file is too long ({too_long}): keep memory files short"
            )));
        }
        let prepared = prepare(self.inner.embedder.as_ref(), content).await?;
        let (user, path, content) = (user.clone(), path.to_owned(), content.to_owned());
        let index = self.inner.index.clone();
        let audit = audit.cloned();
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let mut changes = Vec::new();
            let session = SessionId::user_memory(&user);
            let outcome = async {
                let existing = file_at(&tx, &session, &path).await?;
                let blocked = match (&existing, &expect) {
                    (Some(_), PathExpect::Absent) => Some(PathPut::Exists),
                    (None, PathExpect::Present | PathExpect::EditToken(_)) => {
                        Some(PathPut::Missing)
                    }
                    (Some((file, _)), PathExpect::EditToken(v)) if file.edit_token != *v => {
                        Some(PathPut::Changed)
                    }
                    (None, PathExpect::Absent) => blocked_new(&tx, &session, &path).await?,
                    _ => None,
                };
                if let Some(blocked) = blocked {
                    return Ok(blocked);
                }
                let (note_id, created_at, metadata) = match &existing {
                    Some((file, old)) => {
                        // The text it replaces stays in the note's history, as an update's does.
                        if file.content != content {
                            keep_version(&tx, &session, &old.note).await?;
                        }
                        old.delete_event(&tx, &session, &mut changes).await?;
                        (
                            old.note.note_id.clone(),
                            to_text(old.note.created_at),
                            old.note.metadata.clone(),
                        )
                    }
                    None => (
                        NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string())
                            .map_err(|e| MemoryError::InvalidInput(e.to_string()))?,
                        now_text(),
                        NoteMetadata::default(),
                    ),
                };
                let mut metadata = metadata;
                if let Some(provenance) = provenance {
                    metadata.provenance = match &existing {
                        Some((file, old)) => after_rewrite(
                            (&file.content, old.note.metadata.provenance.as_ref()),
                            &content,
                            Some(provenance),
                        ),
                        None => Some(provenance),
                    };
                }
                let write = NoteWrite {
                    note_id: note_id.clone(),
                    content: content.clone(),
                    metadata,
                    created_at,
                    updated_at: now_text(),
                    prepared,
                };
                insert_note(&tx, &user, &write, &mut changes).await?;
                tx.execute(
                    "UPDATE notes SET path = ?1 WHERE note_id = ?2",
                    [path.as_str(), note_id.as_str()],
                )
                .await
                .map_err(MemoryError::db("naming a file"))?;
                crate::notes::audit::record_write(&tx, &user, audit.as_ref(), Some(&note_id))
                    .await?;
                Ok(PathPut::Written(PathFile {
                    path: path.clone(),
                    note_id,
                    edit_token: edit_token(&content),
                    content: content.clone(),
                }))
            }
            .await;
            let put = finish(tx, outcome).await?;
            if let PathPut::Written(file) = &put {
                index.apply(&changes);
                tracing::info!(user = %user, note_id = %file.note_id, "wrote memory file");
            }
            Ok(put)
        })
        .await
    }

    /// Moves the file or directory at `from` to `to`, in one transaction.
    pub async fn move_path(
        &self,
        user: &UserId,
        from: &str,
        to: &str,
        audit: Option<&AuditTag>,
    ) -> Result<PathMove, MemoryError> {
        check_canonical(from)?;
        check_canonical(to)?;
        if from == MEMORIES_ROOT || to == MEMORIES_ROOT || to.starts_with(&format!("{from}/")) {
            return Err(MemoryError::InvalidInput(
                "a directory cannot be moved onto the root or into itself".into(),
            ));
        }
        let (user, from, to) = (user.clone(), from.to_owned(), to.to_owned());
        let audit = audit.cloned();
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let session = SessionId::user_memory(&user);
            let outcome = async {
                let moving = tree(&tx, &session, &from).await?;
                if moving.is_empty() {
                    return Ok(PathMove::Missing);
                }
                match blocked_new(&tx, &session, &to).await? {
                    Some(PathPut::UnderFile(a)) => return Ok(PathMove::UnderFile(a)),
                    Some(_) => return Ok(PathMove::Exists),
                    None => {}
                }
                for entry in &moving {
                    let suffix = entry.path.get(from.len()..).unwrap_or_default();
                    tx.execute(
                        "UPDATE notes SET path = ?1 WHERE note_id = ?2",
                        [format!("{to}{suffix}").as_str(), entry.note_id.as_str()],
                    )
                    .await
                    .map_err(MemoryError::db("renaming a file"))?;
                }
                crate::notes::audit::record_write(&tx, &user, audit.as_ref(), None).await?;
                Ok(PathMove::Moved(moving.len()))
            }
            .await;
            finish(tx, outcome).await
        })
        .await
    }

    /// Deletes the file or every file of the directory at `path`, in one transaction. Returns
    /// how many files were deleted (0: nothing is there).
    pub async fn delete_path(
        &self,
        user: &UserId,
        path: &str,
        audit: Option<&AuditTag>,
    ) -> Result<usize, MemoryError> {
        check_canonical(path)?;
        if path == MEMORIES_ROOT {
            return Err(MemoryError::InvalidInput(
                "the /memories directory itself cannot be deleted".into(),
            ));
        }
        let (user, path, index) = (user.clone(), path.to_owned(), self.inner.index.clone());
        let audit = audit.cloned();
        self.write(move |conn| async move {
            let tx = begin(&conn).await?;
            let session = SessionId::user_memory(&user);
            let mut changes: Vec<IndexChange> = Vec::new();
            let outcome = async {
                let doomed = tree(&tx, &session, &path).await?;
                for entry in &doomed {
                    let Some((_, old)) = file_at(&tx, &session, &entry.path).await? else {
                        continue;
                    };
                    // A tombstone, restorable at its path within the retention window.
                    entomb(&tx, &session, &old).await?;
                    old.delete_event(&tx, &session, &mut changes).await?;
                    tx.execute(
                        "DELETE FROM notes WHERE note_id = ?1",
                        [entry.note_id.as_str()],
                    )
                    .await
                    .map_err(MemoryError::db("deleting a file"))?;
                }
                if !doomed.is_empty() {
                    crate::notes::audit::record_write(&tx, &user, audit.as_ref(), None).await?;
                }
                Ok(doomed.len())
            }
            .await;
            let n = finish(tx, outcome).await?;
            index.apply(&changes);
            Ok(n)
        })
        .await
    }

    /// The paths of those of `notes` that are files (for search results).
    pub async fn paths_of(
        &self,
        user: &UserId,
        notes: &[NoteId],
    ) -> Result<Vec<(NoteId, String)>, MemoryError> {
        if notes.is_empty() {
            return Ok(Vec::new());
        }
        let session = SessionId::user_memory(user);
        let ids: Vec<String> = notes.iter().map(|n| n.as_str().to_owned()).collect();
        self.read(move |conn| async move {
            let ids = serde_json::to_string(&ids).map_err(MemoryError::corrupt("note ids"))?;
            let mut rows = conn
                .query(
                    "SELECT note_id, path FROM notes WHERE session_id = ?1 AND path IS NOT NULL
                     AND note_id IN (SELECT value FROM json_each(?2))",
                    [session.as_str(), ids.as_str()],
                )
                .await
                .map_err(MemoryError::db("reading file paths"))?;
            let mut out = Vec::new();
            while let Some(row) = rows
                .next()
                .await
                .map_err(MemoryError::db("reading file paths"))?
            {
                let id = row
                    .get::<String>(0)
                    .map_err(MemoryError::db("reading file paths"))?;
                let path = row
                    .get::<String>(1)
                    .map_err(MemoryError::db("reading file paths"))?;
                out.push((
                    NoteId::parse(&id).map_err(MemoryError::corrupt("note id"))?,
                    path,
                ));
            }
            Ok(out)
        })
        .await
    }
}

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;
