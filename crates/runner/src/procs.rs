//! Processes by pid: is it alive, is it what we think it is, signal it.

use rustix::process::{Pid, Signal};

fn pid_of(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// True while a process with this pid exists (zombies included) and may be signalled by us.
pub fn is_alive(pid: u32) -> bool {
    pid_of(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok()) && !is_zombie(pid)
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// True when `pid` is alive and its command line mentions `name` (guards against pid reuse).
pub fn looks_like(pid: u32, name: &str) -> bool {
    if !is_alive(pid) {
        return false;
    }
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(raw) => raw
            .split(|b| *b == 0)
            .any(|arg| arg.ends_with(name.as_bytes())),
        // No /proc: trust the pid.
        Err(_) => true,
    }
}

/// Sends `sig` to `pid`; false when there is no such process.
pub fn signal(pid: u32, sig: Signal) -> bool {
    pid_of(pid).is_some_and(|p| rustix::process::kill_process(p, sig).is_ok())
}
