//! `runner memory ...` driven as a real child process against real database files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::path::Path;
use std::process::Output;

use crate::common::{err_line, ok_json};

fn runner(root: &Path, user: &str, args: &[&str]) -> Output {
    crate::common::runner_as("memory", root, user, args)
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
    // Said to the operator in commands, not in the model's tool names.
    assert_eq!(
        saved["message"],
        format!(
            "Saved as {id}. Change it with `runner memory --user alice update {id} TEXT`, \
             remove it with `runner memory --user alice delete {id}`."
        )
    );
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

    let deleted = ok_json(runner(root, "alice", &["delete", &id]));
    assert_eq!(
        deleted["message"],
        format!(
            "Deleted. It can be restored for 30 days with `runner memory --user alice restore \
             {id}` (`runner memory --user alice deleted` lists what can be)."
        )
    );
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
    // Importing the same file again adds nothing, and says what it left out and why.
    let again = ok_json(runner(root, "carol", &["import", file.to_str().unwrap()]));
    assert_eq!(again["imported"], 0);
    let mut present: Vec<&str> = again["already_present"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    present.sort_unstable();
    let mut ids = vec![
        a["note_id"].as_str().unwrap(),
        b["note_id"].as_str().unwrap(),
    ];
    ids.sort_unstable();
    assert_eq!(present, ids);
    assert_eq!(
        again["message"],
        "imported 0; left out 2: 2 already in memory (same id: imported before) (their ids in \
         already_present, duplicates, similar)"
    );
    // carol's copies say where they came from, and nothing of alice's conversations.
    let got = ok_json(runner(
        root,
        "carol",
        &["get", a["note_id"].as_str().unwrap()],
    ));
    assert_eq!(
        got["metadata"]["provenance"],
        serde_json::json!({"origin": "import", "confirmed": true, "imported_from": "notes.jsonl"})
    );
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

/// One store, fresh everywhere: notes the CLI saves, imports, updates and deletes while an agent's
/// store is open on the same database are ranked by that store's very next search (its in-process
/// vector index catches up from the change log), without a restart.
///
/// The CLI closes its store before it exits, so its last connection checkpoints and deletes the
/// WAL whenever this process's connections hold no lock on the file: the test then fails at the
/// first search (it did, every time, while each database thread read the file's header through a
/// descriptor of its own and so dropped the process's POSIX locks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_writes_while_an_agent_runs_are_ranked_by_its_next_search() {
    use memory::{HybridQuery, MemoryStore, NoteMetadata, Weights};
    use types::{MemoryConfig, SessionId, UserId};

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    let alice = UserId::parse("alice").unwrap();
    let agent = MemoryStore::open(
        memory::Target::Config {
            config: &MemoryConfig::default(),
            user_root: &root.join("alice"),
        },
        memory::OpenOptions::default(),
    )
    .await
    .unwrap();
    agent
        .save(
            &alice,
            None,
            "Tomatoes need full sun and deep watering",
            NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    // Only the vector leg: the keyword leg reads the database directly and would hide a stale index.
    let by_vector = async |query: &str| -> Vec<String> {
        let mut q = HybridQuery::new(vec![SessionId::user_memory(&alice)], query, 3);
        q.weights = Weights {
            vector: 1.0,
            fts: 0.0,
        };
        agent
            .search(&q)
            .await
            .unwrap()
            .into_iter()
            .map(|h| h.text)
            .collect()
    };
    by_vector("garden").await;
    let cli = |args: Vec<String>| {
        let root = root.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                runner(&root, "alice", &args)
            })
            .await
            .unwrap()
        }
    };
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();

    let saved = ok_json(cli(args(&["save", "Favourite tram line is the number seven"])).await);
    let id = saved["note_id"].as_str().unwrap().to_owned();
    let found = by_vector("which tram line does the user like").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("Favourite tram line is the number seven"),
        "{found:?}"
    );

    let out = cli(args(&[
        "update",
        &id,
        "Favourite ferry crosses the harbour at dawn",
    ]))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = by_vector("ferry across the harbour").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("Favourite ferry crosses the harbour at dawn"),
        "{found:?}"
    );

    let file = root.join("import.jsonl");
    let note = serde_json::json!({
        "note_id": "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f",
        "content": "Allergic to peanuts and cashews",
        "metadata": {},
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    });
    std::fs::write(&file, format!("{note}\n")).unwrap();
    let imported = ok_json(cli(args(&["import", file.to_str().unwrap()])).await);
    assert_eq!(imported["imported"], 1);
    let found = by_vector("nut allergy peanuts").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("Allergic to peanuts and cashews"),
        "{found:?}"
    );

    let out = cli(args(&["delete", &id])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = agent.upkeep().stats().await.unwrap();
    by_vector("ferry").await;
    let stats_after = agent.upkeep().stats().await.unwrap();
    assert_eq!(
        stats_after.indexed_vectors, stats_after.vectors,
        "{stats:?} → {stats_after:?}"
    );
}

#[test]
fn cli_writes_are_audited_in_their_transaction_and_secrets_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let saved = ok_json(runner(root, "alice", &["save", "likes oolong tea"]));
    let id = saved["note_id"].as_str().unwrap().to_owned();
    ok_json(runner(root, "alice", &["update", &id, "likes green tea"]));
    let err = err_line(runner(
        root,
        "alice",
        &["save", "deploy key ghp_abcdefghijklmnopqrstuvwxyz0123"],
    ));
    assert!(err.contains("keep secrets out of memory"), "{err}");
    ok_json(runner(root, "alice", &["delete", &id]));

    let rows = ok_json(runner(root, "alice", &["audit", "--json"]));
    let summary: Vec<(String, String, String, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (s("surface"), s("tool"), s("outcome"), s("note_id"))
        })
        .collect();
    let row = |tool: &str, outcome: &str, id: &str| {
        (
            "cli".to_owned(),
            tool.to_owned(),
            outcome.to_owned(),
            id.to_owned(),
        )
    };
    // Newest first; the refused save has its row too, without any note.
    assert_eq!(
        summary,
        [
            row("memory_delete", "ok", &id),
            row("memory_save", "rejected", ""),
            row("memory_update", "ok", &id),
            row("memory_save", "ok", &id),
        ]
    );
    let dump = rows.to_string();
    assert!(!dump.contains("tea") && !dump.contains("ghp_"), "{dump}");

    let out = runner(root, "alice", &["audit", "--since", "2000-01-01"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(
        text.contains(" cli/runner memory_save write notes "),
        "{text}"
    );
    let future = ok_json(runner(
        root,
        "alice",
        &["audit", "--since", "2999-01-01", "--json"],
    ));
    assert_eq!(future, serde_json::json!([]));
}

/// `runner memory search` reads a time in the query as `memory_search` does (now, in the user's
/// zone): a note of the month ~100 days ago named in the query comes first, ahead of a newer note
/// that matches the words better and comes first without it.
#[test]
fn the_cli_search_ranks_notes_of_the_month_it_names_first() {
    use chrono::Datelike;
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let then = chrono::Utc::now() - chrono::Duration::days(100);
    let day = chrono::NaiveDate::from_ymd_opt(then.year(), then.month(), 10).unwrap();
    let month = day.format("%B").to_string();
    let then = format!("{day}T10:00:00Z");
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let notes = [
        ("1", "Dentist appointment booked", then.as_str()),
        (
            "2",
            "Dentist appointment: the dentist appointment reminder",
            now.as_str(),
        ),
    ]
    .map(|(n, content, at)| {
        serde_json::json!({
            "note_id": format!("note-00000000-0000-4000-8000-00000000000{n}"),
            "content": content, "metadata": {}, "created_at": at, "updated_at": at,
        })
        .to_string()
    });
    let file = root.join("dated.jsonl");
    std::fs::write(&file, notes.join("\n") + "\n").unwrap();
    ok_json(runner(root, "alice", &["import", file.to_str().unwrap()]));

    let plain = runner(root, "alice", &["search", "dentist appointment", "--json"]);
    // How the words about time were read goes to stderr; there is none here.
    let said = String::from_utf8_lossy(&plain.stderr).into_owned();
    assert!(!said.contains("read \""), "{said}");
    let plain = ok_json(plain);
    assert_eq!(
        plain[0]["text"], "Dentist appointment: the dentist appointment reminder",
        "{plain}"
    );
    let query = format!("dentist appointment in {month}");
    let dated = runner(root, "alice", &["search", &query, "--json"]);
    let said = String::from_utf8_lossy(&dated.stderr).into_owned();
    assert!(
        said.contains(&format!("read \"{month}\" as 1 {month} ")),
        "{said}"
    );
    let dated = ok_json(dated);
    assert_eq!(dated[0]["text"], "Dentist appointment booked", "{dated}");
    assert_eq!(dated.as_array().unwrap().len(), 2);
    // The same reading beside the one-line hits.
    let lines = runner(root, "alice", &["search", &query]);
    let said = String::from_utf8_lossy(&lines.stderr).into_owned();
    assert!(said.contains(&format!("read \"{month}\"")), "{said}");
    assert!(
        String::from_utf8_lossy(&lines.stdout).contains("Dentist appointment booked"),
        "the hits stay on stdout"
    );
}
