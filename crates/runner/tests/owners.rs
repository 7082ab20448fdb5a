//! Separate owners (issue 31): a runner started as root runs each user's shell under a uid of its
//! own, which owns nothing the agent keeps. Attacked from inside the shell as a prompt-injected
//! model would (the real gateway, the model's `shell_exec`, the real shell daemon): `chmod`,
//! `chown`, `touch -d` and `setxattr` on the workspace root, `.oxydra/`, the gateway token, the
//! memory database and `vault/` are refused and change nothing, and another account (`nobody`)
//! still cannot read the token. Before the fix the shell owned all of them: `chmod 0711 ..
//! ../.oxydra && chmod 0644 ../.oxydra/gateway.token` let any account read the token.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::common;

use common::{Chat, Setup, StopOnDrop, respond};
use test_support::Need;
use types::WorkspacePaths;

/// What an attack could change about a file: owner, group, mode, xattrs, and whether its
/// modification time was set back to 2001 (the agent itself writes `memory.db` meanwhile).
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    uid: u32,
    gid: u32,
    mode: u32,
    set_back: bool,
    xattrs: Vec<String>,
}

fn seen(path: &Path) -> Seen {
    let meta = std::fs::symlink_metadata(path).unwrap();
    Seen {
        uid: meta.uid(),
        gid: meta.gid(),
        mode: meta.mode() & 0o7777,
        set_back: meta.mtime() < 1_000_000_000,
        xattrs: xattrs(path),
    }
}

/// The extended attribute names of `path` (not following a link).
fn xattrs(path: &Path) -> Vec<String> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = rustix::fs::llistxattr(c.as_c_str(), &mut buf).unwrap_or(0);
    buf[..n]
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// The files the agent keeps that the shell must not change.
fn guarded(ws: &WorkspacePaths) -> Vec<PathBuf> {
    vec![
        ws.root.clone(),
        ws.internal(),
        ws.internal().join(gateway::GatewayToken::FILE_NAME),
        ws.default_memory_db(),
        types::shell_secret_path(ws),
        ws.vault(),
    ]
}

/// Every way the shell could open up or touch `path` (given relative to its `shared/`).
fn attacks(path: &str) -> Vec<String> {
    vec![
        format!("chmod 0777 {path}"),
        format!("chmod 0644 {path}"),
        "chown \"$(id -u):$(id -g)\" PATH".replace("PATH", path),
        format!("chgrp \"$(id -g)\" {path}"),
        format!("touch -h -d 2001-01-01 {path}"),
        format!("touch -d 2001-01-01 {path}"),
        format!(
            "/usr/bin/python3 -c 'import os, sys; os.setxattr(sys.argv[1], \"user.pwned\", b\"1\", \
             follow_symlinks=False)' {path}"
        ),
    ]
}

/// True when a shell report says the command failed.
fn failed(report: &str) -> bool {
    report.starts_with("done: exit code ") && !report.starts_with("done: exit code 0")
}

/// `cat FILE` as `nobody`; its output and whether it succeeded.
fn read_as_nobody(file: &Path) -> (bool, String) {
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "cat"])
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The uid and gid of a live process.
fn ids_of(pid: u32) -> (u32, u32) {
    let meta = std::fs::metadata(format!("/proc/{pid}")).unwrap();
    (meta.uid(), meta.gid())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock and root"]
async fn process_tier_the_shell_can_neither_open_up_nor_touch_what_the_agent_keeps() {
    test_support::need(Need::Landlock);
    test_support::need(Need::Root);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let ws = setup.ws("alice");
    let mut chat = Chat::connect(&setup, "alice", None).await;
    chat.save("Alice keeps the spare key under the blue pot")
        .await;
    std::fs::write(ws.vault().join("api.key"), "vault secret").unwrap();

    let before: Vec<Seen> = guarded(&ws).iter().map(|p| seen(p)).collect();
    let relative = [
        "..",
        "../.oxydra",
        "../.oxydra/gateway.token",
        "../.oxydra/memory.db",
        "../.oxydra/shell.secret",
        "../vault",
    ];
    for path in relative {
        for cmd in attacks(path) {
            let report = chat.shell(&cmd).await;
            assert!(failed(&report), "`{cmd}` should fail: {report}");
        }
    }
    // The exact exploit, then another account tries the token.
    let report = chat
        .shell("chmod 0711 .. ../.oxydra && chmod 0644 ../.oxydra/gateway.token")
        .await;
    assert!(failed(&report), "{report}");
    let after: Vec<Seen> = guarded(&ws).iter().map(|p| seen(p)).collect();
    assert_eq!(after, before);
    let token = ws.internal().join(gateway::GatewayToken::FILE_NAME);
    let (ok, text) = read_as_nobody(&token);
    assert!(!ok && text.is_empty(), "nobody read the token: {text}");
    let (ok, text) = read_as_nobody(&ws.vault().join("api.key"));
    assert!(!ok && text.is_empty(), "nobody read the vault: {text}");

    // The shell and the agent run under different uids.
    let marker: runner::RunnerMarker = runner::read_json(&runner::runner_marker_path(&ws))
        .unwrap()
        .unwrap();
    let agent = ids_of(marker.children["oxydra-vm"].pid);
    let shell = ids_of(marker.children["shell-vm"].pid);
    assert_ne!(agent.0, shell.0, "agent {agent:?}, shell {shell:?}");
    assert!(agent.0 >= 1000 && shell.0 >= 1000);

    // The shell owns none of the agent's files; it still works in shared/ and tmp/, and the
    // agent reads what it wrote there (and the shell what the agent wrote).
    for path in guarded(&ws) {
        assert_ne!(std::fs::metadata(&path).unwrap().uid(), shell.0, "{path:?}");
    }
    let report = chat
        .shell("echo from the shell > mine.txt && mkdir -p d && echo x > ../tmp/t && id -u")
        .await;
    assert!(report.starts_with("done: exit code 0"), "{report}");
    assert!(report.contains(&shell.0.to_string()), "{report}");
    let turn = chat.turn("read shared/mine.txt").await;
    assert!(turn.message.contains("from the shell"), "{turn:?}");
    let report = chat.shell("echo more >> mine.txt && cat mine.txt").await;
    assert!(report.contains("more"), "{report}");
    // The shell cannot lock the agent out of shared/ either: it does not own the directory.
    let report = chat.shell("chmod 0700 . ../tmp ../ipc ../logs").await;
    assert!(failed(&report), "{report}");
    let (ok, _) = read_as_nobody(&ws.shared().join("mine.txt"));
    assert!(!ok, "nobody read the user's files");
    drop(chat);
    setup.runner_ok(&["stop"]).await;
}

/// The agent's uid (owner of `.oxydra/`) and the shell's (its daemon's) of a running user.
fn uids_of(ws: &WorkspacePaths) -> (u32, u32) {
    let marker: runner::RunnerMarker = runner::read_json(&runner::runner_marker_path(ws))
        .unwrap()
        .unwrap();
    let agent = std::fs::metadata(ws.internal()).unwrap().uid();
    (agent, ids_of(marker.children["shell-vm"].pid).0)
}

/// The host-wide record's entries for `root` (as `(user, agent, shell)`).
fn recorded(root: &Path) -> Vec<(String, u32, u32)> {
    let text = std::fs::read_to_string(runner::HOST_GUEST_IDS).unwrap();
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    let root = std::fs::canonicalize(root).unwrap();
    record["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| Path::new(e["root"].as_str().unwrap()) == root)
        .map(|e| {
            (
                e["user"].as_str().unwrap().to_owned(),
                u32::try_from(e["agent"].as_u64().unwrap()).unwrap(),
                u32::try_from(e["shell"].as_u64().unwrap()).unwrap(),
            )
        })
        .collect()
}

/// Before the fix every root allocated from the same base: alice of one root ran as alice of
/// the other and could change her files.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock and root"]
async fn two_roots_on_one_host_never_share_a_uid_and_forget_releases_them() {
    test_support::need(Need::Landlock);
    test_support::need(Need::Root);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let one = Setup::new(&server, &["alice", "bob"]);
    let two = Setup::new(&server, &["alice"]);
    let _guards = (
        StopOnDrop(one.config.clone()),
        StopOnDrop(two.config.clone()),
    );
    one.runner_ok(&["--insecure", "start", "--detach"]).await;
    two.runner_ok(&["--insecure", "start", "--detach"]).await;
    let (alice1, bob1, alice2) = (
        uids_of(&one.ws("alice")),
        uids_of(&one.ws("bob")),
        uids_of(&two.ws("alice")),
    );
    let all: std::collections::BTreeSet<u32> = [alice1, bob1, alice2]
        .iter()
        .flat_map(|(a, s)| [*a, *s])
        .collect();
    assert_eq!(all.len(), 6, "{alice1:?} {bob1:?} {alice2:?}");

    // The other root's alice cannot touch the first one's files.
    let target = one.ws("alice").shared().join("x");
    let mut chat = Chat::connect(&two, "alice", None).await;
    for cmd in [
        format!("touch {}", target.display()),
        format!("ls {}", one.ws("alice").shared().display()),
        format!("chmod 0777 {}", one.ws("alice").root.display()),
    ] {
        let report = chat.shell(&cmd).await;
        assert!(failed(&report), "`{cmd}` should fail: {report}");
    }
    assert!(!target.exists());
    drop(chat);

    // `forget` releases the second root's alice: her ids leave the record and her workspace
    // belongs to root.
    two.runner_ok(&["stop"]).await;
    assert_eq!(
        recorded(&two.root),
        vec![("alice".to_owned(), alice2.0, alice2.1)]
    );
    let out = two.runner_ok(&["--user", "alice", "forget", "--yes"]).await;
    assert!(out.contains("guest uids released"), "{out}");
    assert_eq!(recorded(&two.root), Vec::new());
    let ws = two.ws("alice");
    for path in [ws.root.clone(), ws.internal(), ws.shared()] {
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (0, 0), "{}", path.display());
    }
    // The first root's users keep theirs.
    assert_eq!(recorded(&one.root).len(), 2);
    one.runner_ok(&["stop"]).await;
}

/// A workspace of the single-uid layout (its uid in the per-root record of earlier versions)
/// is migrated at start: the agent keeps the old uid, the shell gets a new one and what is in
/// `shared/`; links planted there are not followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock and root"]
async fn a_single_uid_workspace_is_migrated_at_start_following_no_link() {
    test_support::need(Need::Landlock);
    test_support::need(Need::Root);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let sentinel = setup.dir.path().join("sentinel.txt");
    std::fs::write(&sentinel, "the operator's\n").unwrap();
    let user = types::UserId::parse("alice").unwrap();
    let ws = runner::provision(&setup.root, &user).unwrap();
    std::fs::write(ws.shared().join("old.txt"), "old\n").unwrap();
    std::os::unix::fs::symlink(&sentinel, ws.shared().join("link")).unwrap();
    std::os::unix::fs::symlink(setup.dir.path(), ws.ipc().join("swapped")).unwrap();
    // An old uid no other test holds: far from the default base, varied by this process.
    let base = 2_100_000_000 + (std::process::id() % 100_000) * 10;
    std::fs::write(
        setup.root.join(runner::GUEST_IDS_FILE),
        format!("{{\"base\": {base}, \"users\": {{\"alice\": 0}}}}"),
    )
    .unwrap();
    let status = std::process::Command::new("chown")
        .args(["-hR", &format!("{base}:{base}")])
        .arg(&ws.root)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::set_permissions(
        &ws.root,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();

    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let (agent, shell) = uids_of(&ws);
    assert_eq!(agent, base);
    assert_ne!(shell, base);
    let mode = |p: &Path| {
        let m = std::fs::symlink_metadata(p).unwrap();
        (m.uid(), m.gid(), m.mode() & 0o7777)
    };
    assert_eq!(mode(&ws.root), (0, base, 0o750));
    assert_eq!(mode(&ws.shared()), (base, base, 0o2770));
    assert_eq!(mode(&ws.shared().join("old.txt")), (shell, base, 0o664));
    assert_eq!(mode(&sentinel), (0, 0, 0o644));
    assert_eq!(mode(setup.dir.path()), (0, 0, 0o755));
    let mut chat = Chat::connect(&setup, "alice", None).await;
    let report = chat.shell("echo new >> old.txt && cat old.txt").await;
    assert!(report.contains("old\nnew"), "{report}");
    drop(chat);
    setup.runner_ok(&["stop"]).await;
}

/// The container tier follows the same split: the shell's container runs as the shell's uid,
/// which owns none of the directories mounted into it, so it can neither open them up nor shut
/// the agent out of them (busybox has no `setfattr`; the process tier tries xattrs). Before the
/// fix the shell's container ran as the uid owning them: `chmod 0777 /workspace/alice/shared`,
/// run in it as its user with the base commit's binaries, succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker and root"]
async fn container_tier_the_shell_runs_as_its_own_uid_and_cannot_change_the_agents_directories() {
    use crate::common::container::{ContainersOnDrop, container_setup, prepare, start};
    test_support::need(Need::Docker);
    test_support::need(Need::Root);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("alice", "")]);
    let _guard = ContainersOnDrop::new(&setup, &["alice"]);
    start(&setup).await;
    let ws = setup.ws("alice");
    let ids =
        runner::recorded_identity(&setup.root, &types::UserId::parse("alice").unwrap()).unwrap();
    assert_ne!(ids.agent.uid, ids.shell.uid);
    let mut chat = Chat::connect(&setup, "alice", None).await;
    let report = chat.shell("id -u; id -g").await;
    assert_eq!(
        report,
        format!(
            "done: exit code 0\n--- stdout ---\n{}\n{}\n",
            ids.shell.uid, ids.shell.gid
        )
    );
    let dirs = [ws.shared(), ws.tmp(), ws.ipc(), ws.logs()];
    let before: Vec<Seen> = dirs.iter().map(|p| seen(p)).collect();
    for dir in ["shared", "tmp", "ipc", "logs"] {
        let path = format!("/workspace/alice/{dir}");
        for cmd in [
            format!("chmod 0777 {path}"),
            format!("chmod 0 {path}"),
            format!("chown \"$(id -u):$(id -g)\" {path}"),
            format!("chgrp \"$(id -g)\" {path}"),
            format!("touch -d 2001-01-01 {path}"),
        ] {
            let report = chat.shell(&cmd).await;
            assert!(failed(&report), "`{cmd}` should fail: {report}");
        }
    }
    let after: Vec<Seen> = dirs.iter().map(|p| seen(p)).collect();
    assert_eq!(after, before);
    // The shell still works in shared/, and the agent reads what it wrote there.
    let report = chat.shell("echo from the shell > mine.txt").await;
    assert!(report.starts_with("done: exit code 0"), "{report}");
    let turn = chat.turn("read shared/mine.txt").await;
    assert!(turn.message.contains("from the shell"), "{turn:?}");
    let token = ws.internal().join(gateway::GatewayToken::FILE_NAME);
    let (ok, text) = read_as_nobody(&token);
    assert!(!ok && text.is_empty(), "nobody read the token: {text}");
    drop(chat);
    crate::common::container::runner_ok(&setup, &["stop"]).await;
}
