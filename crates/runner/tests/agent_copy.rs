//! The copy of agent.toml in `.oxydra/` is the user's agent's to write (and whatever steered
//! the agent's): `runner memory|mcp-servers --root R` without `--agent-config`, often run as
//! root, never follow it outside the user's own `.oxydra/memory.db` — no server of its
//! choosing is reached (least of all with the operator's variable as a token), no file of its
//! choosing is opened — and say to name the operator's own agent.toml.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::ok_json;

/// What the operator's environment holds, which a copy names as a token variable.
const SECRET: &str = "operators-own-secret-4711";

/// A loopback listener keeping the first bytes of every connection made to it.
struct Trap {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Trap {
    fn new() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = vec![0u8; 4096];
                let n = stream.read(&mut buf).unwrap_or(0);
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                kept.lock().unwrap().push(format!("connected: {text}"));
            }
        });
        Self { addr, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// `runner --user alice <command> --root <root> <rest>` with no runner.toml, `SECRET` in its
/// environment.
fn runner(root: &Path, args: &[&str]) -> Output {
    let (command, rest) = args.split_first().unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("--config")
        .arg(root.join("no-runner.toml"))
        .args(["--user", "alice", *command, "--root"])
        .arg(root)
        .args(rest)
        .env("OPERATOR_SECRET", SECRET)
        .env_remove("OXYDRA_LOG")
        .output()
        .unwrap()
}

fn agents_copy(root: &Path, toml: &str) {
    let internal = root.join("alice/.oxydra");
    std::fs::create_dir_all(&internal).unwrap();
    std::fs::create_dir_all(root.join("alice/shared")).unwrap();
    std::fs::write(internal.join("agent.toml"), toml).unwrap();
}

#[test]
fn the_agents_copy_points_no_operator_command_anywhere() {
    let trap = Trap::new();
    let at = trap.addr;
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere.db");
    let cases: [(&str, String, &[&str], &str); 4] = [
        (
            "a remote store with the operator's variable as its token",
            format!(
                "[memory]\nremote_url = \"http://{at}\"\nauth_token_env = \"OPERATOR_SECRET\"\n"
            ),
            &["memory", "list"],
            "memory.remote_url",
        ),
        (
            "an embedder of the agent's choosing, sent the notes and the variable",
            format!(
                "[memory.embedding]\nbackend = \"openai\"\nbase_url = \"http://{at}/v1\"\n\
                 model = \"m\"\ndimensions = 8\napi_key_env = \"OPERATOR_SECRET\"\n"
            ),
            &["memory", "save", "Alice keeps bees"],
            "memory.embedding.backend",
        ),
        (
            "a database file anywhere root can write",
            format!("[memory]\ndb_path = \"{}\"\n", elsewhere.display()),
            &["memory", "list"],
            "memory.db_path",
        ),
        (
            "an HTTP MCP server sent the variable as its bearer token",
            format!(
                "[mcp.servers.far]\nurl = \"http://{at}/mcp\"\nbearer_token_env = \"OPERATOR_SECRET\"\ntimeout_secs = 3\n"
            ),
            &["mcp-servers"],
            "bearer_token_env",
        ),
    ];
    for (what, toml, args, named) in cases {
        let root = tempfile::tempdir().unwrap();
        agents_copy(root.path(), &toml);
        let out = runner(root.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            (out.status.success(), trap.seen(), elsewhere.exists()),
            (false, Vec::<String>::new(), false),
            "{what}: {stderr}"
        );
        assert!(
            stderr.contains("--agent-config") && stderr.contains(named),
            "{what}: {stderr}"
        );
    }
}

/// What cannot point anywhere is still the user's: a copy naming only local settings holds.
#[test]
fn the_agents_copy_still_governs_the_users_own_store() {
    let root = tempfile::tempdir().unwrap();
    agents_copy(
        root.path(),
        "[memory]\ntombstone_retention_days = 7\n[memory.embedding]\nbackend = \"hash\"\n\
         [governance.surfaces.cli]\noperations = [\"read\", \"write\"]\n",
    );
    let saved = ok_json(runner(root.path(), &["memory", "save", "Alice keeps bees"]));
    let id = saved["note_id"].as_str().unwrap();
    let out = runner(root.path(), &["memory", "delete", id]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("PERMISSION_DENIED"),
        "{stderr}"
    );
    assert!(root.path().join("alice/.oxydra/memory.db").exists());
}
