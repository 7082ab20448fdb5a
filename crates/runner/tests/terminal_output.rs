//! What `runner memory` prints on the operator's terminal when notes and audit fields carry
//! terminal control sequences (OSC 52 clipboard, clear screen, a title, C1 CSI, bidi overrides,
//! `\n` and `\r` for fake rows): shown as escapes, one row per line; raw only with `--raw`; JSON
//! stays valid JSON. The audit rows are stored through a real surface: `runner mcp` on stdio,
//! driven as a client would, with a client name and a namespace chosen to forge rows.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{memory_alice as runner, ok_json};

const NOTE: &str = "Trip notes\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{1b}]0;owned\u{7} \u{9b}31m \
                    \u{202e}fdp.exe\nfake row\r";

/// Characters that must never reach the terminal from a listing.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| *c != '\n' && types::terminal::is_unsafe(*c))
        .collect()
}

fn stdout(root: &Path, args: &[&str]) -> String {
    let out = runner(root, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn note_listings_escape_control_sequences_unless_raw() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let id = ok_json(runner(root, &["save", NOTE]))["note_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for args in [
        vec!["search", "trip notes"],
        vec!["list"],
        vec!["export", "--markdown"],
    ] {
        let text = stdout(root, &args);
        assert!(raw_controls(&text).is_empty(), "{args:?}: {text:?}");
        assert!(
            text.contains("\\x1b]52;c;"),
            "{args:?} shows the escape: {text}"
        );
        assert!(text.contains("\\u{202e}fdp.exe"), "{args:?}: {text}");
        if args[0] != "export" {
            let rows = text.lines().filter(|l| l.contains(&id)).count();
            assert_eq!(rows, 1, "{args:?}: one row per note: {text}");
            assert!(!text.lines().any(|l| l.starts_with("fake row")), "{text}");
        }
        let mut raw = args.clone();
        raw.push("--raw");
        let text = stdout(root, &raw);
        assert!(text.contains("\u{1b}]52;c;"), "{raw:?} is raw: {text:?}");
    }
    for args in [
        vec!["get", &id],
        vec!["list", "--json"],
        vec!["search", "trip", "--json"],
    ] {
        let text = stdout(root, &args);
        assert!(raw_controls(&text).is_empty(), "{args:?}: {text:?}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert!(
            value.to_string().contains("\u{202e}fdp.exe"),
            "the same value: {value}"
        );
    }
}

/// `runner mcp` on stdio, spoken to line by line: `initialize` as `client`, then `calls`.
fn mcp_session(root: &Path, client: &str, calls: &[Value]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["mcp", "--root"])
        .arg(root)
        .args(["--user", "alice"])
        .env_remove("OXYDRA_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    let mut answer = |id: u64| loop {
        let line = lines.next().expect("an answer").unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["id"] == id {
            return value;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": client, "version": "1"}}}),
    );
    answer(0);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (i, call) in calls.iter().enumerate() {
        let id = i as u64 + 1;
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call}));
        answer(id);
    }
    drop(stdin);
    child.wait().unwrap();
}

#[test]
fn forged_audit_fields_print_as_one_escaped_row_each() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    ok_json(runner(root, &["save", "a first note"]));
    let fake = "\n2026-01-01T00:00:00Z cli/oxydra-cli memory_delete write - note-x ok";
    let client = format!("desk{fake}\r\u{1b}[2J\u{1b}]52;c;ZXZpbA==\u{7}");
    mcp_session(
        root,
        &client,
        &[
            json!({"name": "putMemory", "arguments": {
                "namespace": format!("agent.x{fake}\u{1b}[2J"),
                "key": format!("k{fake}\u{202e}"), "value": "v"}}),
            json!({"name": "search_memories", "arguments": {"query": "first"}}),
        ],
    );
    let rows = ok_json(runner(root, &["audit", "--json"]));
    let rows = rows.as_array().unwrap();
    assert!(
        rows.iter().any(|r| r["surface"] == "mcp"),
        "the MCP calls were audited: {rows:?}"
    );
    let text = stdout(root, &["audit"]);
    assert!(raw_controls(&text).is_empty(), "{text:?}");
    let printed: Vec<&str> = text.lines().filter(|l| !l.starts_with('(')).collect();
    assert_eq!(printed.len(), rows.len(), "one line per row: {text}");
    assert!(
        printed.iter().all(|l| l.starts_with("20")),
        "no row starts mid-field: {text}"
    );
    let json = stdout(root, &["audit", "--json"]);
    assert!(raw_controls(&json).is_empty(), "{json:?}");
}
