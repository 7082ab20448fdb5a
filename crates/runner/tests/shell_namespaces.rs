//! The shells get no new namespaces and no SysV IPC, in both tiers, from inside the shell as the
//! runner launched it (driven through `shell_exec`). Process tier: `unshare -U true` fails and the
//! probe below finds every call refused. Container tier: from inside each user's shell container, `unshare` of a user, mount, network or IPC
//! namespace fails (the shell-vm's seccomp filter, and Docker's default profile under it), and
//! alice's and bob's shells sit in IPC namespaces of their own, distinct from each other and from
//! the host's, so SysV shared memory cannot be a channel between them; and a small static probe
//! (built here with `cc -static`, run from `shared/`) finds `shmget`, `msgget`, `semget` and
//! `unshare(CLONE_NEWUSER)` refused with `EPERM` by the filter, which Docker's profile alone would
//! allow for SysV IPC. An ordinary command works.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common::container;
use crate::common::container::{ContainersOnDrop, container_setup, inspect, name, prepare};
use crate::common::{Chat, Setup, StopOnDrop, respond};

/// Each call, and `ok` or the errno it failed with.
const PROBE: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
static void show(const char *name, int r) {
    if (r < 0) printf("%s=%d ", name, errno); else printf("%s=ok ", name);
}
int main(void) {
    show("shmget", shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600));
    show("msgget", msgget(IPC_PRIVATE, IPC_CREAT | 0600));
    show("semget", semget(IPC_PRIVATE, 1, IPC_CREAT | 0600));
    show("unshare", unshare(CLONE_NEWUSER));
    puts("");
    return 0;
}
"#;

/// The probe, built static into `shared/` (it runs in an image without a C library of its own).
fn build_probe(shared: &std::path::Path) {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("probe.c");
    std::fs::write(&source, PROBE).unwrap();
    let out = std::process::Command::new("cc")
        .args(["-static", "-O1", "-o"])
        .arg(shared.join("ipc-probe"))
        .arg(&source)
        .output()
        .expect("cc runs (the Rust toolchain links with it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts the probe's report shows every call refused with `EPERM`.
fn assert_refused(user: &str, report: &str) {
    let eperm = libc_eperm();
    for call in ["shmget", "msgget", "semget", "unshare"] {
        assert!(
            report.contains(&format!("{call}={eperm} ")),
            "{user}: {call} not refused with EPERM: {report}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn process_tier_shells_get_no_namespaces_and_no_sysv_ipc() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    let report = chat.shell("unshare -U true").await;
    assert!(!report.starts_with("done: exit code 0"), "{report}");
    build_probe(&setup.ws("alice").shared());
    let report = chat.shell("./ipc-probe").await;
    assert_refused("alice", &report);
    let report = chat.shell("echo still works").await;
    assert!(report.contains("still works"), "{report}");
    drop(chat);
    setup.runner_ok(&["stop"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn container_shells_get_no_namespaces_and_no_shared_ipc() {
    test_support::need(test_support::Need::Docker);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("alice", ""), ("bob", "")]);
    let _guard = ContainersOnDrop::new(&setup, &["alice", "bob"]);
    container::start(&setup).await;
    let mut ipc = Vec::new();
    for user in ["alice", "bob"] {
        let mut chat = Chat::connect(&setup, user, None).await;
        for flag in ["-U", "-r", "-m", "-n", "-i"] {
            let report = chat.shell(&format!("unshare {flag} true")).await;
            assert!(
                !report.starts_with("done: exit code 0"),
                "{user}: unshare {flag}: {report}"
            );
        }
        let report = chat.shell("readlink /proc/self/ns/ipc").await;
        assert!(report.starts_with("done: exit code 0"), "{report}");
        let ns = report
            .split_whitespace()
            .find(|w| w.contains("ipc:["))
            .unwrap_or_else(|| panic!("{report}"))
            .to_owned();
        ipc.push(ns);
        let shell = inspect(&name(&setup, user, "shell-vm")).await.unwrap();
        let mode = shell["HostConfig"]["IpcMode"].as_str().unwrap_or_default();
        assert!(
            mode == "private" || mode == "shareable",
            "{user}: IpcMode {mode}"
        );
        build_probe(&setup.ws(user).shared());
        let report = chat.shell("./ipc-probe").await;
        assert_refused(user, &report);
        let report = chat.shell("echo still works").await;
        assert!(report.contains("still works"), "{report}");
    }
    let host = std::fs::read_link("/proc/self/ns/ipc").unwrap();
    let host = host.to_string_lossy();
    assert_ne!(ipc[0], ipc[1], "alice and bob share an IPC namespace");
    assert!(
        ipc.iter().all(|ns| !ns.contains(host.as_ref())),
        "a shell shares the host's IPC namespace: {ipc:?} vs {host}"
    );
    container::runner_env_ok(&setup, &["stop"], &[]).await;
}

/// `EPERM` (1 on Linux).
fn libc_eperm() -> i32 {
    rustix::io::Errno::PERM.raw_os_error()
}
