//! The operator's commands on one user's memory (`runner memory|usage ... --user alice`, often
//! root) open `<root>/alice/.oxydra/memory.db` by its path, and alice's agent can write
//! `.oxydra/`. A link it planted there — the database, `.oxydra/` itself, or the database's
//! `-wal` — is refused before anything is opened: nothing is written into another user's
//! database, none of their notes is shown, and the error says what to check.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Output;

use crate::common::{err_line, ok_json, runner_as};

const BOBS_NOTE: &str = "Bob hides the spare key under the blue flowerpot";

/// `runner COMMAND --root ROOT --user USER ARGS`, with no runner.toml to read.
fn runner(command: &str, root: &Path, user: &str, args: &[&str]) -> Output {
    let mut all = vec!["--config", "no-runner.toml"];
    all.extend_from_slice(args);
    runner_as(command, root, user, &all)
}

/// Bob's notes as bob's own command lists them: how many, and the listing.
fn bobs_notes(root: &Path) -> (u64, String) {
    let listed = ok_json(runner("memory", root, "bob", &["list", "--json"]));
    (
        listed["total"].as_u64().unwrap(),
        listed["notes"].to_string(),
    )
}

/// Every command alice's operator might run fails with a one-line error naming `planted`, and
/// shows and changes nothing of bob's.
fn refused_everywhere(root: &Path, planted: &str) {
    let before = bobs_notes(root);
    let cases: [(&str, &[&str]); 5] = [
        ("memory", &["list", "--json"]),
        ("memory", &["search", "flowerpot", "--json"]),
        ("memory", &["save", "Alice's agent wrote this"]),
        ("memory", &["stats"]),
        ("usage", &["--json"]),
    ];
    for (command, args) in cases {
        let out = runner(command, root, "alice", args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let err = err_line(out);
        assert!(
            err.contains(planted) && err.contains("link") && err.contains("ls -la"),
            "{command} {args:?}: {err}"
        );
        assert!(
            !stdout.contains("flowerpot"),
            "{command} {args:?}: {stdout}"
        );
    }
    // Nothing alice's command wrote reached bob's files (a store scoped to alice would not list
    // it to bob, so the bytes are looked at).
    for file in ["memory.db", "memory.db-wal"] {
        let bytes = std::fs::read(root.join("bob/.oxydra").join(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("Alice's agent"),
            "{file} of bob's was written"
        );
    }
    let after = bobs_notes(root);
    assert!(
        after.0 == before.0 && after.1.contains(BOBS_NOTE) && !after.1.contains("Alice's agent"),
        "bob's memory changed: {after:?}"
    );
}

#[test]
fn links_planted_in_dot_oxydra_never_open_another_users_memory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    ok_json(runner("memory", root, "bob", &["save", BOBS_NOTE]));
    assert_eq!(bobs_notes(root).0, 1);
    let bobs = root.join("bob/.oxydra");
    let alices = root.join("alice/.oxydra");

    // The database itself, a link to bob's.
    std::fs::create_dir_all(&alices).unwrap();
    symlink(bobs.join("memory.db"), alices.join("memory.db")).unwrap();
    refused_everywhere(root, "alice/.oxydra/memory.db");

    // `.oxydra/` itself, a link to bob's.
    std::fs::remove_dir_all(&alices).unwrap();
    symlink(&bobs, &alices).unwrap();
    refused_everywhere(root, "alice/.oxydra");

    // Alice's own database, its write-ahead log a link to a file elsewhere.
    std::fs::remove_file(&alices).unwrap();
    ok_json(runner(
        "memory",
        root,
        "alice",
        &["save", "Alice likes rooibos"],
    ));
    let wal = alices.join("memory.db-wal");
    // A log SQLite left is kept aside (and put back below), not lost.
    let kept = alices.join("kept-wal");
    if wal.exists() {
        std::fs::rename(&wal, &kept).unwrap();
    }
    let elsewhere = root.join("elsewhere");
    std::fs::write(&elsewhere, "not a log").unwrap();
    symlink(&elsewhere, &wal).unwrap();
    refused_everywhere(root, "alice/.oxydra/memory.db-wal");
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "not a log");

    // Put right, alice's memory is hers again.
    std::fs::remove_file(&wal).unwrap();
    if kept.exists() {
        std::fs::rename(&kept, &wal).unwrap();
    }
    let listed = ok_json(runner("memory", root, "alice", &["list", "--json"]));
    assert_eq!(listed["total"], 1, "{listed}");
    assert!(
        listed.to_string().contains("Alice likes rooibos"),
        "{listed}"
    );
}
