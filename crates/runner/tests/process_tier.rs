//! The process tier end to end: real `runner`, `oxydra-vm` and `shell-vm` processes under real
//! Landlock, a real WebSocket client, and the scripted model as the provider.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Chat, Setup, StopOnDrop, left_behind, respond};
use runner::RunnerMarker;
use types::ClientFrame;

/// A shell report for a command that failed (non-zero exit).
fn failed(report: &str) -> bool {
    report.starts_with("done: exit code ") && !report.starts_with("done: exit code 0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn two_users_chat_save_notes_stay_sandboxed_survive_a_crash_and_stop_cleanly() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice", "bob"]);
    let _guard = StopOnDrop(setup.config.clone());

    // Without --insecure the process tier refuses, and says what to pass.
    let out = setup.runner(&["start"]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --insecure"));

    let started = setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    assert!(
        started.contains("alice: running in the background"),
        "{started}"
    );
    assert!(
        started.contains("bob: running in the background"),
        "{started}"
    );
    let (alice_ws, bob_ws) = (setup.ws("alice"), setup.ws("bob"));
    std::fs::write(alice_ws.vault().join("k"), "sk-vault-secret").unwrap();
    std::fs::write(bob_ws.shared().join("secret.txt"), "bob's secret").unwrap();

    // A second start for a running user refuses and says where the running one is.
    let again = setup
        .runner(&["--insecure", "--user", "alice", "start"])
        .await;
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success());
    assert!(
        err.contains("alice is already running (runner pid"),
        "{err}"
    );

    let mut alice = Chat::connect(&setup, "alice", None).await;
    alice.save("Alice's favourite colour is teal").await;
    let mut bob = Chat::connect(&setup, "bob", None).await;
    bob.save("Bob plays chess on Sundays").await;

    // The shell sees shared/ and tmp/ only: not .oxydra/, not vault/, not another user.
    for cmd in [
        "cat ../.oxydra/memory.db",
        "ls ../.oxydra",
        "cp ../.oxydra/memory.db x",
        "cat ../vault/k",
        "cat ../../bob/shared/secret.txt",
        "ls ../../bob",
    ] {
        let report = alice.shell(cmd).await;
        assert!(failed(&report), "`{cmd}` should fail: {report}");
        assert!(!report.contains("sk-vault-secret") && !report.contains("bob's secret"));
    }
    assert!(!alice_ws.shared().join("x").exists());
    let report = alice.shell("echo ok > out.txt && cat out.txt").await;
    assert!(report.starts_with("done: exit code 0"), "{report}");
    assert_eq!(
        std::fs::read_to_string(alice_ws.shared().join("out.txt")).unwrap(),
        "ok\n"
    );

    // The file tools refuse .oxydra/ and other users' files.
    for path in [".oxydra/memory.db", "../bob/shared/secret.txt"] {
        let turn = alice.turn(&format!("read {path}")).await;
        assert_eq!(
            turn.tools,
            vec![("file_read".to_owned(), false)],
            "{path}: {turn:?}"
        );
    }

    // Notes never cross users.
    let found = bob.turn("search chess").await.message;
    assert!(found.contains("Bob plays chess"), "{found}");
    let found = alice.turn("search chess").await.message;
    assert!(!found.contains("Bob plays chess"), "{found}");

    // kill -9 of alice's oxydra-vm: the runner restarts it; history and notes are intact.
    let before = setup.gateway("alice").unwrap();
    let session = alice.session.clone();
    drop(alice);
    runner::signal(before.pid, rustix::process::Signal::KILL);
    let after = setup.wait_gateway("alice", Some(before.pid)).await;
    assert_ne!(after.pid, before.pid);
    // The runner records the new guest once it has seen it ready.
    let deadline = std::time::Instant::now() + common::WAIT;
    loop {
        let m: Option<RunnerMarker> =
            runner::read_json(&runner::runner_marker_path(&alice_ws)).unwrap_or(None);
        if m.is_some_and(|m| m.children["oxydra-vm"].pid == after.pid) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "runner.json not updated"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let status = setup.runner_ok(&["status", "--user", "alice"]).await;
    assert!(status.contains("restarts 1"), "{status}");
    assert!(status.contains(&after.url), "{status}");
    let mut alice = Chat::connect(&setup, "alice", Some(&session)).await;
    alice
        .send(&ClientFrame::GetHistory {
            session_id: session.clone(),
            before: None,
            limit: 50,
        })
        .await;
    let history = format!("{:?}", alice.recv().await);
    assert!(history.contains("favourite colour is teal"), "{history}");
    let found = alice.turn("search favourite colour").await.message;
    assert!(found.contains("teal"), "{found}");
    drop(alice);
    drop(bob);

    // stop leaves no process, socket or marker behind.
    let marker: RunnerMarker = runner::read_json(&runner::runner_marker_path(&alice_ws))
        .unwrap()
        .unwrap();
    let stopped = setup.runner_ok(&["stop"]).await;
    assert!(
        stopped.contains("alice: stopped") && stopped.contains("bob: stopped"),
        "{stopped}"
    );
    let mut pids = vec![marker.pid];
    pids.extend(marker.children.values().map(|c| c.pid));
    for pid in pids {
        assert!(!runner::is_alive(pid), "pid {pid} still alive");
    }
    for ws in [&alice_ws, &bob_ws] {
        assert_eq!(left_behind(ws), Vec::<String>::new());
    }
    let status = setup.runner_ok(&["status"]).await;
    assert_eq!(status, "alice  stopped\nbob  stopped\n");

    // The note is in alice's own database, found by the memory CLI after the stop.
    let hits = setup
        .runner_ok(&["--user", "alice", "memory", "search", "colour", "--json"])
        .await;
    assert!(hits.contains("favourite colour is teal"), "{hits}");
    assert!(alice_ws.default_memory_db().is_file());
    let logs = setup
        .runner_ok(&["--user", "alice", "logs", "--role", "oxydra-vm"])
        .await;
    assert!(logs.contains("oxydra-vm ready"), "{logs}");
}
