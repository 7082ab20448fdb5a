//! User separation when the runner runs as root: each user's guests run under unprivileged ids
//! of their own ([`UserIdentities`]) — the agent (`oxydra-vm`) under one uid, the shell
//! (`shell-vm` and every command it runs) under another, both with the user's group as their only
//! group — allocated once per user from a host-wide record (see `guest_ids`, so no two workspace
//! roots share a uid). Who owns what in the workspace is `ownership`'s. A spawned guest drops to
//! its identity in `pre_exec` ([`drop_to`]): no supplementary groups, no capabilities (bounding
//! and ambient sets too), `no_new_privs`, umask 007.
//!
//! A runner not started as root cannot change uids: every user's guests share its uid, and the
//! shell secret (see `shell_secret`) plus Landlock are the only separation ([`Separation`]).

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::process::{Gid, Uid};
use sandbox::Role;
use serde::{Deserialize, Serialize};
use types::{UserId, WorkspacePaths};

use crate::RunnerError;

/// Default first guest uid: far above login users (< 60000), systemd's dynamic users and the
/// usual subordinate-id ranges (100000 + 65536 × n).
pub const DEFAULT_GUEST_UID_BASE: u32 = 2_000_000_000;
/// The per-root allocation record of earlier versions, in the workspace root (taken over by the
/// host-wide record, see `guest_ids`).
pub const GUEST_IDS_FILE: &str = ".guest-ids.json";

/// The uid and gid one guest runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestIdentity {
    pub uid: u32,
    pub gid: u32,
}

/// One user's two guest identities. Both share the user's group (numbered as the agent's uid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserIdentities {
    /// `oxydra-vm`: owns `.oxydra/`, `vault/` and the workspace's directories.
    pub agent: GuestIdentity,
    /// `shell-vm` and its commands: owns only the files it creates.
    pub shell: GuestIdentity,
}

impl UserIdentities {
    /// The identity `role` runs as.
    pub fn of(self, role: Role) -> GuestIdentity {
        match role {
            Role::OxydraVm => self.agent,
            Role::ShellVm => self.shell,
        }
    }
}

/// How the users of one runner are kept apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Separation {
    /// Each user's agent and shell run as uids of their own (the runner runs as root).
    PerUser(UserIdentities),
    /// Every guest runs as the runner's uid; the shell secret and Landlock are all there is.
    SharedUid,
}

impl Separation {
    pub fn identity(self) -> Option<UserIdentities> {
        match self {
            Separation::PerUser(ids) => Some(ids),
            Separation::SharedUid => None,
        }
    }

    /// The identity `role` runs as, when it has one of its own.
    pub fn guest(self, role: Role) -> Option<GuestIdentity> {
        self.identity().map(|ids| ids.of(role))
    }
}

/// What a runner not started as root says once.
pub const SHARED_UID_NOTICE: &str = "the runner is not running as root, so every user's agent \
     and shell run as its own uid: users are kept apart only by Landlock and the per-user shell \
     secret (a user's shell cannot be driven by another user, but a kernel without Landlock \
     leaves their files open to each other), guests keep this uid's groups, and a user's shell \
     owns its workspace, so it can change the modes of the agent's files (keep workspace_root \
     out of other accounts' reach, mode 0700)";

/// True when this process may give guests their own uids.
pub fn runs_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The separation `user`'s guests get: their own identities when this process is root
/// (allocated and recorded host-wide on first use), else [`Separation::SharedUid`].
pub fn separation(
    workspace_root: &Path,
    base: u32,
    user: &UserId,
) -> Result<Separation, RunnerError> {
    if !runs_as_root() {
        return Ok(Separation::SharedUid);
    }
    crate::guest_ids::allocate_ids(
        Path::new(crate::guest_ids::HOST_GUEST_IDS),
        workspace_root,
        base,
        user,
    )
    .map(Separation::PerUser)
}

/// `user`'s identities under `workspace_root` if recorded host-wide (nothing is allocated).
pub fn recorded_identity(workspace_root: &Path, user: &UserId) -> Option<UserIdentities> {
    crate::guest_ids::recorded_ids(
        Path::new(crate::guest_ids::HOST_GUEST_IDS),
        workspace_root,
        user,
    )
}

/// Releases `user`'s identities under `workspace_root` (`runner forget`): their workspace, if
/// any is left, is first given to root, so whoever is given the uids next owns none of it.
pub fn release_identity(workspace_root: &Path, user: &UserId) -> Result<bool, RunnerError> {
    let ws = WorkspacePaths::for_user(workspace_root, user);
    if recorded_identity(workspace_root, user).is_some() {
        crate::ownership::disown_workspace(&ws)?;
    }
    let released = crate::guest_ids::release_ids(
        Path::new(crate::guest_ids::HOST_GUEST_IDS),
        workspace_root,
        user,
    )?;
    Ok(released.is_some())
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

fn chown_fd(fd: &OwnedFd, id: GuestIdentity) -> rustix::io::Result<()> {
    rustix::fs::fchown(fd, Some(Uid::from_raw(id.uid)), Some(Gid::from_raw(id.gid)))
}

/// Drops this (forked, single-threaded) process to `id` before it execs a guest: every
/// capability leaves the bounding and ambient sets, supplementary groups are cleared, the real,
/// effective and saved gid and uid become `id`'s, the remaining capability sets are emptied,
/// `no_new_privs` is set and the umask becomes 007. Only raw system calls (async-signal-safe): meant for `pre_exec`.
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
    // Files either guest creates are the other's to change too (through the user's group); the
    // workspace root keeps every other account out whatever the bits.
    rustix::process::umask(Mode::from_raw_mode(0o007));
    Ok(())
}
