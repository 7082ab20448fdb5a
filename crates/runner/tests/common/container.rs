//! Fixtures for the container-tier tests (each `#[ignore = "needs docker"]`, calling
//! `test_support::need(Need::Docker)` first): the guest images built once per test binary under
//! the `e2e` tag, a runner.toml for the container tier, the `docker` CLI, and a guard that removes
//! the test's containers however the test ends.
//!
//! Only `container_tier.rs` uses it.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures::SinkExt;
use runner::{LABEL_WORKSPACE, container_name};
use serde_json::Value;
use test_support::ScriptedLlm;
use tokio_tungstenite::tungstenite::Message;
use types::{ClientFrame, ErrorCode, PROTOCOL_VERSION, ServerFrame, UserId};

use crate::common::{Setup, guest_binaries};

/// The images the tests build and run (never a user's own tags).
pub const OXYDRA_VM_IMAGE: &str = "oxydra-vm:e2e";
pub const SHELL_VM_IMAGE: &str = "oxydra-shell-vm:e2e";

/// How long a runner command may take (a start creates containers on a 2-core machine).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(180);

/// Builds both guest images (tag `e2e`) from the binaries next to `runner`, once per test
/// binary; the builder itself skips what is up to date, so later runs are quick.
pub fn build_images() {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let bins = guest_binaries();
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let config = dir.path().join("runner.toml");
        std::fs::write(
            &config,
            format!(
                "tier = \"container\"\n[container]\noxydra_vm_image = \"{OXYDRA_VM_IMAGE}\"\n\
                 shell_vm_image = \"{SHELL_VM_IMAGE}\"\n"
            ),
        )
        .map_err(|e| e.to_string())?;
        let started = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .arg("--config")
            .arg(&config)
            .args(["images", "build", "--bin-dir"])
            .arg(&bins)
            .env_remove("OXYDRA_LOG")
            .output()
            .map_err(|e| e.to_string())?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        #[allow(clippy::print_stderr, reason = "the build is slow; say what it did")]
        {
            eprintln!(
                "runner images build ({:.1} s): {}",
                started.elapsed().as_secs_f64(),
                text.trim()
            );
        }
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("runner images build failed: {text}"))
        }
    });
    if let Err(e) = built {
        panic!("{e}");
    }
}

/// What a container test does after `need(Need::Docker)`: builds the images (once per binary).
pub async fn prepare() {
    tokio::task::block_in_place(build_images);
}

/// A [`Setup`] for the container tier with the `e2e` images: `users` are `(id, extra lines of
/// its [users.<id>] table)`.
pub fn container_setup(server: &ScriptedLlm, users: &[(&str, &str)]) -> Setup {
    let ids: Vec<&str> = users.iter().map(|(id, _)| *id).collect();
    let setup = Setup::new(server, &ids);
    let mut text = format!(
        "tier = \"container\"\nworkspace_root = \"ws\"\n[supervision]\nready_timeout_secs = 60\n\
         stop_timeout_secs = 5\nbackoff_initial_ms = 200\n[container]\n\
         oxydra_vm_image = \"{OXYDRA_VM_IMAGE}\"\nshell_vm_image = \"{SHELL_VM_IMAGE}\"\n\
         [container.oxydra_vm]\nmemory_mb = 1024\ncpus = 1.5\npids = 300\n\
         [container.shell_vm]\nmemory_mb = 256\ncpus = 0.5\npids = 100\n"
    );
    for (id, extra) in users {
        text.push_str(&format!("[users.{id}]\n{extra}"));
    }
    std::fs::write(&setup.config, text).unwrap();
    setup
}

/// Makes agent.toml read the provider key from `var`.
pub fn use_api_key_env(setup: &Setup, var: &str) {
    let agent = setup.dir.path().join("agent.toml");
    let text = std::fs::read_to_string(&agent).unwrap();
    assert!(text.contains("api_key_env = \"\""), "{text}");
    std::fs::write(
        &agent,
        text.replace("api_key_env = \"\"", &format!("api_key_env = \"{var}\"")),
    )
    .unwrap();
}

/// `runner --config <runner.toml> ARGS...` with `env` added, bounded by [`COMMAND_TIMEOUT`].
pub async fn runner_env(setup: &Setup, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.arg("--config")
        .arg(&setup.config)
        .args(args)
        .env_remove("OXYDRA_LOG")
        .env_remove("OXYDRA_BIN_DIR")
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    tokio::time::timeout(COMMAND_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("runner {args:?} did not finish in {COMMAND_TIMEOUT:?}"))
        .unwrap()
}

/// `runner ARGS` with no extra environment; must succeed; stdout.
pub async fn runner_ok(setup: &Setup, args: &[&str]) -> String {
    runner_env_ok(setup, args, &[]).await.0
}

/// A shell report (as the model relays it) for a command that exited 0.
pub fn succeeded(report: &str) -> bool {
    report.starts_with("done: exit code 0\n") || report == "done: exit code 0"
}

/// Like [`runner_env`], and it must succeed; returns stdout and stderr.
pub async fn runner_env_ok(setup: &Setup, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let out = runner_env(setup, args, env).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "runner {args:?} failed: {stdout}{stderr}"
    );
    (stdout, stderr)
}

/// `runner start --detach` (which must succeed); returns stdout and stderr.
pub async fn start(setup: &Setup) -> (String, String) {
    runner_env_ok(setup, &["start", "--detach"], &[]).await
}

/// The name of `user`'s `role` container in `setup`.
pub fn name(setup: &Setup, user: &str, role: &str) -> String {
    container_name(&setup.root, &UserId::parse(user).unwrap(), role)
}

/// `docker ARGS...`, bounded by [`COMMAND_TIMEOUT`].
pub async fn docker(args: &[&str]) -> Output {
    let run = tokio::process::Command::new("docker")
        .args(args)
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(COMMAND_TIMEOUT, run)
        .await
        .unwrap_or_else(|_| panic!("docker {args:?} did not finish"))
        .unwrap()
}

/// `docker inspect NAME` (the one object), or `None` when there is no such container.
pub async fn inspect(name: &str) -> Option<Value> {
    let out = docker(&["inspect", "--type", "container", name]).await;
    if !out.status.success() {
        return None;
    }
    let mut all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    all.pop()
}

/// Ids of every container (running or not) labelled with the workspace `ws_root`.
pub async fn containers_of(ws_root: &Path) -> Vec<String> {
    let filter = format!("label={LABEL_WORKSPACE}={}", ws_root.display());
    let out = docker(&["ps", "-a", "-q", "--no-trunc", "--filter", &filter]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Waits until `name` runs as a container whose `(Id, StartedAt)` is not `old`; returns its
/// inspect object.
pub async fn wait_running(name: &str, old: Option<(&str, &str)>, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        if let Some(c) = inspect(name).await
            && c["State"]["Running"] == true
            && old.is_none_or(|(id, at)| c["Id"] != id || c["State"]["StartedAt"] != at)
        {
            return c;
        }
        assert!(
            Instant::now() < deadline,
            "{name} is not running again within {within:?}: {:?}",
            inspect(name).await.map(|c| c["State"].clone())
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs `runner stop`, then force-removes every container of the workspaces of `users`, when
/// dropped: a failing test leaves nothing behind.
pub struct ContainersOnDrop {
    pub config: PathBuf,
    pub workspaces: Vec<PathBuf>,
}

impl ContainersOnDrop {
    pub fn new(setup: &Setup, users: &[&str]) -> Self {
        Self {
            config: setup.config.clone(),
            workspaces: users.iter().map(|u| setup.ws(u).root).collect(),
        }
    }
}

impl Drop for ContainersOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .arg("--config")
            .arg(&self.config)
            .arg("stop")
            .output();
        for ws in &self.workspaces {
            let filter = format!("label={LABEL_WORKSPACE}={}", ws.display());
            let Ok(out) = std::process::Command::new("docker")
                .args(["ps", "-a", "-q", "--filter", &filter])
                .output()
            else {
                continue;
            };
            let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            if !ids.is_empty() {
                let _ = std::process::Command::new("docker")
                    .args(["rm", "-f"])
                    .args(&ids)
                    .output();
            }
        }
    }
}

/// Sends a `hello` for `user` with `token` to the gateway at `url` and returns the first frame.
pub async fn hello(url: &str, token: &str, user: &str) -> ServerFrame {
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let frame = ClientFrame::Hello {
        protocol_version: PROTOCOL_VERSION,
        token: token.to_owned(),
        user_id: UserId::parse(user).unwrap(),
        session_id: None,
        last_seq: None,
    };
    ws.send(Message::Text(serde_json::to_string(&frame).unwrap().into()))
        .await
        .unwrap();
    crate::common::next_frame(&mut ws).await
}

/// True when `frame` refuses a hello as unauthorized.
pub fn is_unauthorized(frame: &ServerFrame) -> bool {
    matches!(
        frame,
        ServerFrame::Error {
            code: ErrorCode::Unauthorized,
            ..
        }
    )
}

/// The gateway token of `user`, from the host side of `.oxydra/`.
pub fn token(setup: &Setup, user: &str) -> String {
    std::fs::read_to_string(setup.ws(user).internal().join("gateway.token"))
        .unwrap()
        .trim()
        .to_owned()
}

/// The `(source, destination, writable)` of each mount of an inspected container, sorted.
pub fn mounts(container: &Value) -> Vec<(String, String, bool)> {
    let mut all: Vec<(String, String, bool)> = container["Mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["Source"].as_str().unwrap_or_default().to_owned(),
                m["Destination"].as_str().unwrap_or_default().to_owned(),
                m["RW"].as_bool().unwrap(),
            )
        })
        .collect();
    all.sort();
    all
}

/// The strings of a JSON array (empty when absent).
pub fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `uid:gid` the user's `role` container runs as: the user's agent or shell uid and the user's
/// group (as recorded host-wide, never root; the agent's owns `.oxydra/`) when the runner runs
/// as root, else the invoking user's.
pub fn uid_gid(ws: &types::WorkspacePaths, role: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    if rustix::process::geteuid().is_root() {
        let root = ws.root.parent().unwrap();
        let user = UserId::parse(ws.root.file_name().unwrap().to_str().unwrap()).unwrap();
        let ids = runner::recorded_identity(root, &user).expect("recorded host-wide");
        let id = ids.of(role.parse().unwrap());
        assert_ne!(id.uid, 0, "a root runner's guests run as their own uid");
        assert_eq!(
            std::fs::metadata(ws.internal()).unwrap().uid(),
            ids.agent.uid
        );
        return format!("{}:{}", id.uid, id.gid);
    }
    format!(
        "{}:{}",
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw()
    )
}
