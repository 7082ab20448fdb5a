//! A stdio MCP server through the real `shell-vm` (Landlock, seccomp): started with
//! [`tools::spawn_mcp_server`], spoken to in raw JSON-RPC lines over the piped connection. The
//! server — a FastMCP one written with the official Python SDK — sees what the shell sees and the
//! configured read paths read-only: never `.oxydra/`, `vault/`, the gateway token or another
//! user's workspace. No connection without the secret starts anything; the connection's end is
//! the server's end, and the other way round.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers: a failed setup should fail the test"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use test_support::Need;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tools::{McpPipe, McpSpawnError, spawn_mcp_server};
use types::{McpSpawn, McpSpawnRequest, ShellResponse, encode_line};

use crate::common::{DAEMON_SECRET, Daemon, MEMORY_DB, assert_group_gone, shell_secret};

const PROBE: &str = include_str!("mcp/probe_server.py");
const GATEWAY_TOKEN: &str = "gw-token-never-for-the-server";
const READABLE: &str = "data the server may read\n";

/// The Python with the MCP SDK, and the directories it runs from (its venv and the interpreter's
/// own prefix): what a user names in `read_paths` for such a server.
fn python() -> (PathBuf, Vec<PathBuf>) {
    let python = test_support::mcp_python().expect("python with mcp");
    let out = std::process::Command::new(&python)
        .args([
            "-c",
            "import sys; print(sys.prefix); print(sys.base_prefix)",
        ])
        .output()
        .unwrap();
    let mut dirs: Vec<PathBuf> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect();
    dirs.dedup();
    (python, dirs)
}

fn spec(command: &str, args: &[&str]) -> McpSpawn {
    McpSpawn {
        command: command.into(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: BTreeMap::new(),
    }
}

async fn spawn(d: &Daemon, spec: &McpSpawn) -> Result<McpPipe, McpSpawnError> {
    spawn_mcp_server(&d.socket, &shell_secret("alice"), spec).await
}

/// A JSON-RPC client over the pipe, one line per message.
struct Rpc {
    pipe: McpPipe,
    next_id: u64,
}

impl Rpc {
    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.pipe.writer.write_all(line.as_bytes()).await.unwrap();
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let mut line = String::new();
            let read = tokio::time::timeout(
                Duration::from_secs(30),
                self.pipe.reader.read_line(&mut line),
            )
            .await
            .expect("the server answers")
            .unwrap();
            assert!(read > 0, "the pipe closed waiting for {method}");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    async fn initialize(pipe: McpPipe) -> Self {
        let mut rpc = Self { pipe, next_id: 0 };
        let init = rpc
            .call(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "oxydra-test", "version": "0"}}),
            )
            .await;
        assert_eq!(init["serverInfo"]["name"], "probe", "{init}");
        rpc.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        rpc
    }

    /// Calls tool `name`; its text.
    async fn tool(&mut self, name: &str, arguments: Value) -> String {
        let result = self
            .call("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs landlock and python mcp"]
async fn a_fastmcp_server_answers_and_sees_only_shared_and_its_read_paths() {
    test_support::need(Need::Landlock);
    test_support::need(Need::McpPython);
    let (python, python_dirs) = python();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("readable.txt"), READABLE).unwrap();
    let mut read_paths = python_dirs.clone();
    read_paths.push(data.path().to_owned());
    let d = Daemon::start_with(|boot| boot.extra_read_paths = read_paths);
    std::fs::write(d.ws.shared().join("probe.py"), PROBE).unwrap();
    std::fs::write(d.ws.shared().join("notes.txt"), "shared notes\n").unwrap();
    std::fs::write(d.ws.internal().join("gateway.token"), GATEWAY_TOKEN).unwrap();
    let bob = d.dir.path().join("bob/shared/bob.txt");
    std::fs::write(&bob, "bob's file").unwrap();

    let mut server = spec(python.to_str().unwrap(), &["probe.py"]);
    server
        .env
        .insert("PROBE_SETTING".into(), "from-config".into());
    let mut rpc = Rpc::initialize(spawn(&d, &server).await.unwrap()).await;
    let tools = rpc.call("tools/list", json!({})).await;
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["read", "whoami", "write"]);

    let me: Value = serde_json::from_str(&rpc.tool("whoami", json!({})).await).unwrap();
    assert_eq!(me["uid"], rustix::process::getuid().as_raw(), "{me}");
    assert_eq!(me["cwd"], d.ws.shared().to_str().unwrap(), "{me}");
    assert_eq!(me["probe"], "from-config", "{me}");
    let env = me["env"].to_string();
    assert!(
        !env.contains("OXYDRA_TEST_SECRET") && !env.contains("OPENAI_API_KEY"),
        "{env}"
    );

    let read = |p: &Path| json!({"path": p});
    let mut check_read = async |path: &Path, expected: &str| {
        let got = rpc.tool("read", read(path)).await;
        assert!(got.starts_with(expected), "read {}: {got}", path.display());
        got
    };
    check_read(&d.ws.shared().join("notes.txt"), "OK shared notes").await;
    check_read(&data.path().join("readable.txt"), "OK data the server").await;
    for secret in [
        d.ws.default_memory_db(),
        d.ws.internal().join("gateway.token"),
        types::shell_secret_path(&d.ws),
        d.ws.vault().join("key"),
        bob.clone(),
        PathBuf::from(format!("/proc/{}/environ", d.child.id())),
    ] {
        let got = check_read(&secret, "DENIED").await;
        for leaked in [MEMORY_DB, GATEWAY_TOKEN, "bob's file", DAEMON_SECRET] {
            assert!(!got.contains(leaked), "{}: {got}", secret.display());
        }
    }
    let write = |p: PathBuf| json!({"path": p, "text": "x"});
    let into_read_path = rpc.tool("write", write(data.path().join("new.txt"))).await;
    assert!(into_read_path.starts_with("DENIED"), "{into_read_path}");
    let over_read_path = rpc
        .tool("write", write(data.path().join("readable.txt")))
        .await;
    assert!(over_read_path.starts_with("DENIED"), "{over_read_path}");
    assert_eq!(
        std::fs::read_to_string(data.path().join("readable.txt")).unwrap(),
        READABLE
    );
    let into_shared = rpc
        .tool("write", write(d.ws.shared().join("out.txt")))
        .await;
    assert_eq!(into_shared, "OK");
    assert_eq!(
        std::fs::read_to_string(d.ws.shared().join("out.txt")).unwrap(),
        "x"
    );

    // Closing the connection ends the server and everything in its group.
    let pgid = i32::try_from(me["pgid"].as_i64().unwrap()).unwrap();
    assert_eq!(me["pgid"], me["pid"], "the server leads a group of its own");
    drop(rpc);
    assert_group_gone(pgid);
}

/// Reads the pipe to its end (the server's output, then the connection's close).
async fn read_to_end(pipe: &mut McpPipe) -> String {
    let mut out = String::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        pipe.reader.read_to_string(&mut out),
    )
    .await
    .expect("the connection closes when the server ends")
    .unwrap();
    out
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs landlock"]
async fn the_servers_end_closes_the_connection_and_the_connections_end_kills_the_server() {
    test_support::need(Need::Landlock);
    let d = Daemon::start();
    // A server that writes and exits: its output arrives, then the connection closes.
    let mut pipe = spawn(&d, &spec("/bin/sh", &["-c", "echo bye; echo oops >&2"]))
        .await
        .unwrap();
    assert_eq!(read_to_end(&mut pipe).await, "bye\n");

    // One that leaves a child behind when it exits: the child is killed with it.
    let mut pipe = spawn(&d, &spec("/bin/sh", &["-c", "sleep 300 & echo $$"]))
        .await
        .unwrap();
    let pgid: i32 = read_to_end(&mut pipe).await.trim().parse().unwrap();
    assert_group_gone(pgid);

    // Input reaches the server; the guard alone (a transport task may still hold the halves)
    // ends it.
    let mut pipe = spawn(&d, &spec("/bin/sh", &["-c", "echo $$; exec cat"]))
        .await
        .unwrap();
    let mut line = String::new();
    pipe.reader.read_line(&mut line).await.unwrap();
    let pgid: i32 = line.trim().parse().unwrap();
    pipe.writer.write_all(b"echoed\n").await.unwrap();
    line.clear();
    pipe.reader.read_line(&mut line).await.unwrap();
    assert_eq!(line, "echoed\n");
    let McpPipe {
        reader,
        writer,
        guard,
    } = pipe;
    drop(guard);
    assert_group_gone(pgid);
    drop((reader, writer));

    // A server flooding stderr is not held up by it: its stdout still arrives in full.
    let flood = "head -c 2000000 /dev/zero | tr '\\0' e >&2; echo done";
    let mut pipe = spawn(&d, &spec("/bin/sh", &["-c", flood])).await.unwrap();
    assert_eq!(read_to_end(&mut pipe).await, "done\n");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs landlock"]
async fn no_server_starts_without_the_secret_nor_past_the_limit() {
    test_support::need(Need::Landlock);
    let d = Daemon::start_with(|boot| boot.max_mcp_servers = 1);
    let marker = d.ws.shared().join("spawned");
    let touch = spec("/bin/sh", &["-c", "touch spawned; exec cat"]);
    let request = encode_line(&McpSpawnRequest {
        mcp_spawn: touch.clone(),
    })
    .unwrap();
    for first in [
        String::new(),
        encode_line(&types::ShellAuth {
            auth: shell_secret("bob"),
        })
        .unwrap(),
    ] {
        let mut client = d.connect_unauthenticated();
        client.send_raw(&format!("{first}{request}"));
        let frame = client.next();
        assert!(
            matches!(&frame, Some(ShellResponse::Error { id: None, message }) if message.contains("not authenticated")),
            "{frame:?}"
        );
        assert_eq!(client.next(), None);
    }
    // A client holding the wrong secret cannot check the daemon's proof: it sends nothing.
    let wrong = spawn_mcp_server(&d.socket, "not-the-secret", &touch).await;
    assert!(
        matches!(wrong, Err(McpSpawnError::Refused(ref m)) if m == tools::NOT_THE_DAEMON),
        "{wrong:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!marker.exists(), "a server started without the secret");

    // One server may run; a second is refused until the first has ended.
    let first = spawn(&d, &touch).await.unwrap();
    let second = spawn(&d, &touch).await;
    assert!(
        matches!(second, Err(McpSpawnError::Refused(ref m)) if m.contains("too many MCP servers")),
        "{second:?}"
    );
    drop(first);
    let mut pipe = spawn_when_free(&d, &spec("/bin/echo", &["free"]))
        .await
        .unwrap();
    assert_eq!(read_to_end(&mut pipe).await, "free\n");
    // A program that does not exist is a clear error, without the daemon's paths.
    let missing = spawn_when_free(&d, &spec("no-such-mcp-server", &[])).await;
    let Err(McpSpawnError::Refused(message)) = missing else {
        panic!("{missing:?}");
    };
    assert!(
        message.contains("`no-such-mcp-server` could not be started"),
        "{message}"
    );
    assert!(
        !message.contains(d.dir.path().to_str().unwrap()),
        "{message}"
    );
}

/// Spawns `spec` once the daemon has let go of an ended server's slot (it does so just after
/// closing that server's connection).
async fn spawn_when_free(d: &Daemon, spec: &McpSpawn) -> Result<McpPipe, McpSpawnError> {
    let start = std::time::Instant::now();
    loop {
        match spawn(d, spec).await {
            Err(McpSpawnError::Refused(m))
                if m.contains("too many") && start.elapsed() < Duration::from_secs(10) =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}
