//! The operator's reads leave a trace, and the user's own agent.toml holds on every command that
//! opens their store: `runner memory list|export|export-tree` pass the `cli` surface's
//! governance (refused when reads are, audited either way), and `runner memory|mcp --root`
//! without `--agent-config` apply the user's agent.toml (the copy in `.oxydra/`) instead of
//! silently dropping its `[governance]`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use test_support::Need;

use crate::common::{err_line, ok_json};
use crate::mcp_clients::{call, python, results};

/// `runner memory --root ROOT --user alice [--agent-config ROOT/agent.toml] ARGS`.
fn runner(root: &Path, toml: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.arg("memory").arg("--root").arg(root);
    if let Some(toml) = toml {
        let path = root.join("agent.toml");
        std::fs::write(&path, toml).unwrap();
        cmd.arg("--agent-config").arg(path);
    }
    cmd.args(["--user", "alice"])
        .args(args)
        .env_remove("OXYDRA_LOG")
        .output()
        .expect("runner starts")
}

/// `(tool, operation, outcome)` of each audit row, oldest first (the CLI lists them newest
/// first).
fn audit(root: &Path) -> Vec<(String, String, String)> {
    ok_json(runner(root, None, &["audit", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (s("tool"), s("operation"), s("outcome"))
        })
        .collect()
}

/// The user's agent.toml where the runner leaves the copy it gives the agent.
fn users_agent_toml(root: &Path, toml: &str) {
    let dir = root.join("alice").join(".oxydra");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("agent.toml"), toml).unwrap();
}

#[test]
fn list_export_and_export_tree_are_governed_audited_reads() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    ok_json(runner(root, None, &["save", "Keeps bees on the roof"]));
    let out = root.join("out");
    let out = out.to_str().unwrap();
    let listed = runner(root, None, &["list", "--json"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("bees"),
        "{listed:?}"
    );
    let exported = runner(root, None, &["export"]);
    assert!(
        String::from_utf8_lossy(&exported.stdout).contains("bees"),
        "{exported:?}"
    );
    ok_json(runner(root, None, &["export-tree", out]));
    let row = |tool: &str, op: &str, outcome: &str| (tool.into(), op.into(), outcome.into());
    assert_eq!(
        audit(root)[1..],
        [
            row("memory_list", "read", "ok"),
            row("memory_export", "read", "ok"),
            row("memory_export_tree", "read", "ok"),
        ]
    );
    // With reads refused, none of them reads (or prints) anything, and each refusal is audited.
    let no_reads = "[governance.operations.read]\nallowed = false\n";
    let elsewhere = root.join("elsewhere");
    for args in [
        vec!["list", "--json"],
        vec!["export"],
        vec!["export-tree", elsewhere.to_str().unwrap()],
    ] {
        let out = runner(root, Some(no_reads), &args);
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
        assert!(err_line(out).contains("PERMISSION_DENIED"), "{args:?}");
    }
    assert!(!elsewhere.exists());
    let denied: Vec<_> = audit(root)
        .into_iter()
        .filter(|r| r.2 == "denied")
        .map(|r| r.0)
        .collect();
    assert_eq!(
        denied,
        ["memory_list", "memory_export", "memory_export_tree"]
    );
}

#[test]
fn the_users_agent_toml_holds_without_agent_config() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    users_agent_toml(root, "[governance.surfaces.cli]\nread_only = true\n");
    let error = err_line(runner(root, None, &["save", "Lives in Porto"]));
    assert!(
        error.contains("PERMISSION_DENIED") && error.contains("read-only"),
        "{error}"
    );
    assert_eq!(
        audit(root),
        [("memory_save".into(), "write".into(), "denied".into())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python mcp"]
async fn runner_mcp_without_agent_config_keeps_the_users_governance() {
    test_support::need(Need::McpPython);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let saved = ok_json(runner(root, None, &["save", "Alice's door code is 4711"]));
    let id = saved["note_id"].as_str().unwrap().to_owned();
    // The user's agent lets MCP clients write but never read.
    users_agent_toml(
        root,
        "[governance.surfaces.mcp]\noperations = [\"write\"]\n",
    );
    let runner = env!("CARGO_BIN_EXE_runner");
    let root_arg = root.to_str().unwrap();
    let out = python(
        &[
            "stdio", runner, "--user", "alice", "mcp", "--root", root_arg,
        ],
        &json!([
            call("memory_search", json!({"query": "door code"})),
            call(
                "memory_save",
                json!({"content": "Alice's door code is 4711"})
            ),
            call(
                "memory_save",
                json!({"content": "Alice's door code is 4712"})
            ),
        ]),
    )
    .await;
    let r = results(&out, &[false, true, true]);
    assert!(
        r[0]["text"].as_str().unwrap().contains("PERMISSION_DENIED"),
        "{}",
        r[0]
    );
    for answer in &r[1..] {
        let text = answer["text"].as_str().unwrap();
        let answer: Value = serde_json::from_str(text).unwrap();
        assert_ne!(answer["note_id"], id.as_str(), "{answer}");
        assert!(
            answer.get("similar").is_none(),
            "an existing note's text leaked: {answer}"
        );
    }
}

#[test]
fn an_imported_tree_records_its_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let tree = root.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("plan.md"), "the plan").unwrap();
    ok_json(runner(root, None, &["import-tree", tree.to_str().unwrap()]));
    let out = runner(root, None, &["export"]);
    let line = String::from_utf8(out.stdout).unwrap();
    let note: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_eq!(note["metadata"]["provenance"]["origin"], "import", "{note}");
    assert_eq!(note["metadata"]["provenance"]["confirmed"], true, "{note}");
}
