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

use common::{Chat, respond};
use container::{
    ContainersOnDrop, SHELL_VM_IMAGE, container_setup, containers_of, docker, hello, inspect,
    is_unauthorized, mounts, name, prepare, runner_env_ok, runner_ok, start, strings, succeeded,
    token, uid_gid, use_api_key_env,
};
use serde_json::Value;

/// A shell report for a command that failed (non-zero exit).
fn failed(report: &str) -> bool {
    report.starts_with("done: exit code ") && !succeeded(report)
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
            uid_gid(&setup.ws("alice"), role).as_str(),
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
    let (uid, _) = uid_gid(&ws, "shell-vm")
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
