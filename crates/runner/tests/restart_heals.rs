//! Restarts that heal, and a shell whose processes all end with it (process tier). From inside
//! the shell (commands run through `shell_exec`, as a prompt-injected model would) the attacker
//! plants a directory where the shell's socket goes, takes every permission away from `ipc/`,
//! the workspace root, `shared/`, `.oxydra/` and the files in it, then its daemon (or the agent)
//! is killed with SIGKILL: the runner restores what it owns before the restart, the agent comes
//! back, and `runner status` says what was repaired. Commands that left their session
//! (`setsid -f`, a double fork) are listed by `status` and end with `runner stop`; one that
//! keeps closing `ipc/` cannot keep the agent from starting. While both guests run, the runner
//! also heals every few seconds: a shell that removes its own socket, or closes `shared/` on
//! itself, is back without a crash.
//!
//! On the code before the fix each case fails: the runner gave up after six failed restarts, and
//! the detached processes outlived `stop`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Chat, Setup, StopOnDrop, respond};
use runner::RunnerMarker;
use rustix::process::Signal;

/// A shell report for a command that succeeded.
fn succeeded(report: &str) -> bool {
    report.starts_with("done: exit code 0")
}

/// The pid of `role` from the runner's marker.
fn guest_pid(setup: &Setup, role: &str) -> u32 {
    let marker: RunnerMarker = runner::read_json(&runner::runner_marker_path(&setup.ws("alice")))
        .unwrap()
        .unwrap();
    marker.children[role].pid
}

/// Runs `attack` in alice's shell. With separate owners (a root runner) the shell may no longer
/// change what the agent keeps — `owners.rs` proves that refusal — so where the shell is refused
/// the test does the same damage as root from the shell's directory, standing in for a runner
/// not started as root (whose shell shares the agent's uid, see
/// `without_root_a_workspace_root_the_shell_closed_does_not_fail_the_next_start`): the healing
/// under test must undo it either way.
async fn damage(chat: &mut Chat, setup: &Setup, attack: &str) {
    let report = chat.shell(attack).await;
    if !succeeded(&report) {
        assert!(
            report.contains("Operation not permitted") || report.contains("Permission denied"),
            "{attack}: {report}"
        );
        let shared = setup.ws("alice").dir(types::WorkspaceDir::Shared);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(attack)
            .current_dir(&shared)
            .output()
            .unwrap();
        assert!(out.status.success(), "{attack} as root: {out:?}");
    }
}

/// Runs `echo ok` until the shell answers again.
async fn wait_shell(chat: &mut Chat) {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let report = chat.shell("echo ok").await;
        if succeeded(&report) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the shell does not work again: {report}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// `runner status` once it mentions `needle` (a repair is in the marker from when it is made,
/// before the guest restarts; a stray is listed once it has left the shell's command).
async fn status_saying(setup: &Setup, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let status = setup.runner_ok(&["status"]).await;
        if status.contains(needle) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "status does not say {needle:?}: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The scripted model, and alice's agent started in the background under Landlock (stopped
/// when the guard drops).
async fn started() -> (test_support::ScriptedLlm, Setup, StopOnDrop) {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    (server, setup, guard)
}

/// Starts alice, has her shell run `attack`, kills `victim` with SIGKILL, and checks that the
/// agent and its shell come back (a note saved before is found) and that `status` names
/// `repaired` among its repairs. Returns the status.
async fn attack_then_kill(attack: &str, victim: Option<&str>, repaired: &str) -> String {
    let (_server, setup, _guard) = started().await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    chat.save("Alice keeps the spare key under the blue pot")
        .await;
    damage(&mut chat, &setup, attack).await;
    let old = setup.gateway("alice").unwrap();
    if let Some(victim) = victim {
        runner::signal(guest_pid(&setup, victim), Signal::KILL);
    }
    let mut chat = if victim == Some("oxydra-vm") {
        drop(chat);
        setup.wait_gateway("alice", Some(old.pid)).await;
        Chat::connect(&setup, "alice", None).await
    } else {
        chat
    };
    wait_shell(&mut chat).await;
    let report = chat.shell("echo again > again.txt && cat again.txt").await;
    assert!(report.contains("again"), "{report}");
    let found = chat.turn("search spare key").await.message;
    assert!(found.contains("blue pot"), "{found}");
    drop(chat);
    let status = status_saying(&setup, repaired).await;
    assert!(status.contains("repaired"), "{status}");
    let log = std::fs::read_to_string(runner::runner_log_path(&setup.ws("alice"), "runner"))
        .unwrap_or_default();
    assert!(log.contains(repaired), "the runner's log: {log}");
    setup.runner_ok(&["stop"]).await;
    // A later start finds nothing to repair and works as before.
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    wait_shell(&mut chat).await;
    drop(chat);
    setup.runner_ok(&["stop"]).await;
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn a_directory_planted_at_the_shell_socket_is_moved_aside_and_the_shell_comes_back() {
    test_support::need(test_support::Need::Landlock);
    let status = attack_then_kill(
        "rm -f ../ipc/shell.sock && mkdir ../ipc/shell.sock && echo kept > ../ipc/shell.sock/evidence",
        Some("shell-vm"),
        "ipc/shell.sock",
    )
    .await;
    assert!(status.contains("moved aside"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn ipc_with_no_permissions_is_restored_at_the_shells_restart() {
    test_support::need(test_support::Need::Landlock);
    attack_then_kill("chmod 0 ../ipc", Some("shell-vm"), "ipc/").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn a_workspace_root_with_no_permissions_is_restored_at_the_shells_restart() {
    test_support::need(test_support::Need::Landlock);
    attack_then_kill("chmod 0 ..", Some("shell-vm"), "workspace root").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn shared_with_no_permissions_is_restored_at_the_shells_restart() {
    test_support::need(test_support::Need::Landlock);
    attack_then_kill("chmod 0 ../shared", Some("shell-vm"), "shared/").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn the_agents_files_with_no_permissions_are_restored_at_its_restart() {
    test_support::need(test_support::Need::Landlock);
    attack_then_kill(
        "chmod 0 ../.oxydra/memory.db ../.oxydra/gateway.token ../.oxydra",
        Some("oxydra-vm"),
        ".oxydra/memory.db",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn a_workspace_locked_up_before_a_stop_does_not_fail_the_next_start() {
    test_support::need(test_support::Need::Landlock);
    let (_server, setup, _guard) = started().await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    chat.save("Alice keeps the spare key under the blue pot")
        .await;
    let w = setup.ws("alice").root.display().to_string();
    let attack = format!(
        "cd {w} && chmod 0 .oxydra/memory.db .oxydra/gateway.token .oxydra ipc logs shared {w}"
    );
    damage(&mut chat, &setup, &attack).await;
    drop(chat);
    setup.runner_ok(&["stop"]).await;
    let started = setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    assert!(started.contains("running in the background"), "{started}");
    let mut chat = Chat::connect(&setup, "alice", None).await;
    wait_shell(&mut chat).await;
    let found = chat.turn("search spare key").await.message;
    assert!(found.contains("blue pot"), "{found}");
    drop(chat);
    let status = setup.runner_ok(&["status"]).await;
    for repaired in [
        "the workspace root had mode 000",
        ".oxydra/ had mode 000",
        "shared/ had mode ",
        "ipc/ had mode ",
        "logs/ had mode ",
        ".oxydra/memory.db had mode 000",
    ] {
        assert!(status.contains(repaired), "{repaired}: {status}");
    }
    setup.runner_ok(&["stop"]).await;
}

/// `runner ARGS...` as `nobody` (a runner not started as root); its output, which must say it
/// succeeded.
async fn as_nobody(setup: &Setup, args: &[&str]) -> String {
    let out = setup.runner_as_nobody(args).await;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "runner {args:?} as nobody: {text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock and root"]
async fn without_root_a_workspace_root_the_shell_closed_does_not_fail_the_next_start() {
    test_support::need(test_support::Need::Landlock);
    test_support::need(test_support::Need::Root);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let nobody = (
        Some(rustix::process::Uid::from_raw(65534)),
        Some(rustix::process::Gid::from_raw(65534)),
    );
    rustix::fs::chown(setup.dir.path(), nobody.0, nobody.1).unwrap();
    as_nobody(&setup, &["--insecure", "start", "--detach"]).await;
    // A stop finds the markers again (it stopped nothing and failed before).
    let mut chat = Chat::connect(&setup, "alice", None).await;
    let report = chat.shell("chmod 0 ..").await;
    assert!(succeeded(&report), "{report}");
    drop(chat);
    let stopped = as_nobody(&setup, &["stop"]).await;
    assert!(stopped.contains("alice: stopped (runner pid"), "{stopped}");
    assert!(
        stopped.contains("repaired: the workspace root had mode 000"),
        "{stopped}"
    );
    // The runner dies (a reboot) while the root is closed: the next start heals it.
    as_nobody(&setup, &["--insecure", "start", "--detach"]).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    let report = chat.shell("chmod 0 ..").await;
    assert!(succeeded(&report), "{report}");
    drop(chat);
    let marker: RunnerMarker = runner::read_json(&runner::runner_marker_path(&setup.ws("alice")))
        .unwrap()
        .unwrap();
    let pids: Vec<u32> = marker
        .children
        .values()
        .map(|c| c.pid)
        .chain([marker.pid])
        .collect();
    for pid in &pids {
        runner::signal(*pid, Signal::KILL);
    }
    // Gone, as after a reboot (a gateway still dying could answer the start's readiness probe).
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|p| runner::is_alive(*p)) {
        assert!(Instant::now() < deadline, "not killed: {pids:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = as_nobody(&setup, &["--insecure", "start", "--detach"]).await;
    assert!(
        started.contains("repaired: the workspace root had mode 000"),
        "{started}"
    );
    let mut chat = Chat::connect(&setup, "alice", None).await;
    wait_shell(&mut chat).await;
    drop(chat);
    as_nobody(&setup, &["stop"]).await;
}

/// `<prefix>.<this test process's pid><a counter>`: an argument no other run uses.
fn unique(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}.{}{n}", std::process::id())
}

/// A detached loop that keeps `ipc/` closed to everyone (its owner included), which no shell
/// started after it could bind its socket in; `tag` is in its command line. The script returns
/// once the loop runs in its own session: `setsid -f` returns before its child has left the
/// command's process group, and a command that ended at once could take the loop with it.
fn loop_script(tag: &str) -> String {
    format!(
        "setsid -f sh -c 'touch {tag}.started; while true; do chmod 0 ../ipc; sleep 0.05; done; \
         echo {tag}' </dev/null >/dev/null 2>&1; i=0; \
         while [ ! -e {tag}.started ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn a_shell_that_removes_its_own_socket_is_restarted_without_crashing() {
    test_support::need(test_support::Need::Landlock);
    attack_then_kill(
        "rm -f ../ipc/shell.sock && mkdir ../ipc/shell.sock",
        None,
        "ipc/shell.sock",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn shared_with_no_permissions_is_restored_while_the_shell_runs() {
    test_support::need(test_support::Need::Landlock);
    attack_then_kill("chmod 0 .", None, "shared/ had mode ").await;
}

/// Pids of host processes whose command line holds `needle`.
fn pids_running(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}

/// Waits until no host process runs `needle` (a process killed a moment ago may take a while to
/// go); the pids still running after the wait.
async fn gone(needle: &str) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = pids_running(needle);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn processes_that_leave_the_shells_session_are_listed_and_end_with_stop() {
    test_support::need(test_support::Need::Landlock);
    let (_server, setup, _guard) = started().await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    // Numbers no other run uses, so processes of an earlier run (of the code before the fix)
    // cannot be mistaken for these.
    let (one, two) = (unique("7771"), unique("7772"));
    let looper = unique("looping");
    let attack = format!(
        "setsid -f sleep {one} </dev/null >/dev/null 2>&1; \
         (setsid sleep {two} </dev/null >/dev/null 2>&1 &); {}; sleep 0.5; echo planted",
        loop_script(&looper)
    );
    let report = chat.shell(&attack).await;
    assert!(succeeded(&report), "{report}");
    drop(chat);
    let deadline = Instant::now() + Duration::from_secs(10);
    let (sleeper, forked) = loop {
        let (a, b) = (pids_running(&one), pids_running(&two));
        if a.len() == 1 && b.len() == 1 {
            break (a[0], b[0]);
        }
        assert!(Instant::now() < deadline, "not started: {a:?} {b:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // The shell's command ended, but these did not: status lists them.
    let status = status_saying(&setup, &sleeper.to_string()).await;
    assert!(status.contains(&forked.to_string()), "{status}");
    assert!(status.contains("stray"), "{status}");
    // The guests themselves (and what they run) are not strays.
    assert!(
        !status.contains("(shell-vm)") && !status.contains("(oxydra-vm)"),
        "{status}"
    );

    setup.runner_ok(&["stop"]).await;
    assert_eq!(gone(&one).await, Vec::<u32>::new());
    assert_eq!(gone(&two).await, Vec::<u32>::new());
    assert_eq!(gone(&looper).await, Vec::<u32>::new());
    let status = setup.runner_ok(&["status"]).await;
    assert_eq!(status, "alice  stopped\n");

    // What the loop left does not keep the agent from starting.
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    wait_shell(&mut chat).await;
    drop(chat);
    setup.runner_ok(&["stop"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn processes_left_by_a_killed_runner_are_listed_and_cannot_keep_the_agent_down() {
    test_support::need(test_support::Need::Landlock);
    let (_server, setup, _guard) = started().await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    let looper = unique("looping");
    let attack = format!("{}; echo planted", loop_script(&looper));
    let report = chat.shell(&attack).await;
    assert!(succeeded(&report), "{report}");
    drop(chat);
    // `setsid -f` returns before the detached shell has started: wait for it to show up.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut loopers = pids_running(&looper);
    while loopers.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        loopers = pids_running(&looper);
    }
    assert_eq!(loopers.len(), 1, "{loopers:?}");
    // The runner dies without stopping anything; its guests and the loop are left.
    let marker: RunnerMarker = runner::read_json(&runner::runner_marker_path(&setup.ws("alice")))
        .unwrap()
        .unwrap();
    runner::signal(marker.pid, Signal::KILL);
    let deadline = Instant::now() + Duration::from_secs(10);
    while runner::is_alive(marker.pid) {
        assert!(Instant::now() < deadline, "the runner did not die");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = setup.runner_ok(&["status"]).await;
    assert!(status.contains("stray"), "{status}");
    assert!(
        loopers.iter().any(|p| status.contains(&p.to_string())),
        "{status}"
    );

    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    assert_eq!(gone(&looper).await, Vec::<u32>::new());
    let mut chat = Chat::connect(&setup, "alice", None).await;
    wait_shell(&mut chat).await;
    drop(chat);
    setup.runner_ok(&["stop"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn container_tier_a_planted_socket_and_a_locked_ipc_do_not_keep_the_shell_down() {
    use crate::common::container;
    test_support::need(test_support::Need::Docker);
    container::prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container::container_setup(&server, &[("alice", "")]);
    let _guard = container::ContainersOnDrop::new(&setup, &["alice"]);
    container::start(&setup).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    chat.save("Alice keeps the spare key under the blue pot")
        .await;
    let shell = container::name(&setup, "alice", "shell-vm");
    // The shell container mounts ipc/ (and logs/) from the workspace: what it does there is
    // what the runner finds on the host.
    for (attack, repaired) in [
        (
            "rm -f ../ipc/shell.sock && mkdir ../ipc/shell.sock && echo kept > ../ipc/shell.sock/x",
            "ipc/shell.sock",
        ),
        ("chmod 0 ../ipc ../logs", "ipc/ had mode "),
    ] {
        let before = container::inspect(&shell).await.unwrap();
        let id = before["Id"].as_str().unwrap().to_owned();
        let at = before["State"]["StartedAt"].as_str().unwrap().to_owned();
        damage(&mut chat, &setup, attack).await;
        let killed = container::docker(&["kill", &shell]).await;
        if !killed.status.success() {
            // The supervisor's own check (every few seconds) may have found the planted socket
            // first and be restarting the shell: then that restart is the one under test. Any
            // other failure to kill the running shell fails the test.
            let now = container::inspect(&shell).await;
            assert!(
                now.is_none_or(|c| c["Id"] != id.as_str()
                    || c["State"]["StartedAt"] != at.as_str()
                    || c["State"]["Running"] != true),
                "docker kill {shell}: {killed:?}"
            );
        }
        container::wait_running(&shell, Some((&id, &at)), Duration::from_secs(60)).await;
        wait_shell(&mut chat).await;
        let status = container::runner_ok(&setup, &["status"]).await;
        assert!(
            status.contains("repaired") && status.contains(repaired),
            "{attack}: {status}"
        );
    }
    let found = chat.turn("search spare key").await.message;
    assert!(found.contains("blue pot"), "{found}");
    drop(chat);
    container::runner_ok(&setup, &["stop"]).await;
}

/// A killed agent's `.oxydra/gateway.json` named a port nobody held until the runner relaunched
/// it (after its backoff): a command of the shell (which listens on loopback and reads the port
/// in `ipc/gateway.json`) could take the port meanwhile, and a client reading the marker handed
/// it the gateway token. The runner removes the marker as soon as it sees the agent gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn a_dead_agents_endpoint_is_gone_before_it_is_restarted() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let config = std::fs::read_to_string(&setup.config).unwrap();
    let slow = config.replace("backoff_initial_ms = 100", "backoff_initial_ms = 4000");
    assert_ne!(config, slow, "the restart waits 4 s");
    std::fs::write(&setup.config, slow).unwrap();
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let ws = setup.ws("alice");
    let old = setup.gateway("alice").unwrap();
    assert!(ws.endpoint().is_file() && ws.public_endpoint().is_file());
    runner::signal(guest_pid(&setup, "oxydra-vm"), Signal::KILL);
    let deadline = Instant::now() + Duration::from_secs(2);
    while ws.endpoint().exists() || ws.public_endpoint().exists() {
        assert!(
            Instant::now() < deadline,
            "the dead agent's endpoint is still there during the restart's backoff"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    setup.wait_gateway("alice", Some(old.pid)).await;
    assert!(ws.endpoint().is_file(), "the new agent wrote its endpoint");
    setup.runner_ok(&["stop"]).await;
}
