//! `runner memory ...` driven as a real child process against real database files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::path::Path;
use std::process::{Command, Output};

fn runner(root: &Path, user: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("memory")
        .arg("--root")
        .arg(root)
        .arg("--user")
        .arg(user)
        .args(args)
        .env_remove("OXYDRA_LOG")
        .output()
        .expect("runner starts")
}

fn ok_json(out: Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

fn err_line(out: Output) -> String {
    assert!(
        !out.status.success(),
        "expected failure, got {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one-line error expected: {err}");
    err
}

#[test]
fn note_lifecycle_through_the_cli() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let saved = ok_json(runner(
        root,
        "alice",
        &["save", "The user's name is Shantanu"],
    ));
    let id = saved["note_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("note-"));
    assert!(root.join("alice/.oxydra/memory.db").exists());

    let hits = ok_json(runner(root, "alice", &["search", "Shantanu", "--json"]));
    assert_eq!(hits[0]["note_id"], id.as_str());
    assert_eq!(hits[0]["text"], "The user's name is Shantanu");

    let got = ok_json(runner(root, "alice", &["get", &id]));
    assert_eq!(got["content"], "The user's name is Shantanu");

    let updated = ok_json(runner(
        root,
        "alice",
        &["update", &id, "The user prefers to be called SG"],
    ));
    assert_eq!(updated["note_id"], id.as_str());
    let hits = ok_json(runner(root, "alice", &["search", "Shantanu", "--json"]));
    assert!(
        hits.as_array()
            .unwrap()
            .iter()
            .all(|h| h["text"] != "The user's name is Shantanu")
    );

    // Another user sees nothing of alice's memory.
    let bob = ok_json(runner(root, "bob", &["search", "SG", "--json"]));
    assert_eq!(bob, serde_json::json!([]));

    ok_json(runner(root, "alice", &["delete", &id]));
    let err = err_line(runner(root, "alice", &["get", &id]));
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn export_then_import_keeps_ids() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let a = ok_json(runner(root, "alice", &["save", "likes green tea"]));
    let b = ok_json(runner(root, "alice", &["save", "works on Oxydra"]));
    let out = runner(root, "alice", &["export"]);
    assert!(out.status.success());
    let file = root.join("notes.jsonl");
    std::fs::write(&file, &out.stdout).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);

    let imported = ok_json(runner(root, "carol", &["import", file.to_str().unwrap()]));
    assert_eq!(imported["imported"], 2);
    for id in [&a["note_id"], &b["note_id"]] {
        ok_json(runner(root, "carol", &["get", id.as_str().unwrap()]));
    }
    // Importing the same file again adds nothing.
    let again = ok_json(runner(root, "carol", &["import", file.to_str().unwrap()]));
    assert_eq!(again["imported"], 0);
    let stats = ok_json(runner(root, "carol", &["stats"]));
    assert_eq!(stats["notes"], 2);
}

#[test]
fn bad_input_is_one_line_and_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    for (user, args, expect) in [
        ("../evil", vec!["stats"], "invalid --user"),
        ("alice", vec!["get", "note-123"], "invalid note id"),
        (
            "alice",
            vec!["delete", "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f"],
            "not found",
        ),
        ("alice", vec!["save", "   "], "empty"),
        ("alice", vec!["search", "x", "--top-k", "0"], "--top-k"),
    ] {
        let err = err_line(runner(root, user, &args));
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    assert!(!root.join("evil").exists() && !root.join("../evil").exists());
    let stats = ok_json(runner(root, "alice", &["stats"]));
    assert_eq!(stats["notes"], 0);
}
