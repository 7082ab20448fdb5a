//! The user's stdio MCP servers run with no more privilege than their shell, in both tiers, with
//! a runner started as root (each user's guests under their own uids). The server is the
//! `mcp-test-server` built with `rmcp`; the agent's side is played by a small client run as the
//! user's agent uid, speaking the shell protocol's `mcp_spawn` and then JSON-RPC over the pipe.
//!
//! - Process tier: the server runs through `shell-vm` as the shell's uid, sees `shared/` and its
//!   `read_paths` (read-only), never `.oxydra/`, `vault/`, the gateway token or another user's
//!   workspace; a `read_paths` entry inside the workspaces refuses the start.
//! - Container tier: the server's own container, from an image built here from scratch, has only
//!   `shared/` and `ipc/` of the workspace, no network, the shell's uid.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::Need;
use types::{UserId, WorkspacePaths};

use crate::common::container::{ContainersOnDrop, container_setup, inspect, mounts};
use crate::common::{Setup, StopOnDrop, guest_binaries, respond};

const CLIENT: &str = include_str!("mcp/pipe_client.py");
const TOKEN_FILE: &str = "gateway.token";

/// `mcp-test-server`, built with the cargo running these tests when missing.
fn test_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = guest_binaries().join("mcp-test-server");
        if !bin.is_file() {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "-p", "test-support", "--bin", "mcp-test-server"])
                .status()
                .unwrap();
            assert!(status.success(), "building mcp-test-server failed");
        }
        bin
    })
    .clone()
}

/// A directory outside the setup (mode 0755, so guest uids reach it) holding `files`.
fn host_dir(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, bytes) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn add_server(setup: &Setup, toml: &str) {
    let path = setup.dir.path().join("agent.toml");
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(toml.as_bytes()).unwrap();
}

/// Runs the client as `user`'s agent uid against `socket`: spawns `command`, makes `calls`;
/// the daemon's answer line, then each tool's text.
fn as_agent(setup: &Setup, user: &str, socket: &Path, command: &str, calls: &Value) -> Vec<String> {
    let ws = setup.ws(user);
    let ids = runner::recorded_identity(&setup.root, &UserId::parse(user).unwrap())
        .expect("a root runner records its guests' ids");
    let secret = std::fs::read_to_string(types::shell_secret_path(&ws)).unwrap();
    let script = host_dir(&[("client.py", CLIENT.as_bytes())]);
    let mut child = std::process::Command::new("setpriv")
        .arg(format!("--reuid={}", ids.agent.uid))
        .arg(format!("--regid={}", ids.agent.gid))
        .args(["--clear-groups", "--", "/usr/bin/python3"])
        .arg(script.path().join("client.py"))
        .arg(socket)
        .arg(json!({ "command": command }).to_string())
        .arg(calls.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", secret.trim()).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "client: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(r#"{"type":"piped"}"#), "{text}");
    lines
        .map(|l| serde_json::from_str::<String>(l).unwrap())
        .collect()
}

/// The uid of `user`'s shell as recorded host-wide.
fn shell_uid(setup: &Setup, user: &str) -> u32 {
    let ids = runner::recorded_identity(&setup.root, &UserId::parse(user).unwrap()).unwrap();
    ids.of(sandbox::Role::ShellVm).uid
}

fn plant_secrets(ws: &WorkspacePaths) {
    std::fs::write(ws.vault().join("key"), "vault-key").unwrap();
    std::fs::write(ws.shared().join("notes.txt"), "shared notes").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock and root"]
async fn a_process_tier_server_runs_as_the_shell_and_sees_only_shared_and_its_read_paths() {
    test_support::need(Need::Landlock);
    test_support::need(Need::Root);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice", "bob"]);
    let _guard = StopOnDrop(setup.config.clone());
    let bin = std::fs::read(test_server()).unwrap();
    let data = host_dir(&[
        ("mcp-test-server", &bin),
        ("readable.txt", b"readable data"),
    ]);
    let d = data.path().display();

    // A read path inside the workspaces refuses the start, and nothing is launched.
    let bob_shared = setup.ws("bob").shared();
    add_server(
        &setup,
        &format!(
            "[mcp.servers.probe]\ncommand = \"{d}/mcp-test-server\"\nread_paths = [\"{}\"]\n",
            bob_shared.parent().unwrap().display()
        ),
    );
    std::fs::create_dir_all(&bob_shared).unwrap();
    let refused = setup.runner(&["--insecure", "start", "--detach"]).await;
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{err}");
    assert!(err.contains("[mcp.servers.probe] read_paths"), "{err}");
    assert!(err.contains("outside the workspace root"), "{err}");
    assert!(setup.gateway("alice").is_none());

    let agent_toml = setup.dir.path().join("agent.toml");
    let text = std::fs::read_to_string(&agent_toml).unwrap();
    let good = text.replace(
        &bob_shared.parent().unwrap().display().to_string(),
        &d.to_string(),
    );
    std::fs::write(&agent_toml, good).unwrap();
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let (alice, bob) = (setup.ws("alice"), setup.ws("bob"));
    plant_secrets(&alice);
    std::fs::write(bob.shared().join("bob.txt"), "bob's file").unwrap();

    let path = |p: PathBuf| json!({ "path": p });
    let calls = json!([
        ["whoami", {}],
        ["read", path(alice.shared().join("notes.txt"))],
        ["read", path(data.path().join("readable.txt"))],
        ["read", path(alice.internal().join(TOKEN_FILE))],
        ["read", path(alice.default_memory_db())],
        ["read", path(alice.vault().join("key"))],
        ["read", path(bob.shared().join("bob.txt"))],
        ["write", {"path": data.path().join("new.txt"), "text": "x"}],
        ["write", {"path": alice.shared().join("out.txt"), "text": "x"}],
    ]);
    let socket = types::shell_socket_path(&alice);
    let got = as_agent(
        &setup,
        "alice",
        &socket,
        &format!("{d}/mcp-test-server"),
        &calls,
    );
    // The shell's sandbox hides /proc from it: its uid shows as the owner of what it writes.
    let me: Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(me["cwd"], alice.shared().to_str().unwrap(), "{me}");
    assert_eq!(
        me["env"],
        json!(["HOME", "LANG", "PATH", "TERM", "TMPDIR"]),
        "{me}"
    );
    assert_eq!(got[1], "OK shared notes");
    assert_eq!(got[2], "OK readable data");
    for denied in &got[3..8] {
        assert!(denied.starts_with("DENIED"), "{got:?}");
    }
    assert_eq!(got[8], "OK ");
    assert!(!data.path().join("new.txt").exists());
    assert_eq!(
        std::fs::metadata(alice.shared().join("out.txt"))
            .unwrap()
            .uid(),
        shell_uid(&setup, "alice")
    );
}

/// Builds `oxydra-mcp-probe:e2e` from scratch: `mcp-test-server` and the libraries `ldd` names
/// (the same our `shell-vm` needs, which is mounted in at run time).
fn build_probe_image() -> &'static str {
    const TAG: &str = "oxydra-mcp-probe:e2e";
    let context = tempfile::tempdir().unwrap();
    let rootfs = context.path().join("rootfs");
    let put = |host: &Path, inside: &str| {
        let target = rootfs.join(inside.trim_start_matches('/'));
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(host, &target).unwrap();
    };
    let server = test_server();
    put(&server, "/usr/local/bin/mcp-test-server");
    let ldd = std::process::Command::new("ldd")
        .arg(&server)
        .output()
        .unwrap();
    for word in String::from_utf8_lossy(&ldd.stdout).split_whitespace() {
        if word.starts_with('/') {
            put(Path::new(word), word);
        }
    }
    std::fs::write(
        context.path().join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [\"/usr/local/bin/mcp-test-server\"]\n",
    )
    .unwrap();
    let out = std::process::Command::new("docker")
        .args(["build", "-q", "-t", TAG])
        .arg(context.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    TAG
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn a_container_tier_server_gets_its_own_container_with_only_shared_and_no_network() {
    test_support::need(Need::Docker);
    crate::common::container::prepare().await;
    let image = tokio::task::block_in_place(build_probe_image);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("alice", "")]);
    let _containers = ContainersOnDrop::new(&setup, &["alice"]);
    add_server(
        &setup,
        &format!(
            "[mcp.servers.probe]\ncommand = \"/usr/local/bin/mcp-test-server\"\nimage = \"{image}\"\n"
        ),
    );
    crate::common::container::start(&setup).await;
    let alice = setup.ws("alice");
    plant_secrets(&alice);
    let name = runner::mcp_container_name(&setup.root, &UserId::parse("alice").unwrap(), "probe");
    let Some(container) = inspect(&name).await else {
        let log = std::fs::read_to_string(runner::runner_log_path(&alice, "runner"));
        let mcp_log = std::fs::read_to_string(runner::runner_log_path(&alice, "mcp-probe"));
        panic!("no container {name}; runner.log: {log:?}; mcp-probe.log: {mcp_log:?}");
    };
    let ws = alice.root.display().to_string();
    let inner = "/workspace/alice";
    let expected = vec![
        (format!("{ws}/ipc"), format!("{inner}/ipc"), true),
        (format!("{ws}/shared"), format!("{inner}/shared"), true),
        (
            guest_binaries().join("shell-vm").display().to_string(),
            runner::MCP_SHELL_VM.to_owned(),
            false,
        ),
    ];
    let mut binds: Vec<_> = mounts(&container)
        .into_iter()
        .filter(|(source, ..)| !source.is_empty())
        .collect();
    binds.sort();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(binds, expected_sorted);
    assert_eq!(container["HostConfig"]["NetworkMode"], "none");
    assert_eq!(container["HostConfig"]["ReadonlyRootfs"], true);

    let socket = types::mcp_server_socket(&alice, "probe");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "no socket at {}",
            socket.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let calls = json!([
        ["write", {"path": format!("{inner}/shared/from-container.txt"), "text": "x"}],
        ["read", {"path": format!("{inner}/shared/notes.txt")}],
        ["read", {"path": format!("{inner}/.oxydra/{TOKEN_FILE}")}],
        ["read", {"path": format!("{inner}/vault/key")}],
        ["connect", {"addr": "1.1.1.1:53"}],
    ]);
    let got = tokio::task::block_in_place(|| {
        as_agent(
            &setup,
            "alice",
            &socket,
            "/usr/local/bin/mcp-test-server",
            &calls,
        )
    });
    assert_eq!(got[0], "OK ");
    let written = std::fs::metadata(alice.shared().join("from-container.txt")).unwrap();
    assert_eq!(written.uid(), shell_uid(&setup, "alice"));
    assert_eq!(got[1], "OK shared notes");
    assert!(got[2].starts_with("DENIED"), "{got:?}");
    assert!(got[3].starts_with("DENIED"), "{got:?}");
    assert!(got[4].starts_with("DENIED"), "{got:?}");

    // Stopping the user removes the server's container with the others.
    setup.runner_ok(&["stop"]).await;
    assert!(inspect(&name).await.is_none(), "{name} outlived the stop");
}
