//! Real Landlock on real child processes: `sandbox-exec` confines itself as a role, then runs
//! `/bin/sh -c SCRIPT`; each cell of the DESIGN §4 table for the role is probed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    reason = "tests fail loudly and say when they are skipped"
)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use types::WorkspacePaths;

/// Two provisioned workspaces, `alice` and `bob`, each with a secret in `.oxydra/` and `vault/`.
struct Fixture {
    _dir: tempfile::TempDir,
    alice: WorkspacePaths,
    bob: WorkspacePaths,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let make = |user: &str| {
        let ws = WorkspacePaths::new(dir.path().join(user));
        for d in types::WorkspaceDir::ALL {
            fs::create_dir_all(ws.dir(d)).unwrap();
        }
        fs::write(ws.default_memory_db(), "SQLite format 3\0secret notes").unwrap();
        fs::write(ws.vault().join("key"), "sk-vault-secret").unwrap();
        fs::write(ws.shared().join("hello.txt"), "hello from shared").unwrap();
        ws
    };
    let (alice, bob) = (make("alice"), make("bob"));
    Fixture {
        _dir: dir,
        alice,
        bob,
    }
}

/// Runs `script` under `/bin/sh` confined as `role` in `ws`; returns (success, stdout+stderr).
fn run(role: &str, ws: &Path, script: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sandbox-exec"))
        .args(["--role", role, "--workspace"])
        .arg(ws)
        .args(["--", "/bin/sh", "-c", script])
        .current_dir("/")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `script` must fail with EACCES ("Permission denied"), or succeed, as `allowed` says.
fn check(role: &str, ws: &Path, script: &str, allowed: bool) {
    let (ok, text) = run(role, ws, script);
    if allowed {
        assert!(ok, "{role}: `{script}` should work: {text}");
    } else {
        assert!(
            !ok && text.contains("Permission denied"),
            "{role}: `{script}` should fail with EACCES: {text}"
        );
    }
}

fn sh_path(p: PathBuf) -> String {
    format!("'{}'", p.display())
}

#[test]
#[ignore = "needs landlock"]
fn shell_vm_sees_only_shared_tmp_ipc_logs() {
    test_support::need(test_support::Need::Landlock);
    let f = fixture();
    let ws = &f.alice;
    let denied = [
        format!("cat {}", sh_path(ws.default_memory_db())),
        format!("head -c 16 {}", sh_path(ws.default_memory_db())),
        format!(
            "cp {} {}",
            sh_path(ws.default_memory_db()),
            sh_path(ws.shared().join("x"))
        ),
        format!("ls {}", sh_path(ws.internal())),
        format!("ls {}", sh_path(ws.vault())),
        format!("cat {}", sh_path(ws.vault().join("key"))),
        format!("ls {}", sh_path(ws.root.clone())),
        format!("cat {}", sh_path(f.bob.shared().join("hello.txt"))),
        format!("ls {}", sh_path(f.bob.shared())),
        format!("echo x > {}", sh_path(f.bob.tmp().join("x"))),
        format!("echo x > {}", sh_path(ws.internal().join("planted"))),
        "ls /root /home".to_owned(),
        "cat /proc/self/status".to_owned(),
        "cat /proc/$PPID/environ".to_owned(),
        "cat /proc/1/cmdline".to_owned(),
        "echo x > /tmp/oxydra-sandbox-escape".to_owned(),
    ];
    for script in &denied {
        check("shell-vm", &ws.root, script, false);
    }
    let allowed = [
        format!("cat {}", sh_path(ws.shared().join("hello.txt"))),
        format!(
            "echo hi > {0} && cat {0}",
            sh_path(ws.shared().join("out.txt"))
        ),
        format!(
            "mkdir -p {0} && echo x > {0}/y",
            sh_path(ws.tmp().join("d"))
        ),
        format!("echo log >> {}", sh_path(ws.logs().join("shell-vm.log"))),
        format!("ls {}", sh_path(ws.ipc())),
        "ls /usr/bin > /dev/null && cat /etc/hostname > /dev/null".to_owned(),
    ];
    for script in &allowed {
        check("shell-vm", &ws.root, script, true);
    }
    assert_eq!(
        fs::read_to_string(ws.shared().join("out.txt")).unwrap(),
        "hi\n"
    );
    assert!(!ws.shared().join("x").exists(), "memory.db was copied out");
}

#[test]
#[ignore = "needs landlock"]
fn oxydra_vm_reads_vault_but_never_writes_it_nor_sees_other_users() {
    test_support::need(test_support::Need::Landlock);
    let f = fixture();
    let ws = &f.alice;
    let allowed = [
        format!("cat {}", sh_path(ws.vault().join("key"))),
        format!("ls {}", sh_path(ws.vault())),
        format!("cat {}", sh_path(ws.default_memory_db())),
        format!("echo x >> {}", sh_path(ws.default_memory_db())),
        format!("echo x > {}", sh_path(ws.shared().join("a"))),
        format!("ls {}", sh_path(ws.root.clone())),
    ];
    for script in &allowed {
        check("oxydra-vm", &ws.root, script, true);
    }
    let denied = [
        format!("echo x > {}", sh_path(ws.vault().join("key"))),
        format!("echo x > {}", sh_path(ws.vault().join("new"))),
        format!("rm {}", sh_path(ws.vault().join("key"))),
        format!("echo x > {}", sh_path(ws.root.join("top-level-file"))),
        format!("cat {}", sh_path(f.bob.default_memory_db())),
        format!("cat {}", sh_path(f.bob.vault().join("key"))),
        format!("ls {}", sh_path(f.bob.root.clone())),
        format!("cat {}", sh_path(f.bob.shared().join("hello.txt"))),
    ];
    for script in &denied {
        check("oxydra-vm", &ws.root, script, false);
    }
    assert_eq!(
        fs::read_to_string(ws.vault().join("key")).unwrap(),
        "sk-vault-secret"
    );
}

#[test]
fn a_missing_workspace_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, text) = run("shell-vm", &dir.path().join("nobody"), "echo ran");
    assert!(!ok && !text.contains("ran"), "{text}");
    assert!(text.contains("provision the workspace"), "{text}");
}
