//! `shell_exec` without a shell daemon: it says the shell is not running and runs nothing on the
//! host. (The end-to-end tests against a real `shell-vm` live in crates/shell-daemon/tests.)

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use crate::common;

use std::sync::Arc;

use serde_json::json;
use tools::{SHELL_NOT_RUNNING, ShellExec, Tool, ToolRegistry};
use types::SafetyTier;

fn registry() -> ToolRegistry {
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(ShellExec)).unwrap();
    registry
}

async fn check_not_running(f: &common::Fixture) {
    let marker = f.root.join("shared").join("ran-on-host");
    let command = format!("touch '{}'", marker.display());
    let outcome = registry()
        .execute(
            "shell_exec",
            &json!({ "command": command }).to_string(),
            &f.ctx(),
        )
        .await;
    assert!(!outcome.ok, "{outcome:?}");
    assert_eq!(outcome.output, SHELL_NOT_RUNNING);
    assert!(!marker.exists(), "the command ran on the host");
}

#[tokio::test]
async fn without_a_daemon_it_says_so_and_runs_nothing() {
    let f = common::Fixture::new();
    check_not_running(&f).await;
}

#[tokio::test]
async fn a_stale_socket_is_not_a_running_shell() {
    let f = common::Fixture::new();
    let socket = f.root.join("ipc").join(types::SHELL_SOCKET_NAME);
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    // With a secret in place the tool gets as far as connecting.
    std::fs::write(f.root.join(".oxydra").join(types::SHELL_SECRET_FILE), "s").unwrap();
    check_not_running(&f).await;
}

/// The shell writes `ipc/`: a symlink it plants at `ipc/shell.sock` (to another service's socket)
/// is never followed — the live socket behind it gets no connection, nothing of the secret or the
/// command — and the tool says the shell is not running.
#[tokio::test]
async fn a_link_planted_at_the_shells_socket_is_not_followed() {
    let f = common::Fixture::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let service = elsewhere.path().join("service.sock");
    let listener = tokio::net::UnixListener::bind(&service).unwrap();
    let socket = f.root.join("ipc").join(types::SHELL_SOCKET_NAME);
    std::os::unix::fs::symlink(&service, &socket).unwrap();
    std::fs::write(
        f.root.join(".oxydra").join(types::SHELL_SECRET_FILE),
        "s3cret",
    )
    .unwrap();
    check_not_running(&f).await;
    let accepted =
        tokio::time::timeout(std::time::Duration::from_millis(200), listener.accept()).await;
    assert!(
        accepted.is_err(),
        "the planted link was followed to the service"
    );
}

#[tokio::test]
async fn schema_tier_and_bad_arguments() {
    let tool = ShellExec;
    assert_eq!(tool.safety_tier(), SafetyTier::Privileged);
    assert_eq!(tool.parameters()["required"], json!(["command"]));
    let f = common::Fixture::new();
    for args in [
        json!({}),
        json!({"command": ""}),
        json!({"command": "ls", "timeout_secs": 0}),
        json!({"command": "ls", "timeout_secs": 601}),
        json!({"command": "ls", "cwd": "/"}),
    ] {
        let outcome = registry()
            .execute("shell_exec", &args.to_string(), &f.ctx())
            .await;
        assert!(
            !outcome.ok && outcome.error_kind == Some("invalid_arguments"),
            "{args}: {outcome:?}"
        );
    }
}

/// The shell can replace `ipc/shell.sock` (its own directory) with a listener of its own. One
/// that answers with an endless line made `oxydra-vm` buffer it whole until memory ran out; a
/// frame longer than any the daemon sends is now refused after at most 1 MiB.
#[tokio::test]
async fn an_endless_reply_from_a_socket_the_shell_planted_is_refused_early() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let f = common::Fixture::new();
    std::fs::write(f.root.join(".oxydra").join(types::SHELL_SECRET_FILE), "s").unwrap();
    let socket = f.root.join("ipc").join(types::SHELL_SOCKET_NAME);
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let decoy = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut auth = String::new();
        BufReader::new(read).read_line(&mut auth).await.unwrap();
        // At most 64 MiB, so that a client reading it all does not take the test host down.
        let chunk = vec![b'x'; 64 * 1024];
        let mut sent = 0usize;
        while sent < 64 * 1024 * 1024 && write.write_all(&chunk).await.is_ok() {
            sent += chunk.len();
        }
        drop(write);
        sent
    });
    let outcome = registry()
        .execute(
            "shell_exec",
            &json!({ "command": "true" }).to_string(),
            &f.ctx(),
        )
        .await;
    let sent = decoy.await.unwrap();
    assert!(!outcome.ok, "{outcome:?}");
    assert!(
        outcome
            .output
            .contains("the shell sent a reply longer than"),
        "{}",
        outcome.output
    );
    assert!(
        sent < 8 * 1024 * 1024,
        "the client read {sent} bytes of one line"
    );
}

/// The shell can rename the daemon's socket away and bind a listener of its own at
/// `ipc/shell.sock` (or an MCP server's `ipc/mcp-<name>.sock`). It was handed the user's shell
/// secret on the first line, then the command or the MCP server's request with its `env` (keys
/// the shell could not otherwise read). Now a listener that cannot prove it is the daemon gets a
/// random challenge and nothing else.
#[tokio::test]
async fn a_listener_the_shell_put_at_the_socket_gets_neither_the_secret_nor_the_request() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let f = common::Fixture::new();
    let secret = "s3cret-of-the-agent-0123456789";
    std::fs::write(
        f.root.join(".oxydra").join(types::SHELL_SECRET_FILE),
        secret,
    )
    .unwrap();
    let socket = f.root.join("ipc").join(types::SHELL_SOCKET_NAME);
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    // The decoy answers like a daemon would (a proof of its own making) and keeps all it reads.
    let decoy = tokio::spawn(async move {
        let mut heard = Vec::new();
        for _ in 0..2 {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = stream.read(&mut buf).await.unwrap();
            heard.extend_from_slice(&buf[..n]);
            let forged = format!("{{\"type\":\"proof\",\"proof\":\"{}\"}}\n", "ab".repeat(32));
            let _ = stream.write_all(forged.as_bytes()).await;
            let wait = std::time::Duration::from_millis(300);
            while let Ok(Ok(n)) = tokio::time::timeout(wait, stream.read(&mut buf)).await {
                if n == 0 {
                    break;
                }
                heard.extend_from_slice(&buf[..n]);
            }
        }
        String::from_utf8_lossy(&heard).into_owned()
    });
    let outcome = registry()
        .execute(
            "shell_exec",
            &json!({ "command": "echo the-command" }).to_string(),
            &f.ctx(),
        )
        .await;
    assert!(!outcome.ok, "{outcome:?}");
    assert_eq!(outcome.output, tools::NOT_THE_DAEMON);
    let spec = types::McpSpawn {
        command: "mcp-server".into(),
        args: Vec::new(),
        env: [("API_TOKEN".to_owned(), "tok-of-the-mcp-server".to_owned())].into(),
    };
    let spawned = tools::spawn_mcp_server(&socket, secret, &spec).await;
    assert!(
        matches!(&spawned, Err(tools::McpSpawnError::Refused(m)) if m == tools::NOT_THE_DAEMON),
        "{spawned:?}"
    );
    let heard = decoy.await.unwrap();
    assert!(heard.contains("\"challenge\""), "{heard}");
    for kept in [secret, "the-command", "tok-of-the-mcp-server", "mcp-server"] {
        assert!(!heard.contains(kept), "the decoy heard {kept:?}: {heard}");
    }
}
