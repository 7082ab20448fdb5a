//! From inside the shell (the real `shell-vm`, Landlock and its seccomp filter), as a command
//! would try it: a user namespace and the other new namespaces (`unshare`), and SysV shared
//! memory, message queues and semaphores (raw system calls from perl) — a channel between users'
//! shells that Landlock does not see. Each is refused with `EPERM`; ordinary commands, pipes and
//! background jobs still work.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use crate::common::Daemon;

/// A perl one-liner making system call `nr` with `args`, printing `refused <errno>` or `got <r>`.
fn raw_syscall(nr: i64, args: &str) -> String {
    format!("perl -e '$r = syscall({nr}, {args}); print $r < 0 ? \"refused \".($!+0) : \"got $r\"'")
}

#[test]
#[ignore = "needs landlock"]
fn the_shell_gets_no_namespaces_and_no_sysv_ipc() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    for flag in ["-U", "-r", "-m", "-n", "-i", "-p -f", "-u", "-C"] {
        let run = d.run(&format!("unshare {flag} true"));
        assert_ne!(run.code(), Some(0), "unshare {flag}: {run:?}");
        assert!(
            run.stderr.contains("Operation not permitted"),
            "unshare {flag}: {run:?}"
        );
    }
    let eperm = format!("refused {}", libc::EPERM);
    let ipc_private_create = "0, 4096, 01600";
    let mut calls = vec![
        (libc::SYS_shmget, ipc_private_create),
        (libc::SYS_msgget, "0, 01600"),
        (libc::SYS_semget, "0, 1, 01600"),
        (libc::SYS_unshare, "0x10000000"),
        (libc::SYS_setns, "0, 0"),
        // clone(CLONE_NEWUSER | SIGCHLD) as fork would make it.
        (libc::SYS_clone, "0x10000011, 0, 0, 0, 0"),
    ];
    #[cfg(target_arch = "x86_64")]
    let x32 = [
        libc::SYS_shmget | 0x4000_0000,
        libc::SYS_unshare | 0x4000_0000,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.push((x32[0], ipc_private_create));
    for (nr, args) in &calls {
        let run = d.run(&raw_syscall(*nr, args));
        assert_eq!(run.code(), Some(0), "{nr}: {run:?}");
        assert!(
            run.stdout.starts_with("refused"),
            "syscall {nr}({args}): {run:?}"
        );
        #[cfg(target_arch = "x86_64")]
        if x32.contains(nr) {
            continue; // ENOSYS where the kernel has no x32; refused either way.
        }
        assert_eq!(run.stdout, eperm, "syscall {nr}({args}): {run:?}");
    }
    // clone3 passes its flags in memory the filter cannot read: it is not there at all.
    let run = d.run(&raw_syscall(libc::SYS_clone3, "0, 0"));
    assert_eq!(
        run.stdout,
        format!("refused {}", libc::ENOSYS),
        "clone3: {run:?}"
    );
    // Everything ordinary still works: processes, pipes, background jobs, perl's own fork.
    let run =
        d.run("echo ok | cat; sleep 0.01 & wait; perl -e 'fork or exit; wait; print \"forked\"'");
    assert_eq!(run.code(), Some(0), "{run:?}");
    assert_eq!(run.stdout, "ok\nforked", "{run:?}");
}
