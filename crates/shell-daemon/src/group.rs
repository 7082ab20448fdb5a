//! A command's process group, killed with `SIGKILL` when asked or when the guard is dropped (so a
//! task torn down mid-command — client gone, daemon stopping — leaves no survivors).

use rustix::process::{Pid, Signal, kill_process_group};

#[derive(Debug)]
pub(crate) struct ProcessGroup {
    pgid: Option<Pid>,
}

impl ProcessGroup {
    /// The group led by `leader`, a child spawned with `process_group(0)`.
    pub(crate) fn led_by(leader: Option<u32>) -> Self {
        let pgid = leader
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(Pid::from_raw);
        Self { pgid }
    }

    /// Sends `SIGKILL` to every process of the group. A group that is already gone is fine.
    pub(crate) fn kill(&self) {
        if let Some(pgid) = self.pgid {
            match kill_process_group(pgid, Signal::KILL) {
                Ok(()) => tracing::debug!(pgid = pgid.as_raw_nonzero().get(), "group killed"),
                Err(rustix::io::Errno::SRCH) => {}
                Err(e) => tracing::warn!(error = %e, "killing a process group failed"),
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
