//! `scripts/lib/host.sh` as `scripts/run.sh` uses it, run by a real bash against stand-in `docker`
//! and `dockerd` commands on PATH: the process tier is never chosen for the user (on a terminal,
//! in tmux, only "y" to the question picks it), and a daemon that exits at once is not waited for.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use test_support::Need;

const HOST_SH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/lib/host.sh");

/// A directory of stand-in commands: `docker` answers `info` when `engine_up`; `dockerd` prints
/// an error and exits.
fn fake_bin(engine_up: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write("docker", if engine_up { "exit 0" } else { "exit 1" });
    write(
        "dockerd",
        "echo 'failed to start daemon: no cgroup mount found' >&2; exit 1",
    );
    dir
}

/// `bash -c '. host.sh; SCRIPT'` with the stand-ins first on PATH, stdin not a terminal.
fn host(bin: &Path, script: &str) -> Output {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    Command::new("bash")
        .args(["-c", &format!(". '{HOST_SH}'; SUDO=''; {script}")])
        .env("PATH", path)
        // Not the log of a real daemon the scripts may have started.
        .env("OXYDRA_DOCKERD_LOG", bin.join("dockerd.log"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_dockerd_that_exits_at_once_is_not_waited_for() {
    let bin = fake_bin(false);
    let started = Instant::now();
    let out = host(bin.path(), "ensure_docker_engine");
    let took = started.elapsed();
    let (stdout, _) = text(&out);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("dockerd exited at once"), "{stdout}");
    assert!(stdout.contains("no cgroup mount found"), "{stdout}");
    // The old loop waited 30 s; noticing the exit takes a poll or two.
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn the_process_tier_is_chosen_only_by_the_user() {
    let check = |engine_up: bool, flag: &str, tier: Option<&str>, err_needle: &str| {
        let bin = fake_bin(engine_up);
        let out = host(bin.path(), &format!("choose_first_tier bob {flag}"));
        let (stdout, stderr) = text(&out);
        match tier {
            Some(tier) => assert_eq!(
                (out.status.success(), stdout.trim()),
                (true, tier),
                "{stderr}"
            ),
            None => assert!(!out.status.success() && stdout.is_empty(), "{stdout}"),
        }
        assert!(stderr.contains(err_needle), "{stderr}");
    };
    check(true, "no", Some("container"), "");
    check(false, "yes", Some("process"), "");
    // No engine, no choice, no terminal to ask on: it says how to choose, and picks nothing.
    check(false, "no", None, "./scripts/run.sh --process bob");
}

#[tokio::test]
#[ignore = "needs tmux"]
async fn on_a_terminal_the_user_is_asked_and_only_yes_means_the_process_tier() {
    test_support::need(Need::Tmux);
    for (answer, expect) in [
        ("y", "TIER=process"),
        ("", "./scripts/run.sh --process bob"),
    ] {
        let bin = fake_bin(false);
        let script = format!(
            "PATH='{dir}':\"$PATH\" OXYDRA_DOCKERD_LOG='{dir}/dockerd.log' bash -c \
             \". '{HOST_SH}'; SUDO=''; t=\\$(choose_first_tier bob no) && echo TIER=\\$t; sleep 60\"",
            dir = bin.path().display()
        );
        let tmux = test_support::Tmux::start("oxydra-host-sh", 120, 20, &script);
        tmux.wait_for("the question", |s| s.contains("[y/N]")).await;
        tmux.type_line(answer);
        // Either outcome, whole: the error's last line names the flag (its first line alone
        // can be on the screen before the rest is drawn).
        let screen = tmux
            .wait_for(expect, |s| {
                s.contains("TIER=") || s.contains("./scripts/run.sh --process bob")
            })
            .await;
        assert!(screen.contains(expect), "answer {answer:?}:\n{screen}");
        if answer.is_empty() {
            assert!(!screen.contains("TIER="), "{screen}");
        }
    }
}

#[test]
fn a_users_tier_is_theirs_else_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let bin = fake_bin(true);
    let tier = |file: &str, user: &str| {
        std::fs::write(dir.path().join("runner.toml"), file).unwrap();
        let out = host(
            bin.path(),
            &format!("cd '{}' && user_tier '{user}'", dir.path().display()),
        );
        assert!(out.status.success(), "{:?}", text(&out));
        text(&out).0.trim().to_owned()
    };
    let file = "tier = \"container\"  # the default\n[supervision]\nmax_restarts = 2\n\
                [users.alice]\ngateway_port = 0\n[users.\"bob.x\"]\ntier = \"process\"\n\
                [users.carol]\n";
    let found: Vec<(&str, String)> = ["alice", "bob.x", "carol", "dan"]
        .into_iter()
        .map(|u| (u, tier(file, u)))
        .collect();
    assert_eq!(
        found,
        vec![
            ("alice", "container".to_owned()),
            ("bob.x", "process".to_owned()),
            ("carol", "container".to_owned()),
            ("dan", String::new()),
        ]
    );
    // A user table's `tier` is not the file's: without a top-level one, the default applies.
    let file = "[users.bob]\ntier = \"process\"\n[users.alice]\n";
    assert_eq!(tier(file, "alice"), "container");
    assert_eq!(
        tier("tier = \"process\"\n[users.alice]\n", "alice"),
        "process"
    );
}
