//! `runner memory` with categories, tags and expiry: `save --category/--tag`, `list` pages and
//! what expired, `search --category/--tag`, `export --category/--tag/--since` as JSON Lines and
//! Markdown, and `import` keeping the metadata — as a real child process on real files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::ok_text;

fn runner(root: &Path, user: &str, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("memory")
        .arg("--root")
        .arg(root)
        .arg("--user")
        .arg(user)
        .args(args)
        .env_remove("OXYDRA_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runner starts");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn ok_json(out: Output) -> Value {
    serde_json::from_str(&ok_text(out)).expect("stdout is JSON")
}

#[test]
fn categories_tags_and_expiry_through_the_cli() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let run = |args: &[&str]| runner(root, "alice", args, None);
    ok_json(run(&[
        "save",
        "Alice's cat is Whiskers",
        "--category",
        "fact",
        "--tag",
        "pets",
    ]));
    ok_json(run(&[
        "save",
        "Alice prefers tea",
        "--category",
        "preference",
        "--tag",
        "drinks",
    ]));
    ok_json(run(&[
        "save",
        "Alice's dog is Rex",
        "--category",
        "fact",
        "--tag",
        "pets",
    ]));
    assert!(!run(&["save", "x", "--category", "mood"]).status.success());

    let page = ok_json(run(&[
        "list",
        "--category",
        "fact",
        "--limit",
        "1",
        "--json",
    ]));
    assert_eq!(page["total"], 2);
    assert_eq!(
        page["notes"][0]["content"], "Alice's dog is Rex",
        "newest first"
    );
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let next = ok_json(run(&[
        "list",
        "--category",
        "fact",
        "--limit",
        "1",
        "--cursor",
        &cursor,
        "--json",
    ]));
    assert_eq!(next["notes"][0]["content"], "Alice's cat is Whiskers");
    assert_eq!(next["next_cursor"], Value::Null);
    let text = ok_text(run(&["list", "--tag", "drinks"]));
    assert!(
        text.contains("[preference] #drinks  Alice prefers tea") && text.ends_with("(1 total)\n"),
        "{text}"
    );

    let hits = ok_json(run(&["search", "Alice", "--category", "fact", "--json"]));
    let texts: Vec<&str> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 2, "{hits}");
    assert!(
        hits.as_array()
            .unwrap()
            .iter()
            .all(|h| h["category"] == "fact")
    );

    let exported = ok_text(run(&["export", "--tag", "pets"]));
    assert_eq!(exported.lines().count(), 2);
    assert_eq!(ok_text(run(&["export", "--since", "2999-01-01"])), "");
    let markdown = ok_text(run(&["export", "--markdown"]));
    assert!(
        markdown.contains("## Fact\n\n") && markdown.contains("- Alice prefers tea (tags: drinks)"),
        "{markdown}"
    );

    // Import keeps the metadata, expiry included: an expired note is listed only as expired.
    let mut lines: Vec<Value> = exported
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0]["metadata"]["expires_at"] = Value::from("2001-01-01T00:00:00Z");
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    ok_json(runner(root, "bob", &["import"], Some(&input)));
    let bob = ok_json(runner(
        root,
        "bob",
        &["list", "--category", "fact", "--json"],
        None,
    ));
    assert_eq!(bob["total"], 1);
    assert_eq!(
        bob["notes"][0]["metadata"]["tags"],
        serde_json::json!(["pets"])
    );
    let expired = ok_json(runner(root, "bob", &["list", "--expired", "--json"], None));
    assert_eq!(expired.as_array().unwrap().len(), 1);
}
