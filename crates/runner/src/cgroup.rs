//! All of a user's guest processes end with them (process tier): each guest is placed, between
//! fork and exec, in a cgroup v2 of its own — `<cgroup2>/oxydra/<user>.<digest of the workspace
//! root>/<role>` — so every command the shell runs, including one that left its session
//! (`setsid -f`, a double fork), stays in it. Ending a guest ends its cgroup (`cgroup.kill`, or
//! SIGKILL to every pid in it on kernels without that file); ending a user ends them all.
//!
//! The place is derived from the workspace, never read from a marker a guest could forge, so
//! `stop`, `start` and `status` find it even after the runner that made it died.
//!
//! Without a writable cgroup v2 hierarchy (a runner not started as root, or a host with none
//! mounted) processes are not tracked ([`Tracking::Untracked`]): guests still get their own
//! process group, which ends with them, but a command that leaves it can outlive `stop` — the
//! degraded mode `runner status` names.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use sha2::{Digest, Sha256};
use types::WorkspacePaths;

use crate::RunnerError;

/// Where a user's processes are tracked, or why they are not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tracking {
    Cgroup(UserCgroup),
    Untracked(&'static str),
}

/// The cgroup holding one user's guests (one child cgroup per role).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserCgroup {
    dir: PathBuf,
}

/// An open `cgroup.procs` a child writes itself into before it execs (see [`Placement::enter`]).
#[derive(Debug)]
pub struct Placement(OwnedFd);

impl Tracking {
    /// How `ws`'s processes are tracked on this host.
    pub fn of(ws: &WorkspacePaths) -> Self {
        if !crate::runs_as_root() {
            return Tracking::Untracked("the runner is not running as root");
        }
        match cgroup2_mount() {
            Some(mount) => Tracking::Cgroup(UserCgroup {
                dir: mount.join("oxydra").join(leaf_name(ws)),
            }),
            None => Tracking::Untracked("this host has no cgroup v2 hierarchy mounted"),
        }
    }

    pub fn cgroup(&self) -> Option<&UserCgroup> {
        match self {
            Tracking::Cgroup(c) => Some(c),
            Tracking::Untracked(_) => None,
        }
    }
}

impl UserCgroup {
    /// The directory of this user's cgroup.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Creates `role`'s cgroup (ending whatever a previous instance left in it) and opens its
    /// `cgroup.procs` for the child to enter.
    pub fn prepare(&self, role: &str) -> Result<Placement, RunnerError> {
        let dir = self.dir.join(role);
        std::fs::create_dir_all(&dir).map_err(RunnerError::io("create the cgroup", &dir))?;
        self.kill(Some(role));
        let procs = dir.join("cgroup.procs");
        let fd = rustix::fs::open(&procs, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| RunnerError::io("open", &procs)(e.into()))?;
        Ok(Placement(fd))
    }

    /// Ends every process of `role` (or of every role with `None`); returns how many there were.
    /// Waits (up to two seconds) until they are gone.
    pub fn kill(&self, role: Option<&str>) -> usize {
        let dir = role.map_or_else(|| self.dir.clone(), |r| self.dir.join(r));
        let before = pids_under(&dir).len();
        if before == 0 {
            return 0;
        }
        if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
            // Kernels before 5.14: one SIGKILL per pid, again until none is left.
            for pid in pids_under(&dir) {
                crate::signal(pid, rustix::process::Signal::KILL);
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while !pids_under(&dir).is_empty() && std::time::Instant::now() < deadline {
            for pid in pids_under(&dir) {
                crate::signal(pid, rustix::process::Signal::KILL);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        before
    }

    /// Every pid in this user's cgroups, with its role.
    pub fn processes(&self) -> Vec<(String, u32)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let role = entry.file_name().to_string_lossy().into_owned();
                found.extend(
                    pids_under(&entry.path())
                        .into_iter()
                        .map(|p| (role.clone(), p)),
                );
            }
        }
        found.sort();
        found
    }

    /// Ends every process and removes the (then empty) cgroups.
    pub fn remove(&self) {
        self.kill(None);
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

impl Placement {
    /// Moves the calling process into the cgroup (writing `0` to its `cgroup.procs`). Only a raw
    /// system call: meant for `pre_exec`, before privileges are dropped.
    pub fn enter(&self) -> std::io::Result<()> {
        rustix::io::write(self.0.as_fd(), b"0")?;
        Ok(())
    }
}

/// The pids in the cgroup `dir` and below.
fn pids_under(dir: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pids.extend(pids_under(&entry.path()));
            }
        }
    }
    pids
}

/// `<user>.<16 hex digits of the workspace root's path>`: one cgroup per workspace, whichever
/// root it sits under.
fn leaf_name(ws: &WorkspacePaths) -> String {
    let user = ws
        .root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let digest = Sha256::digest(ws.root.as_os_str().as_encoded_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{user}.{hex}")
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup` on a unified host,
/// `/sys/fs/cgroup/unified` on a hybrid one), if it is and this process may write there.
fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mounts = info.lines().filter_map(|line| {
        // `id parent major:minor root mount-point options ... - fstype source super-options`
        let (left, right) = line.split_once(" - ")?;
        let fstype = right.split(' ').next()?;
        let point = left.split(' ').nth(4)?;
        (fstype == "cgroup2").then(|| PathBuf::from(point))
    });
    let mut mounts: Vec<PathBuf> = mounts.collect();
    mounts.sort_by_key(|p| p != Path::new("/sys/fs/cgroup"));
    mounts.into_iter().find(|m| {
        rustix::fs::access(m, rustix::fs::Access::WRITE_OK).is_ok()
            && m.join("cgroup.procs").exists()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs root"]
    fn a_process_that_left_its_session_ends_with_its_cgroup() {
        test_support::need(test_support::Need::Root);
        let dir = tempfile::tempdir().unwrap();
        let ws = WorkspacePaths::new(dir.path().join("alice"));
        let Tracking::Cgroup(cgroup) = Tracking::of(&ws) else {
            panic!("a root on this host has a writable cgroup v2 hierarchy");
        };
        let place = cgroup.prepare("shell-vm").unwrap();
        let mut command = std::process::Command::new("sh");
        command.args([
            "-c",
            "setsid -f sleep 4242.5 </dev/null >/dev/null 2>&1; sleep 30",
        ]);
        #[allow(
            unsafe_code,
            reason = "the placement is the one raw write pre_exec allows"
        )]
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, move || place.enter());
        }
        let mut child = command.spawn().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while cgroup.processes().len() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "{:?}",
                cgroup.processes()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let found = cgroup.processes();
        assert!(
            found.iter().all(|(role, _)| role == "shell-vm"),
            "{found:?}"
        );
        assert!(cgroup.kill(None) >= 2);
        child.wait().unwrap();
        assert_eq!(cgroup.processes(), Vec::<(String, u32)>::new());
        cgroup.remove();
        assert!(!cgroup.path().exists());
    }
}
