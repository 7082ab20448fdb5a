//! Where a user's local memory database may live: inside the workspace only in `.oxydra/`
//! ([`check_db_place`]). Anywhere else in the workspace the shell could read the notes, and plant
//! links at `memory.db-wal` or `-journal` that SQLite (in `oxydra-vm`, or in the unconfined runner
//! for `runner memory`) would follow.
//!
//! `.oxydra/` itself is the agent's to write, so before an operator's command (often root) opens
//! the database by its path, [`check_db_links`] refuses what the agent could have planted there to
//! turn the command on another file: `.oxydra/` (or any directory between the workspace root and
//! the database) as a link, or the database or one of its files (`-wal`, `-shm`, `-journal`, …) as
//! a link, a second name of another file, or anything but a regular file.

use std::path::Path;

use rustix::fs::FileType;
use types::{MemoryConfig, WorkspacePaths};

use crate::{MemoryPlace, RunnerError, SafeDir};

/// Refuses a local database in `ws` outside `.oxydra/` (an embedded replica's file is a local
/// database too; a remote store, a disabled one and a path outside the workspace are not this
/// check's business).
pub fn check_db_place(memory: &MemoryConfig, ws: &WorkspacePaths) -> Result<(), RunnerError> {
    let db = memory.db_path.resolve(&ws.root);
    if memory.enabled
        && (memory.remote_url.is_none() || memory.replica)
        && db.starts_with(&ws.root)
        && !db.starts_with(ws.internal())
    {
        return Err(RunnerError::Config {
            path: db,
            problem: "memory.db_path is in the user's workspace but not in .oxydra/, where only \
                      the agent can write; use db_path = \"auto\""
                .to_owned(),
        });
    }
    Ok(())
}

/// Refuses the database file of `place` when a link or another file's name was planted on its
/// way (see the module): inside the workspace root `workspace_root` no directory from the root
/// down to the database may be a link; wherever it lies, the database and its companion files
/// must each be absent or a regular file with one name. Nothing is created or opened for
/// writing; a database that does not exist yet passes.
pub fn check_db_links(place: &MemoryPlace, workspace_root: &Path) -> Result<(), RunnerError> {
    let (MemoryPlace::Local(file) | MemoryPlace::Replica(file)) = place else {
        return Ok(());
    };
    let Some(parent) = file.parent() else {
        return Ok(());
    };
    // Inside the workspaces every directory down from the root is opened without following a
    // link; elsewhere the directory is the operator's choice (runner.toml's agent.toml).
    let (base, rel) = match parent.strip_prefix(workspace_root) {
        Ok(rel) => (workspace_root, rel),
        Err(_) => (parent, Path::new("")),
    };
    let dir = match SafeDir::open(base, rel) {
        Ok(dir) => dir,
        Err(RunnerError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(());
        }
        Err(e) => return Err(first_link(base, rel).unwrap_or(e)),
    };
    for path in crate::database_files(file) {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let problem = match dir.entry(name) {
            None => continue,
            Some(found) if found.kind == FileType::Symlink => "is a link",
            Some(found) if found.kind != FileType::RegularFile => "is not a regular file",
            Some(found) if found.links > 1 => "is a second name (hard link) of another file",
            Some(_) => continue,
        };
        return Err(planted(&path, problem));
    }
    Ok(())
}

/// The refusal naming the first link on the way from `base` down `rel`, if there is one (the
/// directory could not be opened without following links).
fn first_link(base: &Path, rel: &Path) -> Option<RunnerError> {
    let mut at = base.to_path_buf();
    for name in rel.components() {
        at.push(name);
        if at
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Some(planted(&at, "is a link"));
        }
    }
    None
}

/// The refusal of [`check_db_links`]: what is wrong with `path` and what to check.
fn planted(path: &Path, problem: &str) -> RunnerError {
    RunnerError::Refused {
        path: path.to_owned(),
        problem: format!(
            "{problem}; the user's agent can write .oxydra/ and could have planted it to turn \
             this command on another user's database, so nothing was opened. Check it with \
             `ls -la` and put the user's own database there (or remove what is not theirs)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(db_path: &str, remote: bool, ok: bool) {
        check_with(db_path, remote, false, ok);
    }

    fn check_with(db_path: &str, remote: bool, replica: bool, ok: bool) {
        let ws = WorkspacePaths::new("/srv/ws/alice");
        let memory = MemoryConfig {
            db_path: types::DbPath::from(db_path.to_owned()),
            remote_url: remote.then(|| "libsql://db.example".to_owned()),
            replica,
            ..MemoryConfig::default()
        };
        assert_eq!(check_db_place(&memory, &ws).is_ok(), ok, "{db_path}");
    }

    #[test]
    fn a_replica_file_is_placed_like_a_local_database() {
        check_with("auto", true, true, true);
        check_with("shared/replica.db", true, true, false);
        check_with("shared/unused.db", true, false, true);
    }

    #[test]
    fn only_dot_oxydra_inside_the_workspace() {
        check("auto", false, true);
        check(".oxydra/other.db", false, true);
        check("/var/lib/oxydra/alice.db", false, true);
        check("shared/memory.db", false, false);
        check("tmp/m.db", false, false);
        check("/srv/ws/alice/ipc/m.db", false, false);
        check("shared/memory.db", true, true);
    }
}
