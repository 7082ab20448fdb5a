//! Fixtures for the process-tier tests: the guest binaries, a runner.toml and agent.toml pointing
//! at the scripted model, the `runner` CLI as a child process, and a real WebSocket client.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the fixtures"
)]

pub mod container;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use runner::GatewayMarker;
use serde_json::json;
use test_support::{RecordedRequest, ScriptedLlm, ScriptedReply, ScriptedToolCall};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use types::{
    ClientFrame, PROTOCOL_VERSION, ServerFrame, SessionId, TurnEvent, UserId, WorkspacePaths,
};

pub const WAIT: Duration = Duration::from_secs(20);

/// What a stopped user left behind: anything in `ipc/`, and any of the run files (endpoint,
/// runner marker) in `.oxydra/`. Empty after a clean stop.
pub fn left_behind(ws: &WorkspacePaths) -> Vec<String> {
    let mut left: Vec<String> = std::fs::read_dir(ws.ipc())
        .unwrap()
        .map(|e| format!("ipc/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    left.extend(
        runner::run_files(ws)
            .into_iter()
            .filter(|f| f.exists())
            .map(|f| f.display().to_string()),
    );
    left
}

/// Every host process whose command line or environment holds `needle`, as `<pid> cmdline` or
/// `<pid> environ` (the tests run as root, so every process's files are readable; one that ends
/// while being read is skipped). A process started with `needle` in its environment is found, so
/// the search can fail: see [`assert_no_host_process_holds`].
pub fn host_processes_holding(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        for file in ["cmdline", "environ"] {
            let Ok(bytes) = std::fs::read(entry.path().join(file)) else {
                continue;
            };
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                found.push(format!("{name} {file}"));
            }
        }
    }
    found
}

/// No host process holds `secret` in its command line or environment; first shows that a
/// process holding it (a `sleep` given it in its environment) is found.
pub fn assert_no_host_process_holds(secret: &str) {
    let mut probe = std::process::Command::new("sleep")
        .arg("60")
        .env("OXYDRA_TEST_PROBE", secret)
        .spawn()
        .unwrap();
    // Until the child has exec'd, /proc shows it with its parent's environment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let seen = loop {
        let seen = host_processes_holding(secret);
        if !seen.is_empty() || Instant::now() > deadline {
            break seen;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    probe.kill().unwrap();
    probe.wait().unwrap();
    assert_eq!(
        seen,
        vec![format!("{} environ", probe.id())],
        "the search can fail"
    );
    assert_eq!(host_processes_holding(secret), Vec::<String>::new());
}

/// Makes sure `shell-vm` sits next to `runner` (it belongs to another package): builds it once
/// with the cargo running these tests when it is missing.
pub fn guest_binaries() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_BIN_EXE_runner"))
            .parent()
            .unwrap()
            .to_owned();
        assert!(
            dir.join("oxydra-vm").is_file(),
            "oxydra-vm is built with runner"
        );
        if !dir.join("shell-vm").is_file() {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "-p", "shell-daemon", "-p", "sandbox", "--bins"])
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building shell-vm failed");
        }
        assert!(
            dir.join("shell-vm").is_file(),
            "shell-vm in {}",
            dir.display()
        );
        dir
    })
    .clone()
}

/// The scripted model. The user's message picks the tool (`save X`, `search X`, `sh CMD`,
/// `read PATH`); once the tool answered, the reply is `done: <tool result>`.
pub fn respond(req: &RecordedRequest) -> ScriptedReply {
    let text = req.last_user_text().unwrap_or_default();
    let answered = req
        .messages()
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .any(|m| m["role"] == "tool");
    if answered {
        return ScriptedReply::text(&format!(
            "done: {}",
            req.last_tool_result().unwrap_or_default()
        ));
    }
    let (verb, rest) = text.split_once(' ').unwrap_or((text.as_str(), ""));
    let call = match verb {
        // The scripted model insists on its notes: facts that differ in a word are saved too.
        "save" => ScriptedToolCall::new(
            "memory_save",
            json!({ "content": rest, "allow_similar": true }),
        ),
        "search" => ScriptedToolCall::new("memory_search", json!({ "query": rest })),
        "sh" => ScriptedToolCall::new("shell_exec", json!({ "command": rest })),
        "read" => ScriptedToolCall::new("file_read", json!({ "path": rest })),
        _ => return ScriptedReply::text("hello"),
    };
    ScriptedReply::tool_calls(vec![call])
}

/// A directory with runner.toml (users `users`) and agent.toml (the scripted model, no key,
/// hash embeddings, tools allowed without asking).
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub root: PathBuf,
}

impl Setup {
    pub fn new(server: &ScriptedLlm, users: &[&str]) -> Self {
        guest_binaries();
        let dir = tempfile::tempdir().unwrap();
        // A runner started as root runs each user's guests as their own uid, which must be able
        // to reach the workspaces (a temporary directory is 0700).
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let config = dir.path().join("runner.toml");
        let mut text = String::from(
            "tier = \"process\"\nworkspace_root = \"ws\"\n[supervision]\nready_timeout_secs = 20\nstop_timeout_secs = 5\n\
             backoff_initial_ms = 100\n",
        );
        for u in users {
            text.push_str(&format!("[users.{u}]\n"));
        }
        std::fs::write(&config, text).unwrap();
        std::fs::write(
            dir.path().join("agent.toml"),
            format!(
                "[provider]\nbase_url = \"{}\"\nmodel = \"scripted-model\"\napi_key_env = \"\"\n\
                 max_retries = 0\n[memory.embedding]\nbackend = \"hash\"\n[runtime]\napproval = \"allow\"\n",
                server.base_url()
            ),
        )
        .unwrap();
        let root = dir.path().join("ws");
        Self { dir, config, root }
    }

    pub fn ws(&self, user: &str) -> WorkspacePaths {
        WorkspacePaths::new(self.root.join(user))
    }

    /// `runner --config <runner.toml> ARGS...`.
    pub async fn runner(&self, args: &[&str]) -> Output {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env_remove("OXYDRA_LOG")
            .env_remove("OXYDRA_BIN_DIR")
            .output()
            .await
            .unwrap()
    }

    /// `runner --config <runner.toml> ARGS...` as `nobody` (a runner not started as root), with
    /// the setup's directory as its home.
    pub async fn runner_as_nobody(&self, args: &[&str]) -> Output {
        tokio::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_runner"))
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env_remove("OXYDRA_LOG")
            .env_remove("OXYDRA_BIN_DIR")
            .env("HOME", self.dir.path())
            .output()
            .await
            .unwrap()
    }

    pub async fn runner_ok(&self, args: &[&str]) -> String {
        let out = self.runner(args).await;
        assert!(
            out.status.success(),
            "runner {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn gateway(&self, user: &str) -> Option<GatewayMarker> {
        runner::read_json(&self.ws(user).endpoint()).unwrap_or(None)
    }

    /// Waits for a gateway marker whose pid is not `old_pid` and whose port accepts.
    pub async fn wait_gateway(&self, user: &str, old_pid: Option<u32>) -> GatewayMarker {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(m) = self.gateway(user)
                && Some(m.pid) != old_pid
                && TcpStream::connect(m.socket_addr().unwrap()).await.is_ok()
            {
                return m;
            }
            assert!(Instant::now() < deadline, "no new gateway for {user}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Runs `runner stop` when dropped, so a failing test leaves no process behind.
pub struct StopOnDrop(pub PathBuf);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .arg("--config")
            .arg(&self.0)
            .arg("stop")
            .output();
    }
}

/// A real WebSocket client authenticated as one user.
pub struct Chat {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    pub session: SessionId,
}

/// What a turn did: the tools it called (name, ok) and its final message.
#[derive(Debug)]
pub struct Turn {
    pub tools: Vec<(String, bool)>,
    pub message: String,
}

impl Chat {
    /// Connects to the user's gateway (from its marker) with the token in `.oxydra/`.
    pub async fn connect(setup: &Setup, user: &str, session: Option<&SessionId>) -> Self {
        let marker = setup.gateway(user).expect("gateway marker");
        let token = std::fs::read_to_string(setup.ws(user).internal().join("gateway.token"))
            .unwrap()
            .trim()
            .to_owned();
        let (ws, _) = tokio_tungstenite::connect_async(&marker.url).await.unwrap();
        let mut chat = Self {
            ws,
            session: SessionId::parse("placeholder").unwrap(),
        };
        chat.send(&ClientFrame::Hello {
            protocol_version: PROTOCOL_VERSION,
            token,
            user_id: UserId::parse(user).unwrap(),
            session_id: session.cloned(),
            last_seq: None,
        })
        .await;
        match chat.recv().await {
            ServerFrame::HelloOk { session, .. } => chat.session = session.session_id,
            other => panic!("expected hello_ok, got {other:?}"),
        }
        chat
    }

    pub async fn send(&mut self, frame: &ClientFrame) {
        let text = serde_json::to_string(frame).unwrap();
        self.ws.send(Message::Text(text.into())).await.unwrap();
    }

    pub async fn recv(&mut self) -> ServerFrame {
        next_frame(&mut self.ws).await
    }

    /// Sends `text` and collects the turn.
    pub async fn turn(&mut self, text: &str) -> Turn {
        let session = self.session.clone();
        self.send(&ClientFrame::SendTurn {
            session_id: session,
            text: text.into(),
            client_turn_id: "t".into(),
        })
        .await;
        let mut tools = Vec::new();
        loop {
            match self.recv().await {
                ServerFrame::Turn {
                    event: TurnEvent::ToolFinished { name, ok, .. },
                    ..
                } => tools.push((name, ok)),
                ServerFrame::Turn {
                    event: TurnEvent::TurnCompleted { message, .. },
                    ..
                } => return Turn { tools, message },
                f @ (ServerFrame::Turn {
                    event: TurnEvent::TurnFailed { .. },
                    ..
                }
                | ServerFrame::Turn {
                    event: TurnEvent::TurnCancelled { .. },
                    ..
                }) => {
                    panic!("{text}: {f:?}")
                }
                _ => {}
            }
        }
    }

    /// Saves `fact` through the model's `memory_save`, which must succeed and store a note.
    pub async fn save(&mut self, fact: &str) {
        let turn = self.turn(&format!("save {fact}")).await;
        assert_eq!(
            turn.tools,
            vec![("memory_save".to_owned(), true)],
            "{fact}: {turn:?}"
        );
        assert!(
            !turn.message.contains("\"saved\":false"),
            "{fact}: {turn:?}"
        );
    }

    /// Runs `sh CMD` through the model and returns the shell's report.
    pub async fn shell(&mut self, cmd: &str) -> String {
        let turn = self.turn(&format!("sh {cmd}")).await;
        let names: Vec<&str> = turn.tools.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["shell_exec"], "{cmd}: {turn:?}");
        turn.message
    }
}

/// The next server frame on `ws` (skipping non-text messages), within [`WAIT`].
pub async fn next_frame(ws: &mut WebSocketStream<MaybeTlsStream<TcpStream>>) -> ServerFrame {
    loop {
        let msg = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("a frame in time")
            .expect("connection open")
            .unwrap();
        if let Message::Text(text) = msg {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

/// The stdout of a command that succeeded, as JSON (stderr shown when it failed).
pub fn ok_json(out: std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// `runner memory --root ROOT --user alice ARGS` as a child process.
pub fn memory_alice(root: &Path, args: &[&str]) -> std::process::Output {
    runner_as("memory", root, "alice", args)
}

/// `runner COMMAND --root ROOT --user USER ARGS` as a child process.
pub fn runner_as(command: &str, root: &Path, user: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg(command)
        .arg("--root")
        .arg(root)
        .arg("--user")
        .arg(user)
        .args(args)
        .env_remove("OXYDRA_LOG")
        .output()
        .expect("runner starts")
}

/// The stdout of a command that succeeded (stderr shown when it failed).
pub fn ok_text(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// The one-line error of a command that failed.
pub fn err_line(out: std::process::Output) -> String {
    assert!(
        !out.status.success(),
        "expected failure, got {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one-line error expected: {err}");
    err
}
