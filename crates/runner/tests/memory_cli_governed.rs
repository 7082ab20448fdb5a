//! `runner memory` writes through the governance of the `cli` surface, as a real child process on
//! real database files: permissions and the surface's read-only mode from agent.toml refuse with
//! the ADR's error object and change nothing; secrets and personal data follow the surface's
//! policy; imports leave an audit row per note; a tight rate limit does not throttle an import.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{err_line, ok_json};

/// `runner memory --root ROOT --user alice [--agent-config agent.toml] ARGS`, with `toml`
/// written as the agent config when given.
fn runner(root: &Path, toml: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.arg("memory").arg("--root").arg(root);
    if let Some(toml) = toml {
        let path = root.join("agent.toml");
        std::fs::write(&path, toml).unwrap();
        cmd.arg("--agent-config").arg(path);
    }
    cmd.arg("--user")
        .arg("alice")
        .args(args)
        .env_remove("OXYDRA_LOG")
        .output()
        .expect("runner starts")
}

/// The ADR error object a refused command prints as its one-line error.
fn adr_error(out: Output) -> Value {
    let err = err_line(out);
    let object = err.trim().strip_prefix("error: ").unwrap_or(&err);
    serde_json::from_str(object).expect(&err)
}

fn exported(id: u32, text: &str) -> String {
    json!({
        "note_id": format!("note-00000000-0000-4000-8000-{id:012}"),
        "content": text, "metadata": {},
        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
    })
    .to_string()
}

/// `(tool, outcome, note_id)` of each audit row, oldest first (the CLI lists newest first).
fn audit(root: &Path) -> Vec<(String, String, String)> {
    ok_json(runner(root, None, &["audit", "--json", "--limit", "10000"]))
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            assert_eq!((s("surface"), s("client")), ("cli".into(), "runner".into()));
            (s("tool"), s("outcome"), s("note_id"))
        })
        .collect()
}

#[test]
fn cli_writes_refused_by_permissions_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let id = ok_json(runner(root, None, &["save", "Lives in Lisbon"]))["note_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let file = root.join("in.jsonl");
    std::fs::write(&file, exported(1, "Owns a red bicycle")).unwrap();
    let tree = root.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("plan.md"), "the plan").unwrap();
    let file = file.to_str().unwrap();
    let tree = tree.to_str().unwrap();

    let read_only = "[governance.surfaces.cli]\nread_only = true\n";
    let reads_only =
        |tool: &str| format!("[governance.tool_permissions.{tool}]\noperations = [\"read\"]\n");
    let cases: Vec<(String, Vec<&str>, &str)> =
        vec![
        (read_only.into(), vec!["save", "Lives in Porto"], "read_only"),
        (read_only.into(), vec!["update", &id, "Lives in Porto"], "read_only"),
        (read_only.into(), vec!["delete", &id], "read_only"),
        (read_only.into(), vec!["import", file], "read_only"),
        (read_only.into(), vec!["import-tree", tree], "read_only"),
        (read_only.into(), vec!["confirm", &id], "read_only"),
        (reads_only("memory_save"), vec!["save", "Lives in Porto"], "operation"),
        (reads_only("memory_import"), vec!["import", file], "operation"),
        (reads_only("memory_restore"), vec!["restore", &id, "--version", "1"], "operation"),
        (
            "[governance.tool_permissions.memory_delete]\nallowed_namespaces = [\"public.*\"]\n"
                .into(),
            vec!["delete", &id],
            "namespace",
        ),
    ];
    for (toml, args, reason) in &cases {
        let error = adr_error(runner(root, Some(toml), args));
        assert_eq!(error["type"], "error", "{args:?}: {error}");
        assert_eq!(
            error["error"]["code"], "PERMISSION_DENIED",
            "{args:?}: {error}"
        );
        let message = error["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty() && !message.contains(root.to_str().unwrap()));
        let rows = audit(root);
        let last = rows.last().unwrap();
        assert_eq!(last.1, "denied", "{args:?}: {rows:?}");
        let stored = ok_json(runner(root, None, &["audit", "--json"]));
        let row = stored.as_array().unwrap().first().unwrap().clone();
        assert_eq!(row["reason"], *reason, "{args:?}: {row}");
    }
    // Nothing changed: the one note, as saved, and no file in the tree.
    let note = ok_json(runner(root, None, &["get", &id]));
    assert_eq!(note["content"], "Lives in Lisbon");
    assert_eq!(ok_json(runner(root, None, &["stats"]))["notes"], 1);
    let out = root.join("out");
    assert_eq!(
        ok_json(runner(root, None, &["export-tree", out.to_str().unwrap()]))["exported_files"],
        0
    );
    let rows = audit(root);
    assert_eq!(rows[0], ("memory_save".into(), "ok".into(), id.clone()));
    // The save, each refusal, and the `get` and `export-tree` above (reads, audited as such).
    assert_eq!(rows.len(), 1 + cases.len() + 2, "{rows:?}");
    assert_eq!(rows[rows.len() - 2].0, "memory_get");
    assert_eq!(rows.last().unwrap().0, "memory_export_tree");
}

#[test]
fn cli_reads_are_governed_and_audited() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let id = ok_json(runner(root, None, &["save", "Keeps bees on the roof"]))["note_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = runner(root, None, &["search", "bees"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&id) && text.contains("Keeps bees on the roof"),
        "{text}"
    );
    let hits = ok_json(runner(root, None, &["search", "bees", "--json"]));
    assert_eq!(hits[0]["note_id"], id.as_str());
    assert_eq!(
        ok_json(runner(root, None, &["get", &id]))["content"],
        "Keeps bees on the roof"
    );
    assert_eq!(
        ok_json(runner(root, None, &["history", &id]))["versions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(
        ok_json(runner(root, None, &["deleted"]))
            .as_array()
            .unwrap()
            .is_empty()
    );
    let ok = |tool: &str, note: &str| (tool.to_owned(), "ok".to_owned(), note.to_owned());
    assert_eq!(
        audit(root),
        [
            ok("memory_save", &id),
            ok("memory_search", ""),
            ok("memory_search", ""),
            ok("memory_get", ""),
            ok("memory_history", ""),
            ok("memory_deleted", ""),
        ]
    );
    // A read the operator's policy refuses is refused like a write, and audited as denied.
    let writes_only = "[governance.tool_permissions.memory_get]\noperations = [\"write\"]\n";
    let error = adr_error(runner(root, Some(writes_only), &["get", &id]));
    assert_eq!(error["error"]["code"], "PERMISSION_DENIED", "{error}");
    let rows = audit(root);
    assert_eq!(rows.last().unwrap().1, "denied", "{rows:?}");
}

#[test]
fn secrets_and_personal_data_follow_the_cli_policy() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let secret = "deploy key ghp_abcdefghijklmnopqrstuvwxyz0123";
    let error = adr_error(runner(root, None, &["save", secret]));
    assert_eq!(error["error"]["code"], "PII_DETECTED");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("keep secrets out of memory"),
        "{error}"
    );
    // An import holding one secret is refused whole.
    let file = root.join("in.jsonl");
    let lines = [exported(1, "Owns a red bicycle"), exported(2, secret)];
    std::fs::write(&file, lines.join("\n")).unwrap();
    let error = adr_error(runner(root, None, &["import", file.to_str().unwrap()]));
    assert_eq!(error["error"]["code"], "PII_DETECTED");
    let tree = root.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("keys.md"), secret).unwrap();
    let error = adr_error(runner(root, None, &["import-tree", tree.to_str().unwrap()]));
    assert_eq!(error["error"]["code"], "PII_DETECTED");
    assert_eq!(ok_json(runner(root, None, &["stats"]))["notes"], 0);

    // Personal data: stored as given by default, redacted or refused when the surface says so.
    let mail = "Write to alice.liddell@example.org about the lease";
    let redact = "[governance.surfaces.cli]\npii = \"redact\"\n";
    let saved = ok_json(runner(root, Some(redact), &["save", mail]));
    let note = ok_json(runner(
        root,
        None,
        &["get", saved["note_id"].as_str().unwrap()],
    ));
    assert_eq!(note["content"], "Write to [REDACTED:email] about the lease");
    std::fs::write(&file, exported(3, "Call +44 20 7946 0958 after six")).unwrap();
    let reject = "[governance.surfaces.cli]\npii = \"reject\"\n";
    let error = adr_error(runner(
        root,
        Some(reject),
        &["import", file.to_str().unwrap()],
    ));
    assert_eq!(error["error"]["code"], "PII_DETECTED");
    let imported = ok_json(runner(
        root,
        Some(redact),
        &["import", file.to_str().unwrap()],
    ));
    assert_eq!(imported["imported"], 1);
    let note = ok_json(runner(
        root,
        None,
        &["get", "note-00000000-0000-4000-8000-000000000003"],
    ));
    assert_eq!(note["content"], "Call [REDACTED:phone] after six");

    let dump = ok_json(runner(root, None, &["audit", "--json"])).to_string();
    assert!(!dump.contains("ghp_") && !dump.contains("lease"), "{dump}");
}

#[test]
fn imports_leave_an_audit_row_per_note_and_are_not_throttled() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // One call a minute at most, for every CLI operation: an import is one call, whatever its size.
    let tight = "[governance.rate_limits.tools]\n\"*\" = { per_minute = 1.0, burst = 1 }\n\
                 [governance.rate_limits.namespaces]\nnotes = { per_minute = 1.0, burst = 1 }\n";
    let n = 300;
    let lines: Vec<String> = (1..=n)
        .map(|i| {
            exported(
                i,
                &format!("Imported fact number {i} about planet {}", i * 7919),
            )
        })
        .collect();
    let file = root.join("in.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let report = ok_json(runner(
        root,
        Some(tight),
        &["import", file.to_str().unwrap(), "--allow-similar"],
    ));
    assert_eq!(report["imported"], n);

    let tree = root.join("tree");
    std::fs::create_dir_all(tree.join("projects")).unwrap();
    std::fs::write(tree.join("notes.md"), "one\ntwo\n").unwrap();
    std::fs::write(tree.join("projects/plan.md"), "the plan").unwrap();
    let report = ok_json(runner(
        root,
        Some(tight),
        &["import-tree", tree.to_str().unwrap()],
    ));
    assert_eq!(report["imported_files"], 2);

    let first = "note-00000000-0000-4000-8000-000000000001";
    ok_json(runner(root, Some(tight), &["delete", first]));
    ok_json(runner(root, Some(tight), &["restore", first]));
    ok_json(runner(root, Some(tight), &["confirm", first]));

    let rows = audit(root);
    let imported: Vec<&str> = rows
        .iter()
        .filter(|(tool, outcome, _)| tool == "memory_import" && outcome == "ok")
        .map(|(_, _, id)| id.as_str())
        .collect();
    let expected: Vec<String> = (1..=n)
        .map(|i| format!("note-00000000-0000-4000-8000-{i:012}"))
        .collect();
    assert_eq!(imported, expected);
    let tree_rows = rows.iter().filter(|r| r.0 == "memory_import_tree").count();
    assert_eq!(tree_rows, 2, "{:?}", &rows[n as usize..]);
    let tail: Vec<(&str, &str, &str)> = rows[n as usize + 2..]
        .iter()
        .map(|(t, o, id)| (t.as_str(), o.as_str(), id.as_str()))
        .collect();
    // The note was confirmed already (the file did not say otherwise): confirming it changed
    // nothing and wrote no row (a confirmation that changes one writes its row: trust tests).
    assert_eq!(
        tail,
        [
            ("memory_delete", "ok", first),
            ("memory_restore", "ok", first),
        ]
    );
}
