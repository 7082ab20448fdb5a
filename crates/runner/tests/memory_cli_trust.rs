//! `runner memory history|restore|confirm|deleted`, duplicate-checked `save` and `import`, driven
//! as a real child process against real database files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::path::Path;
use std::process::Output;

use crate::common::{err_line, memory_alice, ok_json};

use serde_json::{Value, json};

fn runner(root: &Path, args: &[&str]) -> Output {
    memory_alice(root, args)
}

fn texts(history: &Value) -> Vec<&str> {
    history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["content"].as_str().unwrap())
        .collect()
}

#[test]
fn history_delete_restore_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let id = ok_json(runner(root, &["save", "Lives in Lisbon"]))["note_id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok_json(runner(root, &["update", &id, "Lives in Porto"]));
    let history = ok_json(runner(root, &["history", &id]));
    assert_eq!(history["state"], json!({"state": "live"}));
    assert_eq!(texts(&history), ["Lives in Lisbon", "Lives in Porto"]);
    assert_eq!(
        history["versions"][1]["metadata"]["provenance"]["origin"],
        "cli"
    );

    ok_json(runner(root, &["delete", &id]));
    assert!(err_line(runner(root, &["get", &id])).contains("not found"));
    let deleted = ok_json(runner(root, &["deleted"]));
    assert_eq!(deleted[0]["note"]["note_id"], id.as_str());
    assert_eq!(
        ok_json(runner(root, &["history", &id]))["state"]["state"],
        "deleted"
    );

    let restored = ok_json(runner(root, &["restore", &id]));
    assert_eq!(
        (&restored["note_id"], &restored["content"]),
        (&json!(id), &json!("Lives in Porto"))
    );
    let back = ok_json(runner(root, &["restore", &id, "--version", "1"]));
    assert_eq!(back["content"], "Lives in Lisbon");
    assert_eq!(
        texts(&ok_json(runner(root, &["history", &id]))),
        ["Lives in Lisbon", "Lives in Porto", "Lives in Lisbon"]
    );
    let err = err_line(runner(root, &["restore", &id, "--version", "7"]));
    assert!(err.contains("has no version 7"), "{err}");
    assert_eq!(ok_json(runner(root, &["deleted"])), json!([]));
}

#[test]
fn save_and_import_leave_out_what_the_user_already_has() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let tea = ok_json(runner(
        root,
        &["save", "Alice drinks green tea every morning"],
    ));
    let again = ok_json(runner(
        root,
        &["save", "alice drinks green tea, every morning."],
    ));
    assert_eq!(
        (&again["note_id"], &again["saved"]),
        (&tea["note_id"], &json!(false))
    );

    let line = |id: &str, text: &str, extra: Value| {
        let mut metadata = json!({});
        if !extra.is_null() {
            metadata["provenance"] = extra;
        }
        json!({
            "note_id": id, "content": text, "metadata": metadata,
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
        })
        .to_string()
    };
    let file = root.join("in.jsonl");
    let lines = [
        line(
            "note-00000000-0000-4000-8000-000000000001",
            "ALICE DRINKS GREEN TEA EVERY MORNING",
            Value::Null,
        ),
        line(
            "note-00000000-0000-4000-8000-000000000002",
            "Alice drinks green tea every single morning",
            Value::Null,
        ),
        line(
            "note-00000000-0000-4000-8000-000000000003",
            "Server password rotation is on Fridays",
            json!({"origin": "shell", "confirmed": false, "session_id": "alices-chat",
                   "turn_id": "alices-turn"}),
        ),
        line(
            "note-00000000-0000-4000-8000-000000000004",
            "server password rotation is on fridays!",
            Value::Null,
        ),
    ];
    std::fs::write(&file, lines.join("\n")).unwrap();
    let report = ok_json(runner(root, &["import", file.to_str().unwrap()]));
    assert_eq!(report["imported"], 1);
    assert_eq!(
        report["duplicates"],
        json!([
            {"note_id": "note-00000000-0000-4000-8000-000000000001", "existing": tea["note_id"]},
            {"note_id": "note-00000000-0000-4000-8000-000000000004", "existing": null},
        ])
    );
    assert_eq!(
        report["similar"][0]["note_id"],
        "note-00000000-0000-4000-8000-000000000002"
    );
    assert_eq!(
        report["similar"][0]["similar"][0]["note_id"],
        tea["note_id"]
    );

    assert_eq!(
        report["message"],
        "imported 1; left out 3: 2 with the same text as a note in memory or earlier in the \
         file, 1 too similar to notes in memory (--allow-similar imports them) (their ids in \
         already_present, duplicates, similar)"
    );

    // The imported note says which file it came from (not the other store's session and turn),
    // and stays unconfirmed until confirmed.
    let id = "note-00000000-0000-4000-8000-000000000003";
    let got = ok_json(runner(root, &["get", id]));
    assert_eq!(
        got["metadata"]["provenance"],
        json!({"origin": "import", "confirmed": false, "imported_from": "in.jsonl"})
    );
    let confirms = |root: &Path| {
        ok_json(runner(root, &["audit", "--json", "--limit", "10000"]))
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tool"] == "memory_confirm")
            .count()
    };
    let confirmed = ok_json(runner(root, &["confirm", id]));
    assert_eq!(
        confirmed["metadata"]["provenance"],
        json!({"origin": "import", "confirmed": true, "imported_from": "in.jsonl"})
    );
    assert_eq!(confirms(root), 1);
    // Confirming it again says so, claims no change and writes no audit row.
    let again = ok_json(runner(root, &["confirm", id]));
    assert_eq!(
        again,
        json!({"note_id": id, "changed": false,
               "message": "Already confirmed (or trusted from the start): nothing changed."})
    );
    assert_eq!(confirms(root), 1);

    let forced = ok_json(runner(
        root,
        &["import", file.to_str().unwrap(), "--allow-similar"],
    ));
    assert_eq!(forced["imported"], 1, "{forced}");
    // What the first import added is listed as already there, and the message says why.
    assert_eq!(
        forced["already_present"],
        json!(["note-00000000-0000-4000-8000-000000000003"])
    );
    assert!(
        forced["message"]
            .as_str()
            .unwrap()
            .contains("1 already in memory (same id: imported before)"),
        "{forced}"
    );
    assert_eq!(ok_json(runner(root, &["stats"]))["notes"], 3);
}
