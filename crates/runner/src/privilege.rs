//! User separation when the runner runs as root: each user's guests run under an unprivileged
//! uid/gid of their own ([`GuestIdentity`]), allocated once per user from a configurable base and
//! recorded in `<workspace_root>/.guest-ids.json` (which only the runner writes); the user's
//! workspace is owned by that uid, mode 0700 ([`own_workspace`]); a spawned guest drops to it in
//! `pre_exec` ([`drop_to`]): no supplementary groups, no capabilities (bounding and ambient sets
//! too), `no_new_privs`.
//!
//! A runner not started as root cannot change uids: every user's guests share its uid, and the
//! shell secret (see `shell_secret`) plus Landlock are the only separation ([`Separation`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::process::{Gid, Uid};
use serde::{Deserialize, Serialize};
use types::{UserId, WorkspaceDir, WorkspacePaths};

use crate::RunnerError;

/// Default first guest uid: far above login users (< 60000), systemd's dynamic users and the
/// usual subordinate-id ranges (100000 + 65536 × n).
pub const DEFAULT_GUEST_UID_BASE: u32 = 2_000_000_000;
/// Guest uids per workspace root.
const MAX_GUESTS: u32 = 1_000_000;
/// The allocation record, in the workspace root (user ids never start with `.`).
pub const GUEST_IDS_FILE: &str = ".guest-ids.json";

/// The uid and gid a user's guests run as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestIdentity {
    pub uid: u32,
    pub gid: u32,
}

/// How the users of one runner are kept apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Separation {
    /// Each user's guests run as their own uid (the runner runs as root).
    PerUser(GuestIdentity),
    /// Every guest runs as the runner's uid; the shell secret and Landlock are all there is.
    SharedUid,
}

impl Separation {
    pub fn identity(self) -> Option<GuestIdentity> {
        match self {
            Separation::PerUser(id) => Some(id),
            Separation::SharedUid => None,
        }
    }
}

/// What a runner not started as root says once.
pub const SHARED_UID_NOTICE: &str = "the runner is not running as root, so every user's agent \
     and shell run as its own uid: users are kept apart only by Landlock and the per-user shell \
     secret (a user's shell cannot be driven by another user, but a kernel without Landlock \
     leaves their files open to each other), and guests keep this uid's groups";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    base: u32,
    /// Offset from `base` per user.
    users: BTreeMap<String, u32>,
}

/// True when this process may give guests their own uids.
pub fn runs_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The separation `user`'s guests get: their own identity when this process is root (allocated
/// and recorded on first use), else [`Separation::SharedUid`].
pub fn separation(
    workspace_root: &Path,
    base: u32,
    user: &UserId,
) -> Result<Separation, RunnerError> {
    if !runs_as_root() {
        return Ok(Separation::SharedUid);
    }
    guest_identity(workspace_root, base, user).map(Separation::PerUser)
}

/// `user`'s identity under `workspace_root`: recorded, or allocated now (the lowest free offset
/// whose uid and gid no account or group of this host uses). The record is locked while read
/// and written, so concurrent runners agree.
pub fn guest_identity(
    workspace_root: &Path,
    base: u32,
    user: &UserId,
) -> Result<GuestIdentity, RunnerError> {
    let path = workspace_root.join(GUEST_IDS_FILE);
    let lock_path = workspace_root.join(".guest-ids.lock");
    let lock = rustix::fs::open(
        &lock_path,
        OFlags::CREATE | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| RunnerError::io("open", &lock_path)(e.into()))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| RunnerError::io("lock", &lock_path)(e.into()))?;
    let mut record: Record = crate::read_json(&path)?.unwrap_or(Record {
        base,
        users: BTreeMap::new(),
    });
    let at = |offset: u32| record.base.checked_add(offset);
    if let Some(offset) = record.users.get(user.as_str()).copied() {
        let id = at(offset).ok_or_else(|| bad_record(&path))?;
        return Ok(GuestIdentity { uid: id, gid: id });
    }
    let taken: Vec<u32> = record.users.values().copied().collect();
    let host = HostIds::read();
    let offset = (0..MAX_GUESTS)
        .find(|o| !taken.contains(o) && at(*o).is_some_and(|id| !host.uses(id)))
        .ok_or_else(|| bad_record(&path))?;
    record.users.insert(user.to_string(), offset);
    write_record(&path, &record)?;
    drop(lock);
    let id = at(offset).ok_or_else(|| bad_record(&path))?;
    tracing::info!(%user, uid = id, "allocated a guest uid");
    Ok(GuestIdentity { uid: id, gid: id })
}

/// `user`'s identity if one was recorded under `workspace_root` (nothing is allocated).
pub fn recorded_identity(workspace_root: &Path, user: &UserId) -> Option<GuestIdentity> {
    let record: Record = crate::read_json(&workspace_root.join(GUEST_IDS_FILE)).ok()??;
    let id = record.base.checked_add(*record.users.get(user.as_str())?)?;
    Some(GuestIdentity { uid: id, gid: id })
}

fn bad_record(path: &Path) -> RunnerError {
    RunnerError::Config {
        path: path.to_owned(),
        problem: "no free guest uid at or above its base".into(),
    }
}

fn write_record(path: &Path, record: &Record) -> Result<(), RunnerError> {
    let text = serde_json::to_vec_pretty(record).map_err(|source| RunnerError::Json {
        path: path.to_owned(),
        source,
    })?;
    write_owned(path, &text, 0o644, None)
}

/// The uids and gids this host's account databases name.
struct HostIds(Vec<u32>);

impl HostIds {
    fn read() -> Self {
        let mut ids = Vec::new();
        for file in ["/etc/passwd", "/etc/group"] {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            ids.extend(
                text.lines()
                    .filter_map(|l| l.split(':').nth(2)?.parse::<u32>().ok()),
            );
        }
        Self(ids)
    }

    fn uses(&self, id: u32) -> bool {
        self.0.contains(&id)
    }
}

/// Writes `bytes` to `path` atomically without following anything: a temp file beside it created
/// `O_EXCL|O_NOFOLLOW` with `mode` (owned by `owner` when given), then renamed over `path`.
pub fn write_owned(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    owner: Option<GuestIdentity>,
) -> Result<(), RunnerError> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let fd = rustix::fs::open(
        &tmp,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )
    .map_err(|e| RunnerError::io("write", &tmp)(e.into()))?;
    if let Some(id) = owner {
        chown_fd(&fd, id).map_err(|e| RunnerError::io("chown", &tmp)(e.into()))?;
    }
    std::fs::File::from(fd)
        .write_all(bytes)
        .map_err(RunnerError::io("write", &tmp))?;
    std::fs::rename(&tmp, path).map_err(RunnerError::io("write", path))
}

/// The user's `agent.toml` as their guest uid can read it: a copy in `.oxydra/agent.toml` owned
/// by `id` (the original may sit where only the runner can read).
pub fn agent_config_copy(
    ws: &WorkspacePaths,
    original: &Path,
    id: GuestIdentity,
) -> Result<std::path::PathBuf, RunnerError> {
    let text = std::fs::read(original).map_err(RunnerError::io("read", original))?;
    let copy = ws.internal().join("agent.toml");
    write_owned(&copy, &text, 0o600, Some(id))?;
    Ok(copy)
}

/// Fails when a guest running as another uid could not reach `dir` (some ancestor is not
/// searchable by others).
pub fn check_reachable(dir: &Path) -> Result<(), RunnerError> {
    use std::os::unix::fs::PermissionsExt;
    for ancestor in dir.ancestors() {
        let Ok(meta) = std::fs::metadata(ancestor) else {
            continue;
        };
        if meta.permissions().mode() & 0o001 == 0 {
            return Err(RunnerError::Config {
                path: ancestor.to_owned(),
                problem: format!(
                    "not searchable by other users (mode {:o}), so guests running as their own                      uids cannot reach their workspaces under {}; allow it with `chmod o+x {}`                      or choose another workspace_root",
                    meta.permissions().mode() & 0o7777,
                    dir.display(),
                    ancestor.display()
                ),
            });
        }
    }
    Ok(())
}

/// Gives `ws` to `id`: the workspace root (mode 0700) and its directories, and everything the
/// runner may have written into `.oxydra/`, `vault/`, `logs/` and `ipc/`, are chowned to it; on
/// first use (the root not yet owned by `id`) the whole tree is. Nothing is followed: the walk
/// opens each directory beneath its parent's fd with `O_NOFOLLOW`, links are left alone, and a
/// file with several hard links keeps its owner.
pub fn own_workspace(ws: &WorkspacePaths, id: GuestIdentity) -> Result<(), RunnerError> {
    let err = |what| RunnerError::io(what, &ws.root);
    let root = open_dir(rustix::fs::CWD, &ws.root).map_err(|e| err("open")(e.into()))?;
    let first_time = rustix::fs::fstat(&root)
        .map_err(|e| err("inspect")(e.into()))?
        .st_uid
        != id.uid;
    for dir in WorkspaceDir::ALL {
        let name = ws.dir(dir);
        let name = name.file_name().unwrap_or_default();
        let Ok(sub) = open_dir(&root, name) else {
            continue;
        };
        chown_fd(&sub, id).map_err(|e| RunnerError::io("chown", ws.dir(dir))(e.into()))?;
        let runner_writes = !matches!(dir, WorkspaceDir::Shared | WorkspaceDir::Tmp);
        if first_time || runner_writes {
            chown_tree(&sub, id, 0).map_err(|e| RunnerError::io("chown", ws.dir(dir))(e.into()))?;
        }
    }
    // Last: an interrupted first walk is redone in full next time.
    chown_fd(&root, id).map_err(|e| err("chown")(e.into()))?;
    rustix::fs::fchmod(&root, Mode::from_raw_mode(0o700)).map_err(|e| err("chmod")(e.into()))
}

/// Deepest directory nesting [`own_workspace`] descends into.
const MAX_DEPTH: usize = 64;

fn open_dir<Fd: AsFd>(parent: Fd, name: impl rustix::path::Arg) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

fn chown_fd(fd: &OwnedFd, id: GuestIdentity) -> rustix::io::Result<()> {
    rustix::fs::fchown(fd, Some(Uid::from_raw(id.uid)), Some(Gid::from_raw(id.gid)))
}

fn chown_tree(dir: &OwnedFd, id: GuestIdentity, depth: usize) -> rustix::io::Result<()> {
    if depth >= MAX_DEPTH {
        return Ok(());
    }
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let Ok(stat) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
        match kind {
            rustix::fs::FileType::Directory => {
                let Ok(sub) = open_dir(dir, name) else {
                    continue;
                };
                chown_fd(&sub, id)?;
                chown_tree(&sub, id, depth + 1)?;
            }
            rustix::fs::FileType::Symlink => {}
            _ if stat.st_nlink > 1 || stat.st_uid == id.uid => {}
            _ => rustix::fs::chownat(
                dir,
                name,
                Some(Uid::from_raw(id.uid)),
                Some(Gid::from_raw(id.gid)),
                AtFlags::SYMLINK_NOFOLLOW,
            )?,
        }
    }
    Ok(())
}

/// Drops this (forked, single-threaded) process to `id` before it execs a guest: every
/// capability leaves the bounding and ambient sets, supplementary groups are cleared, the real,
/// effective and saved gid and uid become `id`'s, the remaining capability sets are emptied, and
/// `no_new_privs` is set. Only raw system calls (async-signal-safe): meant for `pre_exec`.
pub fn drop_to(id: GuestIdentity) -> std::io::Result<()> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    for bit in 0..64u32 {
        let cap = CapabilitySet::from_bits_retain(1u64 << bit);
        match rustix::thread::remove_capability_from_bounding_set(cap) {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(e.into()),
        }
    }
    rustix::thread::clear_ambient_capability_set()?;
    rustix::thread::set_thread_groups(&[])?;
    let gid = Gid::from_raw(id.gid);
    rustix::thread::set_thread_res_gid(gid, gid, gid)?;
    let uid = Uid::from_raw(id.uid);
    rustix::thread::set_thread_res_uid(uid, uid, uid)?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )?;
    rustix::thread::set_no_new_privs(true)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_stable_distinct_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let alice = UserId::parse("alice").unwrap();
        let bob = UserId::parse("bob").unwrap();
        let base = 3_000_000_000;
        let a = guest_identity(dir.path(), base, &alice).unwrap();
        let b = guest_identity(dir.path(), base, &bob).unwrap();
        // A later base does not move users already recorded.
        let again = guest_identity(dir.path(), 42, &alice).unwrap();
        assert_eq!(recorded_identity(dir.path(), &bob), Some(b));
        assert_eq!(
            recorded_identity(dir.path(), &UserId::parse("dan").unwrap()),
            None
        );
        assert_eq!(
            (a, b, again),
            (
                GuestIdentity {
                    uid: base,
                    gid: base
                },
                GuestIdentity {
                    uid: base + 1,
                    gid: base + 1
                },
                a
            )
        );
    }

    #[test]
    fn host_accounts_are_skipped() {
        let host = HostIds::read();
        let root_taken = host.uses(0);
        assert!(root_taken, "/etc/passwd names root");
        let dir = tempfile::tempdir().unwrap();
        let id = guest_identity(dir.path(), 0, &UserId::parse("carol").unwrap()).unwrap();
        assert!(id.uid > 0 && !host.uses(id.uid), "{id:?}");
    }

    #[test]
    #[ignore = "needs root"]
    fn owning_a_workspace_follows_no_link_and_takes_no_hard_linked_file() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        test_support::need(test_support::Need::Root);
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        let outside_dir = dir.path().join("outside");
        std::fs::write(&outside, "host file").unwrap();
        std::fs::create_dir(&outside_dir).unwrap();
        let ws = crate::provision(dir.path(), &UserId::parse("alice").unwrap()).unwrap();
        std::fs::write(ws.default_memory_db(), "db").unwrap();
        std::fs::write(ws.shared().join("notes.md"), "n").unwrap();
        std::os::unix::fs::symlink(&outside, ws.logs().join("shell-vm.log")).unwrap();
        std::os::unix::fs::symlink(&outside_dir, ws.ipc().join("swapped")).unwrap();
        std::fs::hard_link(&outside, ws.tmp().join("hard")).unwrap();
        let id = GuestIdentity {
            uid: 3_000_000_007,
            gid: 3_000_000_008,
        };
        own_workspace(&ws, id).unwrap();
        let owner = |p: &Path| {
            let m = std::fs::symlink_metadata(p).unwrap();
            (m.uid(), m.gid())
        };
        let guest = (id.uid, id.gid);
        let host = (0, 0);
        assert_eq!(
            [
                owner(&ws.root),
                owner(&ws.internal()),
                owner(&ws.default_memory_db()),
                owner(&ws.shared().join("notes.md")),
                owner(&outside),
                owner(&outside_dir),
                owner(&ws.logs().join("shell-vm.log")),
            ],
            [guest, guest, guest, guest, host, host, host]
        );
        let mode = std::fs::metadata(&ws.root).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700);
    }
}
