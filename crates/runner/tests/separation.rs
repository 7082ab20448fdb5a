//! User separation in the process tier, attacked from inside a user's shell as a prompt-injected
//! model would (through the real gateway, the model, `shell_exec` and the real shell daemon): a
//! runner started as root gives each user's guests their own uid with no capabilities, so the
//! shell cannot read `/etc/shadow`, reach the Docker socket, make a block device, drive another
//! user's shell daemon or read another user's workspace.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::os::unix::fs::MetadataExt;

use crate::common;

use common::{Chat, Setup, StopOnDrop, respond};
use test_support::Need;

/// A shell report for a command that failed (non-zero exit).
fn failed(report: &str) -> bool {
    report.starts_with("done: exit code ") && !report.starts_with("done: exit code 0")
}

/// A perl one-liner (perl is on every Debian host) that connects to `socket` and sends a
/// request without the secret, as another user's shell would; prints what comes back.
fn drive_socket(socket: &str, command: &str) -> String {
    format!(
        "perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die \
         \"connect: $!\\n\"; print $s qq({{\"id\":1,\"command\":\"{command}\"}}\\n); \
         print while <$s>; exit 3' {socket}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock and root"]
async fn a_users_shell_cannot_reach_root_files_docker_devices_or_another_user() {
    test_support::need(Need::Landlock);
    test_support::need(Need::Root);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice", "bob"]);
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let (alice_ws, bob_ws) = (setup.ws("alice"), setup.ws("bob"));
    std::fs::write(bob_ws.shared().join("secret.txt"), "bob's secret").unwrap();

    // Each workspace root is root's, in its user's own group, mode 0750; `.oxydra/` belongs to
    // the user's agent uid (see `owners.rs` for the shell's uid).
    let owner = |ws: &types::WorkspacePaths| {
        let root = std::fs::metadata(&ws.root).unwrap();
        let agent = std::fs::metadata(ws.internal()).unwrap();
        (root.uid(), root.gid(), root.mode() & 0o7777, agent.uid())
    };
    let ((_, alice_group, alice_mode, alice_uid), (_, bob_group, bob_mode, bob_uid)) =
        (owner(&alice_ws), owner(&bob_ws));
    assert_eq!(
        (owner(&alice_ws).0, alice_mode, bob_mode),
        (0, 0o750, 0o750)
    );
    assert!(alice_uid >= 1000 && bob_uid >= 1000 && alice_uid != bob_uid);
    assert!(alice_group != bob_group && alice_group == alice_uid);

    // Both guests run as their own uid in the user's group with no other groups, no
    // capabilities and no_new_privs.
    let marker: runner::RunnerMarker = runner::read_json(&runner::runner_marker_path(&alice_ws))
        .unwrap()
        .unwrap();
    let shell_pid = marker.children["shell-vm"].pid;
    let shell_uid = std::fs::metadata(format!("/proc/{shell_pid}"))
        .unwrap()
        .uid();
    assert!(shell_uid >= 1000 && shell_uid != alice_uid && shell_uid != bob_uid);
    for (role, child) in &marker.children {
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.pid)).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
                .unwrap_or_default()
        };
        let id = if role == "oxydra-vm" {
            alice_uid.to_string()
        } else {
            shell_uid.to_string()
        };
        let gid = alice_group.to_string();
        let zero = "0000000000000000";
        assert_eq!(
            [
                "Uid:",
                "Gid:",
                "Groups:",
                "CapInh:",
                "CapPrm:",
                "CapEff:",
                "CapBnd:",
                "CapAmb:",
                "NoNewPrivs:"
            ]
            .map(field),
            [
                format!("{id} {id} {id} {id}"),
                format!("{gid} {gid} {gid} {gid}"),
                String::new(),
                zero.into(),
                zero.into(),
                zero.into(),
                zero.into(),
                zero.into(),
                "1".into(),
            ],
            "{role}"
        );
    }

    let mut alice = Chat::connect(&setup, "alice", None).await;
    let report = alice.shell("id -u; id -G").await;
    assert_eq!(
        report,
        format!("done: exit code 0\n--- stdout ---\n{shell_uid}\n{alice_group}\n"),
    );

    let bob_socket = types::shell_socket_path(&bob_ws);
    let pwned = bob_ws.shared().join("pwned");
    let attacks = [
        "cat /etc/shadow".to_owned(),
        "curl -sS --max-time 5 --unix-socket /var/run/docker.sock http://docker/version".into(),
        "curl -sS --max-time 5 --unix-socket /run/docker.sock http://docker/containers/json".into(),
        "mknod blk b 8 0".into(),
        drive_socket(
            &bob_socket.display().to_string(),
            &format!("touch {}", pwned.display()),
        ),
        format!("cat {}", bob_ws.shared().join("secret.txt").display()),
        format!("ls {}", bob_ws.root.display()),
    ];
    for cmd in &attacks {
        let report = alice.shell(cmd).await;
        assert!(failed(&report), "`{cmd}` should fail: {report}");
        assert!(!report.contains("bob's secret"), "{report}");
        assert!(!report.contains("root:"), "{report}");
    }
    assert!(
        !pwned.exists(),
        "alice's shell ran a command in bob's shell"
    );
    assert!(!alice_ws.shared().join("blk").exists());

    // Bob's own agent still drives his shell.
    let mut bob = Chat::connect(&setup, "bob", None).await;
    let report = bob.shell("cat secret.txt").await;
    assert!(report.contains("bob's secret"), "{report}");
    setup.runner_ok(&["stop"]).await;
}

/// A runner started as an ordinary user says once what it cannot guarantee; every guest then
/// shares its uid and Landlock cannot stop a shell from connecting to another user's socket — the
/// shell secret alone keeps alice's shell from driving bob's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock and root"]
async fn without_root_the_runner_says_so_and_the_secret_alone_keeps_shells_apart() {
    test_support::need(Need::Landlock);
    test_support::need(Need::Root);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice", "bob"]);
    let _guard = StopOnDrop(setup.config.clone());
    // `nobody` owns the directory the runner works in, and runs it.
    let nobody = rustix::process::Uid::from_raw(65534);
    rustix::fs::chown(
        setup.dir.path(),
        Some(nobody),
        Some(rustix::process::Gid::from_raw(65534)),
    )
    .unwrap();
    let out = setup
        .runner_as_nobody(&["--insecure", "start", "--detach"])
        .await;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.matches("the runner is not running as root").count(),
        1,
        "{text}"
    );
    let (alice_ws, bob_ws) = (setup.ws("alice"), setup.ws("bob"));
    assert_eq!(std::fs::metadata(&bob_ws.root).unwrap().uid(), 65534);

    let mut alice = Chat::connect(&setup, "alice", None).await;
    let pwned = bob_ws.shared().join("pwned");
    let report = alice
        .shell(&drive_socket(
            &types::shell_socket_path(&bob_ws).display().to_string(),
            &format!("touch {}", pwned.display()),
        ))
        .await;
    assert!(failed(&report), "{report}");
    assert!(report.contains("not authenticated"), "{report}");
    assert!(
        !pwned.exists(),
        "alice's shell ran a command in bob's shell"
    );
    let refused = std::fs::read_to_string(runner::runner_log_path(&bob_ws, "shell-vm")).unwrap();
    assert!(refused.contains("connection refused"), "{refused}");
    // Alice's own agent still drives her shell.
    let report = alice.shell("echo mine > mine.txt").await;
    assert!(report.starts_with("done: exit code 0"), "{report}");
    assert!(alice_ws.shared().join("mine.txt").exists());
    // Without root no cgroup can hold the shell's processes: status says so (the degraded mode).
    let status = setup.runner_as_nobody(&["status"]).await;
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("processes  not tracked (the runner is not running as root)"),
        "{status}"
    );
}
