//! The host-wide record of guest uids: one file, `/var/lib/oxydra/guest-ids.json` (root's, mode
//! 0644 in a root-owned directory no one else can write), locked with `flock` while it is read
//! and written, so every runner on the host — whatever its workspace root — draws from one pool
//! and no two users of any two roots ever share a uid.
//!
//! Each user of a workspace root gets two ids: the agent's uid (also the number of the user's
//! group) and the shell's uid ([`UserIdentities`]). A new id is the lowest at or above the
//! configured base that no record entry holds, that no account or group of the host names, and
//! that no live process runs as. An entry whose workspace root no longer exists is released at
//! the next allocation; `runner forget` releases a user's ids at once ([`release_ids`]).
//!
//! Records of earlier versions, one per workspace root (`<root>/.guest-ids.json`, one uid per
//! user), are taken over the first time a runner allocates under that root: a user keeps their
//! old uid as the agent's when no other entry of the host record holds it (else they get a new
//! one, and the next start re-owns their workspace).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags};
use serde::{Deserialize, Serialize};
use types::UserId;

use crate::privilege::{GuestIdentity, UserIdentities, write_owned};
use crate::{GUEST_IDS_FILE, RunnerError};

/// Where the host-wide record lives.
pub const HOST_GUEST_IDS: &str = "/var/lib/oxydra/guest-ids.json";
/// Guest ids tried above the base.
const MAX_GUESTS: u32 = 2_000_000;
/// The record is not read past this size.
const MAX_RECORD_BYTES: u64 = 64 << 20;

/// One user of one workspace root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// The workspace root, absolute.
    root: PathBuf,
    user: String,
    /// The agent's uid; also the gid of both guests (the user's group).
    agent: u32,
    shell: u32,
}

impl Entry {
    fn ids(&self) -> UserIdentities {
        UserIdentities {
            agent: GuestIdentity {
                uid: self.agent,
                gid: self.agent,
            },
            shell: GuestIdentity {
                uid: self.shell,
                gid: self.agent,
            },
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostRecord {
    entries: Vec<Entry>,
}

/// A per-root record of an earlier version.
#[derive(Debug, Deserialize)]
struct LegacyRecord {
    base: u32,
    users: BTreeMap<String, u32>,
}

/// The host record at `path`, locked until dropped.
struct Locked {
    path: PathBuf,
    record: HostRecord,
    _lock: std::os::fd::OwnedFd,
}

impl Locked {
    fn open(path: &Path) -> Result<Self, RunnerError> {
        let dir = path.parent().unwrap_or(Path::new("/"));
        ensure_private_dir(dir)?;
        let lock_path = path.with_extension("lock");
        let lock = rustix::fs::open(
            &lock_path,
            OFlags::CREATE | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| RunnerError::io("open", &lock_path)(e.into()))?;
        rustix::fs::flock(&lock, FlockOperation::LockExclusive)
            .map_err(|e| RunnerError::io("lock", &lock_path)(e.into()))?;
        let record = read(path)?.unwrap_or_default();
        Ok(Self {
            path: path.to_owned(),
            record,
            _lock: lock,
        })
    }

    fn find(&self, root: &Path, user: &str) -> Option<&Entry> {
        self.record
            .entries
            .iter()
            .find(|e| e.root == root && e.user == user)
    }

    fn save(&self) -> Result<(), RunnerError> {
        let text = serde_json::to_vec_pretty(&self.record).map_err(|source| RunnerError::Json {
            path: self.path.clone(),
            source,
        })?;
        write_owned(&self.path, &text, 0o644, None)
    }
}

fn read(path: &Path) -> Result<Option<HostRecord>, RunnerError> {
    crate::marker::read_json_within(path, MAX_RECORD_BYTES)
}

/// Creates `dir` (mode 0755) if missing; refuses one that is a link, not root's, or writable by
/// anyone else (whoever could write there could hand out uids).
fn ensure_private_dir(dir: &Path) -> Result<(), RunnerError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .map_err(RunnerError::io("create", dir))?;
    let meta = std::fs::symlink_metadata(dir).map_err(RunnerError::io("inspect", dir))?;
    let me = rustix::process::geteuid().as_raw();
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o022 != 0 {
        return Err(RunnerError::Config {
            path: dir.to_owned(),
            problem: "the guest uid record must be in a directory that only the runner's \
                      account owns and can write (chown root and chmod 0755 it)"
                .into(),
        });
    }
    Ok(())
}

/// The absolute form of `root` the record is keyed by.
fn key_of(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned())
}

/// `user`'s ids under `workspace_root`: recorded, or allocated now from `base` up (the record at
/// `record`, normally [`HOST_GUEST_IDS`]).
pub fn allocate_ids(
    record: &Path,
    workspace_root: &Path,
    base: u32,
    user: &UserId,
) -> Result<UserIdentities, RunnerError> {
    let root = key_of(workspace_root);
    let mut locked = Locked::open(record)?;
    if let Some(entry) = locked.find(&root, user.as_str()) {
        return Ok(entry.ids());
    }
    let before = locked.record.entries.len();
    locked.record.entries.retain(|e| e.root.is_dir());
    let mut taken = Taken::read(&locked.record);
    adopt_legacy(&mut locked, &mut taken, &root, base)?;
    if locked.find(&root, user.as_str()).is_none() {
        let agent = taken.next(base).ok_or_else(|| exhausted(record))?;
        let shell = taken.next(base).ok_or_else(|| exhausted(record))?;
        locked.record.entries.push(Entry {
            root: root.clone(),
            user: user.to_string(),
            agent,
            shell,
        });
        tracing::info!(%user, agent, shell, "allocated guest uids");
    }
    let released = before.saturating_sub(locked.record.entries.len());
    if released > 0 {
        tracing::info!(
            released,
            "released the guest uids of workspace roots that are gone"
        );
    }
    locked.save()?;
    locked
        .find(&root, user.as_str())
        .map(Entry::ids)
        .ok_or_else(|| exhausted(record))
}

/// Takes over the per-root record of an earlier version under `root`, once: each of its users
/// keeps their uid as the agent's unless another entry holds it.
fn adopt_legacy(
    locked: &mut Locked,
    taken: &mut Taken,
    root: &Path,
    base: u32,
) -> Result<(), RunnerError> {
    let legacy_path = root.join(GUEST_IDS_FILE);
    let Some(legacy) = crate::read_json::<LegacyRecord>(&legacy_path)? else {
        return Ok(());
    };
    // First every old uid still free is reserved, so no new shell uid lands on one of them.
    let mut agents = Vec::new();
    for (user, offset) in legacy.users {
        if locked.find(root, &user).is_some() {
            continue;
        }
        let old = legacy
            .base
            .checked_add(offset)
            .filter(|uid| taken.recorded.insert(*uid));
        agents.push((user, old));
    }
    for (user, old) in agents {
        let agent = match old {
            Some(uid) => uid,
            None => taken.next(base).ok_or_else(|| exhausted(&locked.path))?,
        };
        let shell = taken.next(base).ok_or_else(|| exhausted(&locked.path))?;
        tracing::info!(%user, agent, shell, "took over the guest uid of an earlier record");
        locked.record.entries.push(Entry {
            root: root.to_owned(),
            user,
            agent,
            shell,
        });
    }
    Ok(())
}

/// `user`'s ids under `workspace_root` if recorded (nothing is allocated or taken over).
pub fn recorded_ids(record: &Path, workspace_root: &Path, user: &UserId) -> Option<UserIdentities> {
    let root = key_of(workspace_root);
    let record = read(record).ok()??;
    record
        .entries
        .iter()
        .find(|e| e.root == root && e.user == user.as_str())
        .map(Entry::ids)
}

/// Releases `user`'s ids under `workspace_root`: the next allocation may hand them out again.
/// Returns them if there were any.
pub fn release_ids(
    record: &Path,
    workspace_root: &Path,
    user: &UserId,
) -> Result<Option<UserIdentities>, RunnerError> {
    let root = key_of(workspace_root);
    let mut locked = Locked::open(record)?;
    let found = locked.find(&root, user.as_str()).map(Entry::ids);
    if found.is_some() {
        locked
            .record
            .entries
            .retain(|e| !(e.root == root && e.user == user.as_str()));
        locked.save()?;
    }
    Ok(found)
}

fn exhausted(path: &Path) -> RunnerError {
    RunnerError::Config {
        path: path.to_owned(),
        problem: "no free guest uid at or above guest_uid_base".into(),
    }
}

/// Every id that may not be handed out: recorded, named by the host's account databases, or in
/// use by a live process.
struct Taken {
    recorded: BTreeSet<u32>,
    host: BTreeSet<u32>,
}

impl Taken {
    fn read(record: &HostRecord) -> Self {
        let recorded = record
            .entries
            .iter()
            .flat_map(|e| [e.agent, e.shell])
            .collect();
        let mut host = BTreeSet::new();
        for file in ["/etc/passwd", "/etc/group"] {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            host.extend(
                text.lines()
                    .filter_map(|l| l.split(':').nth(2)?.parse::<u32>().ok()),
            );
        }
        host.extend(process_ids());
        Self { recorded, host }
    }

    /// The lowest free id at or above `base`, now taken.
    fn next(&mut self, base: u32) -> Option<u32> {
        let id = (0..MAX_GUESTS)
            .filter_map(|o| base.checked_add(o))
            .find(|id| !self.recorded.contains(id) && !self.host.contains(id))?;
        self.recorded.insert(id);
        Some(id)
    }
}

/// The uids and gids live processes run as (the owner of `/proc/<pid>`).
fn process_ids() -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| e.metadata().ok())
        .flat_map(|m| [m.uid(), m.gid()])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> UserId {
        UserId::parse(name).unwrap()
    }

    #[test]
    fn two_roots_never_share_an_id_and_forget_releases() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("lib/guest-ids.json");
        let (one, two) = (dir.path().join("one"), dir.path().join("two"));
        std::fs::create_dir_all(&one).unwrap();
        std::fs::create_dir_all(&two).unwrap();
        let base = 3_000_000_000;
        let a1 = allocate_ids(&record, &one, base, &user("alice")).unwrap();
        let b1 = allocate_ids(&record, &one, base, &user("bob")).unwrap();
        let a2 = allocate_ids(&record, &two, base, &user("alice")).unwrap();
        // Stable, whatever the base asked for later.
        assert_eq!(allocate_ids(&record, &one, 42, &user("alice")).unwrap(), a1);
        assert_eq!(recorded_ids(&record, &two, &user("alice")), Some(a2));
        assert_eq!(recorded_ids(&record, &two, &user("bob")), None);
        let all: BTreeSet<u32> = [a1, b1, a2]
            .iter()
            .flat_map(|i| [i.agent.uid, i.shell.uid])
            .collect();
        assert_eq!(all.len(), 6, "{a1:?} {b1:?} {a2:?}");
        for ids in [a1, b1, a2] {
            assert_eq!(ids.shell.gid, ids.agent.gid);
            assert_eq!(ids.agent.gid, ids.agent.uid);
        }
        assert_eq!(
            release_ids(&record, &one, &user("alice")).unwrap(),
            Some(a1)
        );
        assert_eq!(recorded_ids(&record, &one, &user("alice")), None);
        // Released ids are handed out again.
        let c = allocate_ids(&record, &two, base, &user("carol")).unwrap();
        assert_eq!(
            [c.agent.uid, c.shell.uid]
                .into_iter()
                .collect::<BTreeSet<_>>(),
            [a1.agent.uid, a1.shell.uid].into_iter().collect()
        );
        // A root that is gone gives its ids back at the next allocation.
        std::fs::remove_dir_all(&one).unwrap();
        let dan = allocate_ids(&record, &two, base, &user("dan")).unwrap();
        assert!(
            [b1.agent.uid, b1.shell.uid].contains(&dan.agent.uid),
            "{dan:?}"
        );
    }

    #[test]
    fn legacy_records_are_taken_over_without_collisions() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("lib/guest-ids.json");
        let (one, two) = (dir.path().join("one"), dir.path().join("two"));
        let base = 3_100_000_000;
        for root in [&one, &two] {
            std::fs::create_dir_all(root).unwrap();
            std::fs::write(
                root.join(GUEST_IDS_FILE),
                format!("{{\"base\": {base}, \"users\": {{\"alice\": 0, \"bob\": 1}}}}"),
            )
            .unwrap();
        }
        let a1 = allocate_ids(&record, &one, base, &user("alice")).unwrap();
        let b1 = recorded_ids(&record, &one, &user("bob")).unwrap();
        assert_eq!((a1.agent.uid, b1.agent.uid), (base, base + 1));
        // The second root's users had the same uids: they get new ones.
        let a2 = allocate_ids(&record, &two, base, &user("alice")).unwrap();
        let b2 = recorded_ids(&record, &two, &user("bob")).unwrap();
        let all: BTreeSet<u32> = [a1, b1, a2, b2]
            .iter()
            .flat_map(|i| [i.agent.uid, i.shell.uid])
            .collect();
        assert_eq!(all.len(), 8);
    }

    #[test]
    fn a_record_others_could_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        std::fs::create_dir(&lib).unwrap();
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = allocate_ids(&lib.join("guest-ids.json"), dir.path(), 0, &user("eve"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("only the runner's account owns and can write"),
            "{err}"
        );
        assert!(!lib.join("guest-ids.json").exists());
    }

    #[test]
    fn host_accounts_and_live_processes_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("lib/guest-ids.json");
        let ids = allocate_ids(&record, dir.path(), 0, &user("carol")).unwrap();
        let me = rustix::process::getuid().as_raw();
        for id in [ids.agent.uid, ids.shell.uid] {
            assert!(id > 0 && id != me, "{ids:?}");
        }
    }
}
