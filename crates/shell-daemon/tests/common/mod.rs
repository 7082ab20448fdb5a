//! A real `shell-vm` child on a provisioned temporary workspace, and a protocol client.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the fixture"
)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use types::{
    ShellAuth, ShellBootstrap, ShellRequest, ShellResponse, UserId, WorkspacePaths, encode_line,
};

/// A value in the daemon's environment that no command may see.
pub const DAEMON_SECRET: &str = "sk-daemon-env-secret-4242";
pub const MEMORY_DB: &str = "SQLite format 3 -- private notes";
pub const VAULT_KEY: &str = "sk-vault-key-1234";

/// The shell secret `provision` writes into each user's `.oxydra/shell.secret`.
pub fn shell_secret(user: &str) -> String {
    format!("test-shell-secret-of-{user}-0123456789abcdef0123456789")
}

/// The bootstrap verifier (hex SHA-256) of `user`'s shell secret.
pub fn verifier(user: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(shell_secret(user).as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A bootstrap for `user` under `root`, with the verifier of their secret.
pub fn bootstrap(root: &Path, user: &str) -> ShellBootstrap {
    let mut boot = ShellBootstrap::new(UserId::parse(user).unwrap(), root);
    boot.secret_sha256 = Some(verifier(user));
    boot.proof_key = Some(tools::proof_key_of(&shell_secret(user)));
    boot
}

pub struct Daemon {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub ws: WorkspacePaths,
    pub socket: PathBuf,
}

pub fn provision(root: &Path, user: &str) -> WorkspacePaths {
    let ws = WorkspacePaths::new(root.join(user));
    for d in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(d)).unwrap();
    }
    std::fs::write(ws.default_memory_db(), MEMORY_DB).unwrap();
    std::fs::write(ws.vault().join("key"), VAULT_KEY).unwrap();
    let user = root.join(user);
    let user = user.file_name().unwrap().to_str().unwrap();
    std::fs::write(types::shell_secret_path(&ws), shell_secret(user)).unwrap();
    ws
}

impl Daemon {
    /// Starts `shell-vm` for `alice` with `edit` applied to the default bootstrap.
    pub fn start_with(edit: impl FnOnce(&mut ShellBootstrap)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = provision(dir.path(), "alice");
        provision(dir.path(), "bob");
        let mut boot = bootstrap(dir.path(), "alice");
        edit(&mut boot);
        let socket = boot.socket();
        let mut child = Command::new(env!("CARGO_BIN_EXE_shell-vm"))
            .env("OXYDRA_TEST_SECRET", DAEMON_SECRET)
            .env("OPENAI_API_KEY", DAEMON_SECRET)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(serde_json::to_string(&boot).unwrap().as_bytes())
            .unwrap();
        drop(stdin);
        let daemon = Self {
            child,
            dir,
            ws,
            socket,
        };
        daemon.wait_ready();
        daemon
    }

    pub fn start() -> Self {
        Self::start_with(|_| {})
    }

    fn wait_ready(&self) {
        let start = Instant::now();
        while UnixStream::connect(&self.socket).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "shell-vm did not start listening"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A connection that has proven alice's secret.
    pub fn connect(&self) -> Client {
        let mut client = self.connect_unauthenticated();
        client.send_raw(
            &encode_line(&ShellAuth {
                auth: shell_secret("alice"),
            })
            .unwrap(),
        );
        client
    }

    /// A connection that has sent nothing yet.
    pub fn connect_unauthenticated(&self) -> Client {
        let stream = UnixStream::connect(&self.socket).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Client {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
        }
    }

    /// Runs one command on a fresh connection.
    pub fn run(&self, command: &str) -> Run {
        let mut client = self.connect();
        client.send(1, command, None);
        client.collect(1)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Client {
    pub stream: UnixStream,
    reader: BufReader<UnixStream>,
}

/// Everything one request produced.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub last: Option<ShellResponse>,
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        match self.last {
            Some(ShellResponse::Exit { code, .. }) => code,
            _ => None,
        }
    }
}

impl Client {
    pub fn send(&mut self, id: u64, command: &str, timeout_ms: Option<u64>) {
        let request = ShellRequest {
            id,
            command: command.into(),
            timeout_ms,
            stdin: None,
        };
        self.send_raw(&encode_line(&request).unwrap());
    }

    pub fn send_raw(&mut self, line: &str) {
        self.stream.write_all(line.as_bytes()).unwrap();
    }

    pub fn next(&mut self) -> Option<ShellResponse> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap()),
        }
    }

    /// Reads frames until request `id` ends (frames of other ids are dropped).
    pub fn collect(&mut self, id: u64) -> Run {
        let mut run = Run::default();
        while let Some(frame) = self.next() {
            if frame.id() != Some(id) && frame.id().is_some() {
                continue;
            }
            match frame {
                ShellResponse::Stdout { data, .. } => run.stdout.push_str(&data),
                ShellResponse::Stderr { data, .. } => run.stderr.push_str(&data),
                last => {
                    run.last = Some(last);
                    break;
                }
            }
        }
        run
    }
}

/// Processes (not zombies) whose process group is `pgid`.
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
            && fields.first() != Some(&"Z")
        {
            members.push(pid);
        }
    }
    members
}

/// Waits up to 5 s for every process of group `pgid` to be gone.
pub fn assert_group_gone(pgid: i32) {
    let start = Instant::now();
    loop {
        let left = live_group_members(pgid);
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "survivors in process group {pgid}: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
