//! The container tier end to end: real `runner`, real `oxydra-vm` and `shell-vm` containers on
//! the machine's Docker engine (images built locally with `runner images build`, tag `e2e`), a
//! real WebSocket client, and the scripted model as the provider. Each test is
//! `#[ignore = "needs docker"]` and fails without an engine when run (`scripts/test.sh` runs it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;
use crate::common::container;

use std::time::{Duration, Instant};

use common::{Chat, Setup, left_behind, respond};
use container::{
    ContainersOnDrop, SHELL_VM_IMAGE, container_setup, containers_of, docker, hello, inspect,
    is_unauthorized, mounts, name, prepare, runner_env_ok, start, strings, token, uid_gid,
    use_api_key_env, wait_running,
};
use serde_json::Value;

/// A shell report (as the model relays it) for a command that exited 0.
fn succeeded(report: &str) -> bool {
    report.starts_with("done: exit code 0\n") || report == "done: exit code 0"
}

/// A shell report for a command that failed (non-zero exit).
fn failed(report: &str) -> bool {
    report.starts_with("done: exit code ") && !succeeded(report)
}

/// `runner ARGS` with no extra environment; must succeed; stdout.
async fn runner_ok(setup: &Setup, args: &[&str]) -> String {
    runner_env_ok(setup, args, &[]).await.0
}

/// Runs `cmd` in a throw-away container of the shell-vm image that has the mounts of the
/// container `from` (so the probe sees exactly what that container sees, read-only flags
/// included).
async fn probe_mounts_of(from: &str, cmd: &str) -> std::process::Output {
    docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "--volumes-from",
        from,
        "--entrypoint",
        "/bin/sh",
        SHELL_VM_IMAGE,
        "-c",
        cmd,
    ])
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn chat_and_memory_run_in_hardened_labelled_containers() {
    test_support::need(test_support::Need::Docker);
    prepare().await;
    const KEY_VAR: &str = "OXYDRA_E2E_KEY";
    const KEY: &str = "oxydra-e2e-provider-key";
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("alice", "")]);
    use_api_key_env(&setup, KEY_VAR);
    let _guard = ContainersOnDrop::new(&setup, &["alice"]);
    let ws = setup.ws("alice");

    let (out, err) = runner_env_ok(
        &setup,
        &["start", "--detach"],
        &[(KEY_VAR, KEY), ("OXYDRA_LOG", "info")],
    )
    .await;
    assert!(out.contains("alice"), "{out}{err}");
    // A local memory database gets one calm (info) line pointing at remote memory.
    let runner_log =
        std::fs::read_to_string(runner::runner_log_path(&ws, "runner")).unwrap_or_default();
    let said = format!("{out}{err}{runner_log}");
    assert!(
        said.contains("memory: local database on this host") && said.contains("remote_url"),
        "no advisory about the local memory database: {said}"
    );

    // Both guests were launched at once: the agent's health turns ok once the shell serves.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let health: Option<runner::Health> =
            runner::read_json(&runner::health_path(&ws)).unwrap_or(None);
        if let Some(h) = &health
            && h.status == "ok"
        {
            assert_eq!(h.shell, "connected");
            break;
        }
        assert!(Instant::now() < deadline, "health is not ok: {health:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Chat and memory through the gateway; the key reached the provider.
    let mut alice = Chat::connect(&setup, "alice", None).await;
    alice.save("Alice's favourite colour is teal").await;
    let found = alice.turn("search favourite colour").await;
    assert_eq!(found.tools, vec![("memory_search".to_owned(), true)]);
    assert!(found.message.contains("teal"), "{found:?}");
    let requests = server.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }

    // Both containers: labels, mounts, hardening, limits, user, network, environment.
    let oxydra = inspect(&name(&setup, "alice", "oxydra-vm"))
        .await
        .expect("the oxydra-vm container exists");
    let shell = inspect(&name(&setup, "alice", "shell-vm"))
        .await
        .expect("the shell-vm container exists");
    let root = ws.root.display().to_string();
    let inner = "/workspace/alice";
    let m = |dir: &str, rw: bool| (format!("{root}/{dir}"), format!("{inner}/{dir}"), rw);
    let agent_toml = setup.dir.path().join("agent.toml").display().to_string();
    let mut expected = vec![
        m(".oxydra", true),
        m("shared", true),
        m("tmp", true),
        m("vault", false),
        m("logs", true),
        m("ipc", true),
        (agent_toml, "/etc/oxydra/agent.toml".to_owned(), false),
    ];
    expected.sort();
    assert_eq!(mounts(&oxydra), expected);
    let mut expected = vec![
        m("shared", true),
        m("tmp", true),
        m("logs", true),
        m("ipc", true),
    ];
    expected.sort();
    assert_eq!(mounts(&shell), expected);
    for (role, c, network) in [("oxydra-vm", &oxydra, "host"), ("shell-vm", &shell, "none")] {
        let labels = &c["Config"]["Labels"];
        assert_eq!(labels[runner::LABEL_MANAGED], "true", "{role}");
        assert_eq!(labels[runner::LABEL_USER], "alice", "{role}");
        assert_eq!(labels[runner::LABEL_ROLE], role);
        assert_eq!(labels[runner::LABEL_WORKSPACE], root.as_str(), "{role}");
        let host = &c["HostConfig"];
        assert_eq!(host["ReadonlyRootfs"], true, "{role}");
        assert_eq!(strings(&host["CapDrop"]), vec!["ALL"], "{role}");
        assert!(
            strings(&host["SecurityOpt"])
                .iter()
                .any(|o| o.starts_with("no-new-privileges")),
            "{role}: {}",
            host["SecurityOpt"]
        );
        assert_eq!(host["Init"], true, "{role}");
        assert_eq!(host["NetworkMode"], network, "{role}");
        assert!(host["Privileged"] != true, "{role}");
        assert!(
            host["Tmpfs"]["/tmp"].is_string(),
            "{role}: {}",
            host["Tmpfs"]
        );
        assert_eq!(
            c["Config"]["User"],
            uid_gid(&setup.ws("alice")).as_str(),
            "{role}"
        );
        assert_eq!(c["State"]["Running"], true, "{role}");
    }
    // The limits of runner.toml's [container.<role>] tables.
    assert_eq!(oxydra["HostConfig"]["Memory"], 1024_i64 << 20);
    assert_eq!(oxydra["HostConfig"]["NanoCpus"], 1_500_000_000_i64);
    assert_eq!(oxydra["HostConfig"]["PidsLimit"], 300);
    assert_eq!(shell["HostConfig"]["Memory"], 256_i64 << 20);
    assert_eq!(shell["HostConfig"]["NanoCpus"], 500_000_000_i64);
    assert_eq!(shell["HostConfig"]["PidsLimit"], 100);
    let env = |c: &Value| strings(&c["Config"]["Env"]);
    assert!(
        env(&oxydra).contains(&format!("{KEY_VAR}={KEY}")),
        "{:?}",
        env(&oxydra)
    );
    assert!(
        env(&shell).iter().all(|e| !e.contains(KEY)),
        "the provider key reached shell-vm: {:?}",
        env(&shell)
    );

    // Nor is it in the environment of anything the shell runs (checked through a file: tool
    // output is scrubbed of secrets, files are not).
    let report = alice
        .shell("{ env; cat /proc/1/environ /proc/self/environ; } > /workspace/alice/tmp/env.txt 2>&1; echo")
        .await;
    assert!(succeeded(&report), "{report}");
    let shell_env = std::fs::read_to_string(ws.tmp().join("env.txt")).unwrap();
    assert!(shell_env.contains("PATH="), "{shell_env}");
    assert!(!shell_env.contains(KEY), "{shell_env}");

    // status --json: alice runs, both containers are running.
    let status: Value =
        serde_json::from_str(&runner_ok(&setup, &["status", "--json"]).await).unwrap();
    let rows = status
        .as_array()
        .or_else(|| status["users"].as_array())
        .expect("status --json lists the users");
    let row = rows.iter().find(|r| r["user"] == "alice").expect("alice");
    assert_eq!(row["running"], true, "{row}");
    for role in ["oxydra-vm", "shell-vm"] {
        assert_eq!(row["containers"][role], "running", "{row}");
    }
    let logs = runner_ok(&setup, &["--user", "alice", "logs", "--role", "oxydra-vm"]).await;
    assert!(logs.contains("oxydra-vm ready"), "{logs}");
    drop(alice);

    // stop removes both containers; the note is in alice's own database on the host.
    let stopped = runner_ok(&setup, &["stop"]).await;
    assert!(stopped.contains("alice: stopped"), "{stopped}");
    assert_eq!(containers_of(&ws.root).await, Vec::<String>::new());
    let status = runner_ok(&setup, &["status"]).await;
    assert_eq!(status, "alice  stopped\n");
    assert!(ws.default_memory_db().is_file());
    let hits = runner_ok(
        &setup,
        &["--user", "alice", "memory", "search", "colour", "--json"],
    )
    .await;
    assert!(hits.contains("favourite colour is teal"), "{hits}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn the_visibility_table_holds_inside_the_containers() {
    test_support::need(test_support::Need::Docker);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let port = server.addr().port();
    let setup = container_setup(
        &server,
        &[("alice", ""), ("carol", "shell_network = \"host\"\n")],
    );
    let _guard = ContainersOnDrop::new(&setup, &["alice", "carol"]);
    start(&setup).await;
    let ws = setup.ws("alice");
    std::fs::write(ws.vault().join("secret.txt"), "the vault says hello").unwrap();
    let gateway_token = token(&setup, "alice");
    assert!(gateway_token.len() >= 16, "{gateway_token}");
    let mut alice = Chat::connect(&setup, "alice", None).await;

    // shell_exec: .oxydra/ and vault/ are absent, not merely unreadable.
    for cmd in [
        "ls /workspace/alice/.oxydra",
        "cat /workspace/alice/.oxydra/gateway.token",
        "ls /workspace/alice/vault",
        "cat /workspace/alice/vault/secret.txt",
        "ls /workspace/carol",
        "touch /probe",
        "touch /etc/probe",
        // User separation (issue 13): no root files, no engine, no devices, no root uid.
        "cat /etc/shadow",
        "ls /var/run/docker.sock",
        "ls /run/docker.sock",
        "mknod /workspace/alice/tmp/blk b 8 0",
    ] {
        let report = alice.shell(cmd).await;
        assert!(failed(&report), "`{cmd}` should fail: {report}");
        assert!(!report.contains("the vault says hello"), "{report}");
    }
    // The shell runs as the user's guest uid (never root).
    let (uid, _) = uid_gid(&ws)
        .split_once(':')
        .map(|(u, g)| (u.to_owned(), g.to_owned()))
        .unwrap();
    assert_ne!(uid, "0");
    assert_eq!(
        alice.shell("id -u").await,
        format!("done: exit code 0\n--- stdout ---\n{uid}\n")
    );
    // What the shell can see, written to tmp/ and read on the host (tool output is scrubbed,
    // files are not): only alice's four directories, and no token anywhere.
    let report = alice
        .shell(
            "cd /workspace/alice/tmp && ls /workspace > ls-root.txt 2>&1; ls -a /workspace/alice > \
             ls-ws.txt 2>&1; { env; cat /proc/1/environ; cat /proc/self/environ; ls -la /workspace/alice/ipc /workspace/alice/shared /workspace/alice/tmp; \
             cat /workspace/alice/ipc/*; } > probe.txt 2>&1; echo probed",
        )
        .await;
    assert!(succeeded(&report), "{report}");
    let read = |f: &str| std::fs::read_to_string(ws.tmp().join(f)).unwrap();
    // The shell confines itself with Landlock inside the container too, so listing the
    // directories above its mounts may be refused; either way no other user appears.
    let denied =
        |text: &str| text.starts_with("ls: can't open") && text.contains("Permission denied");
    let listing = read("ls-root.txt");
    assert!(listing == "alice\n" || denied(&listing), "{listing}");
    let listing = read("ls-ws.txt");
    assert!(
        listing == ".\n..\nipc\nlogs\nshared\ntmp\n" || denied(&listing),
        "{listing}"
    );
    let probe = read("probe.txt");
    assert!(probe.contains("gateway.json"), "{probe}");
    assert!(
        !probe.contains(&gateway_token),
        "the gateway token is visible to the shell: {probe}"
    );
    assert!(!probe.contains("the vault says hello"), "{probe}");

    // shared/, tmp/ and logs/ are writable by the shell and land on the host.
    let report = alice
        .shell(
            "echo x > /workspace/alice/shared/x && echo y > /workspace/alice/tmp/y && \
             echo z > /workspace/alice/logs/z",
        )
        .await;
    assert!(succeeded(&report), "{report}");
    assert_eq!(
        std::fs::read_to_string(ws.shared().join("x")).unwrap(),
        "x\n"
    );
    assert_eq!(std::fs::read_to_string(ws.tmp().join("y")).unwrap(), "y\n");
    assert_eq!(std::fs::read_to_string(ws.logs().join("z")).unwrap(), "z\n");

    // No network for alice's shell: the scripted server on the host's loopback is unreachable.
    // (busybox `wget` crashes on this kind of host, so the probe speaks HTTP through `nc`, its
    // input held open until the answer is in; the server answers `/` with a 404, which shows it
    // was reached.)
    let probe =
        format!("(printf 'GET / HTTP/1.0\\r\\n\\r\\n'; sleep 3) | nc -w 5 127.0.0.1 {port} 2>&1");
    let report = alice.shell(&probe).await;
    assert!(
        failed(&report) && report.contains("can't connect") && !report.contains("HTTP/1"),
        "alice's shell reached the host network: {report}"
    );
    // carol's shell has shell_network = "host": it reaches the server.
    let mut carol = Chat::connect(&setup, "carol", None).await;
    let report = carol.shell(&probe).await;
    assert!(
        report.contains("HTTP/1.0 404") || report.contains("HTTP/1.1 404"),
        "carol's shell should reach the host network: {report}"
    );
    let carol_shell = inspect(&name(&setup, "carol", "shell-vm")).await.unwrap();
    assert_eq!(carol_shell["HostConfig"]["NetworkMode"], "host");

    // The file tools of oxydra-vm: vault/ reads, .oxydra/ is denied.
    let turn = alice.turn("read vault/secret.txt").await;
    assert_eq!(turn.tools, vec![("file_read".to_owned(), true)], "{turn:?}");
    assert!(turn.message.contains("the vault says hello"), "{turn:?}");
    let turn = alice.turn("read .oxydra/gateway.token").await;
    assert_eq!(
        turn.tools,
        vec![("file_read".to_owned(), false)],
        "{turn:?}"
    );
    let turn = alice.turn("read shared/x").await;
    assert_eq!(turn.tools, vec![("file_read".to_owned(), true)], "{turn:?}");

    // oxydra-vm's own mounts: vault/ is read-only there, .oxydra/ is writable.
    let oxydra = name(&setup, "alice", "oxydra-vm");
    let out = probe_mounts_of(&oxydra, "touch /workspace/alice/vault/x").await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("Read-only file system"),
        "vault/ should be read-only for oxydra-vm: {err}"
    );
    assert!(!ws.vault().join("x").exists());
    let out = probe_mounts_of(&oxydra, "cat /workspace/alice/vault/secret.txt").await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "the vault says hello",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = probe_mounts_of(&oxydra, "touch /workspace/alice/.oxydra/probe").await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(ws.internal().join("probe").is_file());
    std::fs::remove_file(ws.internal().join("probe")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn two_users_are_isolated() {
    test_support::need(test_support::Need::Docker);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("alice", ""), ("bob", "")]);
    let _guard = ContainersOnDrop::new(&setup, &["alice", "bob"]);
    let (out, _) = start(&setup).await;
    assert!(out.contains("alice") && out.contains("bob"), "{out}");
    std::fs::write(setup.ws("bob").shared().join("secret.txt"), "bob's secret").unwrap();

    let mut alice = Chat::connect(&setup, "alice", None).await;
    let mut bob = Chat::connect(&setup, "bob", None).await;
    bob.save("Bob plays chess on Sundays").await;
    let found = bob.turn("search chess").await.message;
    assert!(found.contains("Bob plays chess"), "{found}");
    let found = alice.turn("search chess").await;
    assert_eq!(found.tools, vec![("memory_search".to_owned(), true)]);
    assert!(!found.message.contains("Bob plays chess"), "{found:?}");

    // alice's shell does not see bob's workspace.
    for cmd in [
        "ls /workspace/bob",
        "cat /workspace/bob/shared/secret.txt",
        "cat ../../bob/shared/secret.txt",
    ] {
        let report = alice.shell(cmd).await;
        assert!(failed(&report), "`{cmd}` should fail: {report}");
        assert!(!report.contains("bob's secret"), "{report}");
    }
    let turn = alice.turn("read ../bob/shared/secret.txt").await;
    assert_eq!(
        turn.tools,
        vec![("file_read".to_owned(), false)],
        "{turn:?}"
    );

    // alice's token opens alice's gateway only.
    let alice_token = token(&setup, "alice");
    let bob_url = setup.gateway("bob").unwrap().url;
    let alice_url = setup.gateway("alice").unwrap().url;
    assert_ne!(alice_url, bob_url);
    for user in ["bob", "alice"] {
        let frame = hello(&bob_url, &alice_token, user).await;
        assert!(
            is_unauthorized(&frame),
            "bob's gateway accepted alice's token as {user}: {frame:?}"
        );
    }
    let frame = hello(&alice_url, &alice_token, "bob").await;
    assert!(is_unauthorized(&frame), "{frame:?}");
    let frame = hello(&alice_url, &alice_token, "alice").await;
    assert!(
        matches!(frame, types::ServerFrame::HelloOk { .. }),
        "{frame:?}"
    );

    // Each user's containers carry their own labels and mounts only.
    for user in ["alice", "bob"] {
        for role in ["oxydra-vm", "shell-vm"] {
            let c = inspect(&name(&setup, user, role)).await.unwrap();
            assert_eq!(c["Config"]["Labels"][runner::LABEL_USER], user);
            let root = setup.ws(user).root.display().to_string();
            for (source, _, _) in mounts(&c) {
                assert!(
                    source.starts_with(&format!("{root}/")) || source.ends_with("agent.toml"),
                    "{user} {role} mounts {source}"
                );
            }
        }
    }
}

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
