//! Where a user's local memory database may live: inside the workspace only in `.oxydra/`.
//! Anywhere else in the workspace the shell could read the notes, and plant links at
//! `memory.db-wal` or `-journal` that SQLite (in `oxydra-vm`, or in the unconfined runner for
//! `runner memory`) would follow.

use types::{MemoryConfig, WorkspacePaths};

use crate::RunnerError;

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
