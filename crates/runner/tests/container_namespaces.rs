//! The container tier's shells get no new namespaces and share no IPC: from inside each user's
//! shell container (driven through `shell_exec`), `unshare` of a user, mount, network or IPC
//! namespace fails (the shell-vm's seccomp filter, and Docker's default profile under it), and
//! alice's and bob's shells sit in IPC namespaces of their own, distinct from each other and from
//! the host's, so SysV shared memory cannot be a channel between them; an ordinary command works.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common::container;
use crate::common::container::{ContainersOnDrop, container_setup, inspect, name, prepare};
use crate::common::{Chat, respond};

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
