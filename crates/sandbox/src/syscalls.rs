//! The system calls the shell may not make, refused with a seccomp filter ([`refuse_syscalls`]):
//! Landlock confines files, not these.
//!
//! - **New namespaces**: `unshare` and `clone` with any `CLONE_NEW*` flag, and `setns`. A user
//!   namespace makes the shell root of its own namespace, where mount, network and other
//!   namespaces open kernel code paths that have been a steady source of privilege escalations.
//! - **SysV IPC and POSIX message queues** (`shmget`/`shmat`/…, `msgget`/…, `semget`/…,
//!   `mq_open`/…): objects keyed in the host's IPC namespace, so in the process tier two users'
//!   shells could open a channel Landlock does not see.
//!
//! Both are refused with `EPERM`, so a command fails as it would without the privilege, and the
//! daemon goes on. `clone3` passes its flags in memory a filter cannot read, so it answers
//! `ENOSYS`, and the C library falls back to `clone`, whose flags the filter does read.
//!
//! On x86-64 the same calls are refused by their x32 numbers too. The filter is installed on the
//! calling thread after Landlock, with `no_new_privs` already set by Landlock; every thread and
//! process started from it afterwards inherits it.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::SandboxError;

/// The `CLONE_NEW*` flags `clone` takes in its first argument.
const CLONE_NEW: [u64; 7] = [
    0x0002_0000, // CLONE_NEWNS
    0x0200_0000, // CLONE_NEWCGROUP
    0x0400_0000, // CLONE_NEWUTS
    0x0800_0000, // CLONE_NEWIPC
    0x1000_0000, // CLONE_NEWUSER
    0x2000_0000, // CLONE_NEWPID
    0x4000_0000, // CLONE_NEWNET
];

/// `CLONE_NEWTIME`: `unshare` only (in `clone` the bit is part of the exit signal).
const CLONE_NEWTIME: u64 = 0x80;

/// The x32 ABI's bit in a system call number (x86-64 only).
#[cfg(target_arch = "x86_64")]
const X32: i64 = 0x4000_0000;

/// Refused outright with `EPERM`.
const REFUSED: [i64; 16] = [
    libc::SYS_setns,
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_shmdt,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
    libc::SYS_mq_open,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_unlink,
];

/// Installs the filter of the module doc on the calling thread (and what it starts from now
/// on). Irreversible.
pub fn refuse_syscalls() -> Result<(), SandboxError> {
    for program in programs().map_err(SandboxError::Seccomp)? {
        seccompiler::apply_filter(&program).map_err(SandboxError::Seccomp)?;
    }
    Ok(())
}

/// The two filters: `EPERM` for what is refused, `ENOSYS` for `clone3`.
fn programs() -> Result<Vec<BpfProgram>, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let flag_rule = |flag: u64| {
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .and_then(|c| SeccompRule::new(vec![c]))
    };
    let clone_rules = CLONE_NEW
        .into_iter()
        .map(flag_rule)
        .collect::<Result<Vec<_>, _>>()?;
    let mut unshare_rules = clone_rules.clone();
    unshare_rules.push(flag_rule(CLONE_NEWTIME)?);
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in REFUSED {
        refused.insert(nr, Vec::new());
    }
    refused.insert(libc::SYS_clone, clone_rules);
    refused.insert(libc::SYS_unshare, unshare_rules);
    let mut clone3: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    #[cfg(target_arch = "x86_64")]
    {
        for map in [&mut refused, &mut clone3] {
            let x32: Vec<(i64, Vec<SeccompRule>)> = map
                .iter()
                .map(|(nr, rules)| (nr | X32, rules.clone()))
                .collect();
            map.extend(x32);
        }
    }
    let filter = |rules, errno: i32| {
        SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno.unsigned_abs()),
            arch,
        )
        .and_then(BpfProgram::try_from)
    };
    Ok(vec![
        filter(refused, libc::EPERM)?,
        filter(clone3, libc::ENOSYS)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_filters_compile_for_this_machine() {
        let programs = programs().unwrap();
        assert_eq!(programs.len(), 2);
        assert!(programs.iter().all(|p| !p.is_empty()));
    }
}
