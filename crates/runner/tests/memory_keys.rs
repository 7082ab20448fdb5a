//! Encryption at rest through the real `runner`: `[memory_encryption]` in runner.toml, the
//! per-user key file outside every workspace, `runner memory rekey` (encrypt, new key, decrypt)
//! and `runner forget`, against real database files; and, with a running agent in the process
//! tier, a plaintext database encrypted at start, the key out of the shell's reach, and
//! `forget`/`rekey` refused while the agent runs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Chat, Setup, StopOnDrop, respond};

fn set_encryption(setup: &Setup, on: bool) {
    let text = std::fs::read_to_string(&setup.config).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| *l != "[memory_encryption]" && !l.starts_with("enabled = "))
        .collect();
    let text = kept.join("\n") + "\n";
    // Users come last in the file: the section goes before them.
    let (head, users) = text.split_once("[users.").unwrap();
    let section = format!("[memory_encryption]\nenabled = {on}\n");
    std::fs::write(&setup.config, format!("{head}{section}[users.{users}")).unwrap();
}

fn is_plaintext(path: &Path) -> bool {
    std::fs::read(path)
        .unwrap()
        .starts_with(b"SQLite format 3\0")
}

async fn notes(setup: &Setup) -> Vec<String> {
    let out = setup
        .runner_ok(&["--user", "alice", "memory", "export"])
        .await;
    let mut texts: Vec<String> = out
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["text"]
                .as_str()
                .or(v["content"].as_str())
                .unwrap()
                .to_owned()
        })
        .collect();
    texts.sort();
    texts
}

fn key_text(setup: &Setup) -> Option<String> {
    std::fs::read_to_string(setup.root.join(".runner/alice/memory.key")).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rekey_encrypts_changes_the_key_and_decrypts_and_forget_destroys() {
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let mut saved = Vec::new();
    for i in 0..12 {
        let text = format!("fact {i}: the hive is behind the shed, colony {i}");
        setup
            .runner_ok(&["--user", "alice", "memory", "save", &text])
            .await;
        saved.push(text);
    }
    saved.sort();
    let db = setup.ws("alice").default_memory_db();
    assert!(is_plaintext(&db));

    // Encryption on: rekey encrypts the existing file with a fresh private key.
    set_encryption(&setup, true);
    let said = setup
        .runner_ok(&["--user", "alice", "memory", "rekey"])
        .await;
    assert!(said.contains("encrypted at rest"), "{said}");
    let key_file = setup.root.join(".runner/alice/memory.key");
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!is_plaintext(&db));
    assert!(!std::fs::read(&db).unwrap().windows(4).any(|w| w == b"hive"));
    assert_eq!(notes(&setup).await, saved);
    let first = key_text(&setup).unwrap();

    // Again: a new key, every note kept.
    setup
        .runner_ok(&["--user", "alice", "memory", "rekey"])
        .await;
    let second = key_text(&setup).unwrap();
    assert_ne!(first, second);
    assert_eq!(notes(&setup).await, saved);
    // A note saved now is encrypted with the new key too.
    setup
        .runner_ok(&["--user", "alice", "memory", "save", "fact 99: late"])
        .await;
    saved.push("fact 99: late".to_owned());
    saved.sort();

    // Encryption off: rekey decrypts and removes the key file.
    set_encryption(&setup, false);
    let said = setup
        .runner_ok(&["--user", "alice", "memory", "rekey"])
        .await;
    assert!(said.contains("decrypted"), "{said}");
    assert!(key_text(&setup).is_none());
    assert!(is_plaintext(&db));
    assert_eq!(notes(&setup).await, saved);

    // Forget: without --yes a wrong answer destroys nothing; with it, key and database go.
    set_encryption(&setup, true);
    setup
        .runner_ok(&["--user", "alice", "memory", "rekey"])
        .await;
    let refused = tokio::process::Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("--config")
        .arg(&setup.config)
        .args(["--user", "alice", "forget"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = {
        let mut child = refused;
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"bob\n").await.unwrap();
        drop(stdin);
        child.wait_with_output().await.unwrap()
    };
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not confirmed"));
    assert!(db.exists() && key_file.exists());
    assert_eq!(notes(&setup).await, saved);

    let said = setup
        .runner_ok(&["--user", "alice", "forget", "--yes"])
        .await;
    assert!(said.contains("memory forgotten"), "{said}");
    assert!(said.contains("What remains"), "{said}");
    assert!(
        said.contains("gateway token") && said.contains("[users.alice]"),
        "{said}"
    );
    assert!(!key_file.exists());
    for file in runner::database_files(&db) {
        assert!(!file.exists(), "{} left", file.display());
    }
    // A memory command says the memory was forgotten, and makes no new, empty store.
    let out = setup.runner(&["--user", "alice", "memory", "export"]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("alice's memory was forgotten") && err.contains("runner --user alice start"),
        "{err}"
    );
    for file in runner::database_files(&db) {
        assert!(!file.exists(), "{} made again", file.display());
    }
    // --fresh (or the agent's next start) starts the user again with an empty memory.
    setup
        .runner_ok(&["--user", "alice", "memory", "--fresh", "stats"])
        .await;
    assert!(notes(&setup).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn an_encrypted_agent_keeps_its_key_from_the_shell() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    // A plaintext database from before encryption was turned on.
    setup
        .runner_ok(&["--user", "alice", "memory", "save", "the gate code is 4711"])
        .await;
    let db = setup.ws("alice").default_memory_db();
    assert!(is_plaintext(&db));
    set_encryption(&setup, true);

    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    assert!(!is_plaintext(&db), "encrypted at start");
    let key = key_text(&setup).unwrap();
    let key = key.trim();
    let mut chat = Chat::connect(&setup, "alice", None).await;
    chat.save("the boat is called Heron").await;
    let found = chat.turn("search gate code").await.message;
    assert!(found.contains("4711"), "{found}");
    // On the host, no process's command line or environment holds it (it went over stdin).
    common::assert_no_host_process_holds(key);

    // From inside the shell: the key file, the runner's directory, every process's command line
    // and environment, every file under the workspace root and /tmp. The key is given to the
    // shell in two halves (so no command line holds it whole); the shell reports only verdicts.
    // A copy it writes itself into shared/ must be found: the search can fail.
    let root = setup.root.display();
    let (k1, k2) = key.split_at(key.len() / 2);
    let shared = setup.ws("alice").shared();
    let report = chat
        .shell(&format!(
            "k1={k1}; k2={k2}; \
             cat {root}/.runner/alice/memory.key >/dev/null 2>&1 && echo KEY-FILE-READ; \
             ls {root}/.runner/alice >/dev/null 2>&1 && echo KEY-DIR-LISTED; \
             echo \"$k1$k2\" > {probe}; \
             for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do \
               tr '\\0' '\\n' < $f 2>/dev/null | grep -q -e \"$k1$k2\" && echo \"FOUND-IN $f\"; \
             done; \
             grep -rl -e \"$k1$k2\" {root} {ws}/shared {ws}/tmp {ws}/logs {ws}/ipc /tmp \
               2>/dev/null | sort -u | sed 's/^/FOUND-IN /'; \
             rm -f {probe}; echo end-of-search",
            probe = shared.join("probe.txt").display(),
            ws = setup.ws("alice").root.display(),
        ))
        .await;
    assert!(report.contains("end-of-search"), "{report}");
    let found: Vec<&str> = report.lines().filter(|l| l.contains("FOUND-IN")).collect();
    // (Host paths in the shell's output are shown relative to the workspace.)
    assert!(
        found.len() == 1 && found[0].ends_with("shared/probe.txt"),
        "the key was found outside the shell's own copy: {report}"
    );
    assert!(!report.contains("KEY-FILE-READ"), "{report}");
    assert!(!report.contains("KEY-DIR-LISTED"), "{report}");

    // While the agent runs, its database is not re-keyed or forgotten.
    for args in [
        &["--user", "alice", "forget", "--yes"][..],
        &["--user", "alice", "memory", "rekey"][..],
    ] {
        let out = setup.runner(args).await;
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is running"), "{err}");
    }
    assert!(db.exists() && setup.root.join(".runner/alice/memory.key").exists());
    setup.runner_ok(&["stop"]).await;
    let texts = notes(&setup).await;
    assert!(texts.iter().any(|t| t.contains("Heron")), "{texts:?}");
}

/// `oxydra-vm` refuses a bootstrap holding a memory key on its command line (readable by every
/// user of the host), before it touches anything, and does not repeat the key.
#[test]
fn oxydra_vm_refuses_a_memory_key_on_its_command_line() {
    let bins = common::guest_binaries();
    let dir = tempfile::tempdir().unwrap();
    let key = "6b65".repeat(16);
    let boot = serde_json::json!({
        "user_id": "alice",
        "workspace_root": dir.path(),
        "memory_key": key,
    })
    .to_string();
    let out = std::process::Command::new(bins.join("oxydra-vm"))
        .args(["--bootstrap-json", &boot])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("never with --bootstrap-json"), "{said}");
    assert!(!said.contains(&key), "{said}");
    assert!(!dir.path().join("alice").exists(), "nothing provisioned");
}

/// The names in `dir` (empty when it is missing), sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_key_is_refused_by_start_and_the_cli_and_a_loose_one_is_tightened() {
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    setup
        .runner_ok(&[
            "--user",
            "alice",
            "memory",
            "save",
            "the hive is behind the shed",
        ])
        .await;
    set_encryption(&setup, true);
    setup
        .runner_ok(&["--user", "alice", "memory", "rekey"])
        .await;
    let db = setup.ws("alice").default_memory_db();
    assert!(!is_plaintext(&db));
    let key_file = setup.root.join(".runner/alice/memory.key");

    // A key file others can read is set back to 0600 and still opens the notes.
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = setup.runner(&["--user", "alice", "memory", "export"]).await;
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("hive"));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("now 0600"),
        "no warning: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // The key is lost: start and the CLI refuse, and write nothing (no new key).
    std::fs::remove_file(&key_file).unwrap();
    let key_dir = key_file.parent().unwrap();
    let before = listing(key_dir);
    let db_before = std::fs::read(&db).unwrap();
    let _guard = StopOnDrop(setup.config.clone());
    for args in [
        &["--insecure", "--user", "alice", "start", "--detach"][..],
        &["--user", "alice", "memory", "list"][..],
    ] {
        let out = setup.runner(args).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} went on");
        assert!(err.contains("is encrypted but its key"), "{args:?}: {err}");
        assert!(err.contains("forget"), "{args:?}: {err}");
        assert_eq!(listing(key_dir), before, "{args:?} wrote a key");
        assert_eq!(std::fs::read(&db).unwrap(), db_before);
    }
}
