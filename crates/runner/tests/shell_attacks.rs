//! The shell attacks the processes above it, as a prompt-injected model would: from inside the
//! shell (commands run through `shell_exec`), it plants symbolic links, a hard link, FIFOs and
//! directories at every name the runner or `oxydra-vm` writes (or used to write) in `ipc/` and
//! `logs/`, tries to swap those directories themselves for links or its own, then the guests are killed so everything is written again (the runner restarts
//! them, reopens their logs; `oxydra-vm` writes its health and endpoint files). Afterwards no file
//! outside its place has changed — a sentinel on the host that the links point at, a file the
//! hard link shares — the memory database passes `PRAGMA integrity_check` with its notes, and
//! nothing hung on a FIFO. Both tiers: the process tier under Landlock and the container tier.
//!
//! On the code before the fix each of these fails: the health writer truncated `memory.db`
//! through `ipc/health.json.tmp`, the runner appended the guests' output to the sentinel through
//! `logs/oxydra-vm.log`, and `oxydra-vm` blocked forever opening the FIFO `ipc/gateway.json.tmp`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;
use crate::common::container;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Chat, Setup, StopOnDrop, respond};
use container::{ContainersOnDrop, container_setup, docker, inspect, name, prepare, wait_running};
use runner::RunnerMarker;
use types::WorkspacePaths;

const SENTINEL: &str = "the operator's file; nothing may write here\n";
const OWN: &str = "a file the shell owns\n";

/// The shell script that plants every trap, for a workspace the shell sees at `w`.
fn plant(w: &str, sentinel: &Path) -> String {
    let s = sentinel.display();
    [
        // The original escape: the health file's temporary name links to the memory database.
        format!("ln -sf ../.oxydra/memory.db {w}/ipc/health.json.tmp"),
        format!("ln -sf ../.oxydra/memory.db {w}/ipc/health.json"),
        // A FIFO where the endpoint's temporary file was created: an open for writing blocks.
        format!("rm -f {w}/ipc/gateway.json.tmp && mkfifo {w}/ipc/gateway.json.tmp"),
        // A directory where the public endpoint is renamed to.
        format!("rm -f {w}/ipc/gateway.json && mkdir {w}/ipc/gateway.json"),
        format!("ln -sf {s} {w}/ipc/shell.sock.tmp"),
        // The logs the runner used to reopen for appending, and their rotated names.
        format!("ln -sf {s} {w}/logs/oxydra-vm.log"),
        format!("ln -sf {s} {w}/logs/oxydra-vm.log.1"),
        format!("ln -sf {s} {w}/logs/runner.log"),
        format!("echo '{}' > {w}/logs/own.txt", OWN.trim_end()),
        format!("ln -f {w}/logs/own.txt {w}/logs/shell-vm.log"),
        format!("rm -f {w}/logs/shell-vm.log.1 && mkfifo {w}/logs/shell-vm.log.1"),
        format!("ls -la {w}/ipc {w}/logs"),
    ]
    .join(" && ")
}

/// The shell tries to swap the directories themselves (`ipc/`, `logs/`) for its own or for links;
/// the design relies on this failing: the workspace root is writable by no guest. (The targets are
/// in the workspace root, so no copy fallback of `mv` can empty a directory either.)
fn swap(w: &str) -> String {
    format!(
        "rmdir {w}/logs; mv {w}/logs {w}/logs.old; mv {w}/ipc {w}/ipc.old; \
         ln -s /etc {w}/sideways; true"
    )
}

/// `ipc/` and `logs/` are still the workspace's own directories after [`swap`].
fn assert_not_swapped(ws: &WorkspacePaths) {
    for dir in [ws.ipc(), ws.logs()] {
        let meta = std::fs::symlink_metadata(&dir).unwrap();
        assert!(meta.is_dir(), "{} was replaced", dir.display());
    }
    for name in ["logs.old", "ipc.old", "sideways"] {
        assert!(
            std::fs::symlink_metadata(ws.root.join(name)).is_err(),
            "{name}"
        );
    }
}

/// What each tier must leave intact after the attack.
fn assert_nothing_escaped(ws: &WorkspacePaths, sentinel: &Path) {
    assert_eq!(std::fs::read_to_string(sentinel).unwrap(), SENTINEL);
    assert_eq!(
        std::fs::read_to_string(ws.logs().join("own.txt")).unwrap(),
        OWN
    );
    // The traps are still where the shell put them: nothing wrote through or replaced them.
    let link = std::fs::read_link(ws.logs().join("oxydra-vm.log")).unwrap();
    assert_eq!(link, sentinel);
    // The runner's copies of the guests' output are in its own directory.
    let log = runner::runner_log_path(ws, "oxydra-vm");
    assert!(
        std::fs::symlink_metadata(&log)
            .unwrap()
            .file_type()
            .is_file(),
        "{}",
        log.display()
    );
}

/// `PRAGMA integrity_check` of the user's memory database, or what went wrong opening it.
async fn integrity(ws: &WorkspacePaths) -> String {
    let check = async {
        let db = libsql::Builder::new_local(ws.default_memory_db())
            .build()
            .await?;
        let conn = db.connect()?;
        let mut rows = conn.query("PRAGMA integrity_check", ()).await?;
        match rows.next().await? {
            Some(row) => row.get::<String>(0),
            None => Ok("no answer".to_owned()),
        }
    };
    check.await.unwrap_or_else(|e: libsql::Error| e.to_string())
}

/// The memory database is still a database file (not overwritten by something else).
fn assert_still_a_database(ws: &WorkspacePaths) {
    let bytes = std::fs::read(ws.default_memory_db()).unwrap();
    assert!(
        bytes.starts_with(b"SQLite format 3\0"),
        "memory.db was overwritten: {:?}",
        String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
    );
}

/// Runs `echo ok` until the shell answers (after its restart).
async fn wait_shell(chat: &mut Chat) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let report = chat.shell("echo ok").await;
        if report.starts_with("done: exit code 0") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the shell does not work again: {report}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A host file outside every workspace, for the links to point at.
fn sentinel(setup: &Setup) -> std::path::PathBuf {
    let path = setup.dir.path().join("sentinel.txt");
    std::fs::write(&path, SENTINEL).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn process_tier_links_fifos_and_hard_links_planted_by_the_shell_are_never_followed() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let sentinel = sentinel(&setup);
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let ws = setup.ws("alice");
    let mut chat = Chat::connect(&setup, "alice", None).await;
    chat.save("Alice keeps the spare key under the blue pot")
        .await;
    // A stop checkpoints the database: the note is in memory.db itself, not only in its WAL.
    drop(chat);
    setup.runner_ok(&["stop"]).await;
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;

    let w = ws.root.display().to_string();
    chat.shell(&swap(&w)).await;
    assert_not_swapped(&ws);
    let report = chat.shell(&plant(&w, &sentinel)).await;
    assert!(report.starts_with("done: exit code 0"), "{report}");
    drop(chat);

    // Both guests crash: the runner reopens their logs, oxydra-vm writes its files again.
    let marker: RunnerMarker = runner::read_json(&runner::runner_marker_path(&ws))
        .unwrap()
        .unwrap();
    let old = setup.gateway("alice").unwrap();
    for child in marker.children.values() {
        runner::signal(child.pid, rustix::process::Signal::KILL);
    }
    setup.wait_gateway("alice", Some(old.pid)).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    wait_shell(&mut chat).await;
    assert_still_a_database(&ws);
    assert_eq!(integrity(&ws).await, "ok");
    let found = chat.turn("search spare key").await.message;
    assert!(found.contains("blue pot"), "{found}");
    let status = setup.runner_ok(&["status"]).await;
    assert!(status.contains("health"), "{status}");
    drop(chat);

    let logs = setup
        .runner_ok(&["logs", "--role", "oxydra-vm", "--lines", "50"])
        .await;
    assert!(logs.contains("oxydra-vm ready"), "{logs}");
    setup.runner_ok(&["stop"]).await;
    assert_nothing_escaped(&ws, &sentinel);
    assert_eq!(integrity(&ws).await, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn container_tier_links_fifos_and_hard_links_planted_by_the_shell_are_never_followed() {
    test_support::need(test_support::Need::Docker);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("alice", "")]);
    let _guard = ContainersOnDrop::new(&setup, &["alice"]);
    let sentinel = sentinel(&setup);
    container::start(&setup).await;
    let ws = setup.ws("alice");
    let mut chat = Chat::connect(&setup, "alice", None).await;
    chat.save("Alice keeps the spare key under the blue pot")
        .await;
    // A stop checkpoints the database: the note is in memory.db itself, not only in its WAL.
    drop(chat);
    container::runner_env_ok(&setup, &["stop"], &[]).await;
    container::start(&setup).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;

    // The links name the sentinel's host path: harmless inside the container, an escape for
    // whoever follows them on the host.
    chat.shell(&swap("/workspace/alice")).await;
    assert_not_swapped(&ws);
    let report = chat.shell(&plant("/workspace/alice", &sentinel)).await;
    assert!(report.starts_with("done: exit code 0"), "{report}");
    drop(chat);

    let old = setup.gateway("alice").unwrap();
    for role in ["oxydra-vm", "shell-vm"] {
        let container = name(&setup, "alice", role);
        let before = inspect(&container).await.unwrap();
        let id = before["Id"].as_str().unwrap().to_owned();
        let at = before["State"]["StartedAt"].as_str().unwrap().to_owned();
        assert!(docker(&["kill", &container]).await.status.success());
        wait_running(&container, Some((&id, &at)), Duration::from_secs(60)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut chat = loop {
        if let Some(m) = setup.gateway("alice")
            && m.started_at != old.started_at
            && tokio::net::TcpStream::connect(m.socket_addr().unwrap())
                .await
                .is_ok()
        {
            break Chat::connect(&setup, "alice", None).await;
        }
        assert!(Instant::now() < deadline, "no new gateway");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    wait_shell(&mut chat).await;
    assert_still_a_database(&ws);
    assert_eq!(integrity(&ws).await, "ok");
    let found = chat.turn("search spare key").await.message;
    assert!(found.contains("blue pot"), "{found}");
    drop(chat);

    let logs = container::runner_env_ok(
        &setup,
        &["logs", "--role", "oxydra-vm", "--lines", "50"],
        &[],
    )
    .await
    .0;
    assert!(logs.contains("oxydra-vm ready"), "{logs}");
    container::runner_env_ok(&setup, &["stop"], &[]).await;
    assert_nothing_escaped(&ws, &sentinel);
    assert_eq!(integrity(&ws).await, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn a_memory_database_where_the_shell_can_write_is_refused() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let agent = setup.dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&agent).unwrap();
    text.push_str("[memory]\ndb_path = \"shared/memory.db\"\n");
    std::fs::write(&agent, text).unwrap();
    let out = setup.runner(&["--insecure", "start", "--detach"]).await;
    let said = format!(
        "{}{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(runner::runner_log_path(&setup.ws("alice"), "oxydra-vm"))
            .unwrap_or_default()
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("not in .oxydra/"), "{said}");
    assert!(!setup.ws("alice").shared().join("memory.db").exists());
}
