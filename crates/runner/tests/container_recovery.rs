//! The container tier when things go wrong: a killed or crash-looping shell, a runner killed with
//! its containers up, Ctrl+C during a start. Real `runner`, real containers on the machine's
//! Docker engine (images built locally, tag `e2e`), the scripted model as the provider. Each test
//! is `#[ignore = "needs docker"]` and fails without an engine when run (`scripts/test.sh` runs it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;
use crate::common::container;

use std::time::{Duration, Instant};

use common::{Chat, left_behind, respond};
use container::{
    ContainersOnDrop, container_setup, containers_of, docker, inspect, name, prepare, runner_ok,
    start, succeeded, wait_running,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn a_killed_shell_comes_back_stop_removes_everything_and_notes_survive() {
    test_support::need(test_support::Need::Docker);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("dave", "")]);
    let _guard = ContainersOnDrop::new(&setup, &["dave"]);
    start(&setup).await;
    let ws = setup.ws("dave");
    let mut dave = Chat::connect(&setup, "dave", None).await;
    dave.save("Dave keeps bees on the roof").await;

    // docker kill of the shell: the supervisor brings a new one up and the shell works again.
    let shell_name = name(&setup, "dave", "shell-vm");
    let before = inspect(&shell_name).await.unwrap();
    let (id, started_at) = (
        before["Id"].as_str().unwrap().to_owned(),
        before["State"]["StartedAt"].as_str().unwrap().to_owned(),
    );
    let killed = docker(&["kill", &shell_name]).await;
    assert!(
        killed.status.success(),
        "{}",
        String::from_utf8_lossy(&killed.stderr)
    );
    let after = wait_running(
        &shell_name,
        Some((&id, &started_at)),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(after["HostConfig"]["NetworkMode"], "none");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let report = dave.shell("echo ok").await;
        if succeeded(&report) && report.contains("ok") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the shell does not work after its restart: {report}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The supervisor records the restart once the new shell is ready, which a client may see a
    // moment before it does: status catches up.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = runner_ok(&setup, &["status", "--user", "dave"]).await;
        if status.contains("restarts 1") {
            break;
        }
        assert!(Instant::now() < deadline, "no restart recorded: {status}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(dave);

    // stop removes every container of the workspace and leaves no marker or socket behind.
    let stopped = runner_ok(&setup, &["stop"]).await;
    assert!(stopped.contains("dave: stopped"), "{stopped}");
    assert_eq!(containers_of(&ws.root).await, Vec::<String>::new());
    assert_eq!(left_behind(&ws), Vec::<String>::new());
    let logs = runner_ok(&setup, &["--user", "dave", "logs", "--role", "shell-vm"]).await;
    assert!(!logs.trim().is_empty(), "no shell-vm log");

    // Started again: the note saved before is found.
    start(&setup).await;
    let mut dave = Chat::connect(&setup, "dave", None).await;
    let found = dave.turn("search bees").await.message;
    assert!(found.contains("keeps bees"), "{found}");
    drop(dave);

    // restart --detach: new containers, same memory.
    let oxydra_name = name(&setup, "dave", "oxydra-vm");
    let old = inspect(&oxydra_name).await.unwrap()["Id"].clone();
    runner_ok(&setup, &["restart", "--detach"]).await;
    let new = inspect(&oxydra_name).await.unwrap();
    assert_ne!(new["Id"], old, "restart should make new containers");
    let mut dave = Chat::connect(&setup, "dave", None).await;
    let found = dave.turn("search bees").await.message;
    assert!(found.contains("keeps bees"), "{found}");
    drop(dave);
    runner_ok(&setup, &["stop"]).await;
    assert_eq!(containers_of(&ws.root).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn a_shell_that_keeps_crashing_is_given_up_and_cleaned_up() {
    test_support::need(test_support::Need::Docker);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("erin", "")]);
    let text = std::fs::read_to_string(&setup.config).unwrap();
    std::fs::write(
        &setup.config,
        text.replace("[supervision]\n", "[supervision]\nmax_restarts = 1\n"),
    )
    .unwrap();
    let _guard = ContainersOnDrop::new(&setup, &["erin"]);
    start(&setup).await;
    let ws = setup.ws("erin");
    let shell_name = name(&setup, "erin", "shell-vm");

    // The first crash is restarted, the second is one too many within the window.
    let first = inspect(&shell_name).await.unwrap();
    let old = (
        first["Id"].as_str().unwrap().to_owned(),
        first["State"]["StartedAt"].as_str().unwrap().to_owned(),
    );
    assert!(docker(&["kill", &shell_name]).await.status.success());
    wait_running(&shell_name, Some((&old.0, &old.1)), Duration::from_secs(20)).await;
    assert!(docker(&["kill", &shell_name]).await.status.success());

    // The supervisor gives up: it says why in its log, and removes both containers.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = containers_of(&ws.root).await;
        let log =
            std::fs::read_to_string(runner::runner_log_path(&ws, "runner")).unwrap_or_default();
        if left.is_empty() && log.contains("giving up") {
            assert!(
                log.contains("erin's shell-vm failed 2 times within 60 s"),
                "{log}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not given up and cleaned up: containers {left:?}, runner.log: {log}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let status = runner_ok(&setup, &["status"]).await;
    assert_eq!(status, "erin  stopped\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn containers_left_by_a_killed_runner_are_reported_replaced_and_removed() {
    test_support::need(test_support::Need::Docker);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("fay", "")]);
    let _guard = ContainersOnDrop::new(&setup, &["fay"]);
    start(&setup).await;
    let ws = setup.ws("fay");
    let mut fay = Chat::connect(&setup, "fay", None).await;
    fay.save("Fay collects enamel pins").await;
    drop(fay);

    // kill -9 of the runner: nothing stops its containers, and status says so.
    kill_runner(&ws).await;
    let ids_before = containers_of(&ws.root).await;
    assert_eq!(
        ids_before.len(),
        2,
        "the containers should outlive their runner"
    );
    let status = runner_ok(&setup, &["status", "--user", "fay"]).await;
    let shell_name = name(&setup, "fay", "shell-vm");
    assert!(
        status.contains("a runner that died left containers behind")
            && status.contains(&format!("{shell_name} (running)")),
        "{status}"
    );

    // start again: the stale containers of the same names are replaced, and memory is intact.
    start(&setup).await;
    let ids_after = containers_of(&ws.root).await;
    assert_eq!(ids_after.len(), 2, "{ids_after:?}");
    assert!(
        ids_after.iter().all(|id| !ids_before.contains(id)),
        "stale containers were kept: {ids_before:?} / {ids_after:?}"
    );
    let mut fay = Chat::connect(&setup, "fay", None).await;
    let found = fay.turn("search enamel").await.message;
    assert!(found.contains("enamel pins"), "{found}");
    drop(fay);

    // Killed again, then stop: it removes what the dead runner left, and every marker.
    kill_runner(&ws).await;
    let stopped = runner_ok(&setup, &["stop"]).await;
    assert!(
        stopped.contains("fay:") && stopped.contains("removed containers left behind"),
        "{stopped}"
    );
    assert_eq!(containers_of(&ws.root).await, Vec::<String>::new());
    assert_eq!(left_behind(&ws), Vec::<String>::new());
    assert_eq!(runner_ok(&setup, &["status"]).await, "fay  stopped\n");
}

/// SIGKILL to the runner supervising `ws` (named in `.oxydra/runner.json`); waits until it is gone.
async fn kill_runner(ws: &types::WorkspacePaths) {
    let marker: runner::RunnerMarker = runner::read_json(&runner::runner_marker_path(ws))
        .unwrap()
        .expect("a running runner's marker");
    runner::signal(marker.pid, rustix::process::Signal::KILL);
    let deadline = Instant::now() + Duration::from_secs(10);
    while runner::is_alive(marker.pid) {
        assert!(
            Instant::now() < deadline,
            "runner {} survived SIGKILL",
            marker.pid
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn ctrl_c_during_a_start_removes_the_containers_it_created() {
    use std::os::unix::process::ExitStatusExt;
    test_support::need(test_support::Need::Docker);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("gus", "")]);
    let _guard = ContainersOnDrop::new(&setup, &["gus"]);
    let ws = setup.ws("gus");
    let mut outcomes = Vec::new();
    // Foreground at several delays, then `start --detach` (what scripts/run.sh runs).
    for (delay_ms, detach) in [(150, false), (300, false), (800, false), (600, true)] {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_runner"));
        cmd.arg("--config").arg(&setup.config).arg("start");
        if detach {
            cmd.arg("--detach");
        }
        let child = cmd
            .env_remove("OXYDRA_LOG")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        runner::signal(child.id().unwrap(), rustix::process::Signal::INT);
        let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
            .await
            .expect("the runner stops in time")
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let what = format!(
            "SIGINT after {delay_ms} ms (detach: {detach}): {:?}\n{stdout}{stderr}",
            out.status
        );
        if stdout.contains("gus: ready at") || stdout.contains("gus: running in the background") {
            outcomes.push("ready first");
            if detach {
                runner_ok(&setup, &["stop"]).await;
            } else {
                assert!(
                    out.status.success() && stdout.ends_with("stopped\n"),
                    "{what}"
                );
            }
        } else if out.status.signal() == Some(rustix::process::Signal::INT.as_raw()) {
            outcomes.push("killed before it launched anything");
        } else {
            assert_eq!(out.status.code(), Some(130), "{what}");
            outcomes.push("interrupted while starting");
        }
        // Wait out a background runner still stopping (the detached case), then check.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !containers_of(&ws.root).await.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(
            containers_of(&ws.root).await,
            Vec::<String>::new(),
            "{what}"
        );
        if ws.ipc().is_dir() {
            assert_eq!(left_behind(&ws), Vec::<String>::new(), "{what}");
        }
        assert_eq!(
            runner_ok(&setup, &["status"]).await,
            "gus  stopped\n",
            "{what}"
        );
    }
    eprintln!("outcomes: {outcomes:?}");
    assert!(
        outcomes.contains(&"interrupted while starting"),
        "no signal landed while gus was starting: {outcomes:?}"
    );
}
