//! The runner's lifecycle commands as real processes: init, tier checks, a foreground runner
//! stopped by a signal, the restart bound, and configuration mistakes reported before launch.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{Setup, StopOnDrop, left_behind, respond};
use runner::RunnerMarker;
use rustix::process::Signal;

#[tokio::test]
async fn init_writes_both_files_once_and_provisions_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("conf/runner.toml");
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .arg("--config")
            .arg(&config)
            .args(["--user", "carol", "init"])
            .output()
            .unwrap()
    };
    let out = run();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let loaded = runner::RunnerConfig::load(&config).unwrap();
    let users: Vec<&str> = loaded.users.iter().map(|u| u.id.as_str()).collect();
    assert_eq!(users, vec!["carol"]);
    assert_eq!(loaded.workspace_root, dir.path().join("conf/workspaces"));
    assert_eq!(
        loaded.users[0].agent_config,
        Some(dir.path().join("conf/agent.toml"))
    );
    runner::load_agent_config(loaded.users[0].agent_config.as_deref()).unwrap();
    assert!(dir.path().join("conf/workspaces/carol/.oxydra").is_dir());
    let again = run();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    // On the existing file, init adds a user (an id that must be quoted as a TOML key) and keeps
    // every other byte; options that only shape a new file are refused.
    let before = std::fs::read_to_string(&config).unwrap();
    let add = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .unwrap()
    };
    let out = add(&["--user", "eve@example.org", "init"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = std::fs::read_to_string(&config).unwrap();
    assert_eq!(after, format!("{before}\n[users.\"eve@example.org\"]\n"));
    let users: Vec<String> = runner::RunnerConfig::load(&config)
        .unwrap()
        .users
        .iter()
        .map(|u| u.id.to_string())
        .collect();
    assert_eq!(users, vec!["carol", "eve@example.org"]);
    assert!(
        dir.path()
            .join("conf/workspaces/eve@example.org/.oxydra")
            .is_dir()
    );
    // `--tier` now gives a new user their own tier (tests/user_tiers.rs); the root stays the file's.
    let out = add(&["--user", "dan", "init", "--workspace-root", "/elsewhere"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--workspace-root only shapes a new file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A user id that would read as an option is refused, and nothing is written.
    let before = std::fs::read_to_string(&config).unwrap();
    let out = add(&["--user=-rf", "init"]);
    assert!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("must not start with '.' or '-'"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
    // A new file for a user id with a dot: runner.toml is valid and names exactly that user.
    let fresh = dir.path().join("fresh/runner.toml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("--config")
        .arg(&fresh)
        .args(["--user", "bob.smith", "init"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let users: Vec<String> = runner::RunnerConfig::load(&fresh)
        .unwrap()
        .users
        .iter()
        .map(|u| u.id.to_string())
        .collect();
    assert_eq!(users, vec!["bob.smith"]);
    let out = add(&["--user", "carlo", "status"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("did you mean `carol`?"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn mistakes_are_reported_before_anything_starts() {
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let check = |out: std::process::Output, needle: &str| {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !out.status.success() && err.contains(needle),
            "{needle}: {err}"
        );
    };
    check(
        setup
            .runner(&["--insecure", "--user", "zed", "start"])
            .await,
        "no user `zed` (configured: alice)",
    );
    // The container tier with an image that was never built: says so (or that no engine runs).
    let text = std::fs::read_to_string(&setup.config).unwrap();
    assert!(text.starts_with("tier = \"process\"\n"), "{text}");
    std::fs::write(
        &setup.config,
        format!(
            "{}\n[container]\noxydra_vm_image = \"oxydra-vm:missing-e2e\"\n",
            text.replacen("tier = \"process\"", "tier = \"container\"", 1)
        ),
    )
    .unwrap();
    let expected = if runner::connect_docker().await.is_ok() {
        "is not built"
    } else {
        "Docker"
    };
    let out = tokio::time::timeout(Duration::from_secs(120), setup.runner(&["start"]))
        .await
        .expect("start with a missing image fails in time");
    check(out, expected);
    if expected == "is not built" {
        // Nothing is left behind by the failed start.
        let filter = format!(
            "label={}={}",
            runner::LABEL_WORKSPACE,
            setup.ws("alice").root.display()
        );
        let left = std::process::Command::new("docker")
            .args(["ps", "-a", "-q", "--filter", &filter])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&left.stdout), "", "containers left");
    }
    std::fs::write(&setup.config, &text).unwrap();
    let agent = setup.dir.path().join("agent.toml");
    let agent_text = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(
        &agent,
        agent_text.replace(
            "api_key_env = \"\"",
            "api_key_env = \"OXYDRA_TEST_UNSET_KEY\"",
        ),
    )
    .unwrap();
    check(
        setup.runner(&["--insecure", "start"]).await,
        "provider.api_key_env names OXYDRA_TEST_UNSET_KEY, which is not set",
    );
    // A malformed base_url is refused at start, naming the key, not at the first turn.
    let bad_url = agent_text
        .lines()
        .map(|line| {
            if line.starts_with("base_url") {
                "base_url = \"http://127.0.0.1:notaport/v1\""
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&agent, bad_url).unwrap();
    check(
        setup.runner(&["--insecure", "start"]).await,
        "provider.base_url",
    );
    std::fs::write(&agent, "[provider]\nmodle = \"x\"\n").unwrap();
    check(
        setup.runner(&["--insecure", "start"]).await,
        "unknown field `modle`",
    );
    // A user started on a model their agent.toml does not offer: refused before anything starts.
    std::fs::write(&agent, &agent_text).unwrap();
    std::fs::write(
        &setup.config,
        text.replacen("[users.alice]", "[users.alice]\nmodel = \"smart\"", 1),
    )
    .unwrap();
    check(
        setup.runner(&["--insecure", "start"]).await,
        "the model \"smart\", which their agent.toml does not offer: add [models.smart]",
    );
    assert!(!runner::runner_marker_path(&setup.ws("alice")).exists());
}

/// A foreground `runner --insecure start` and its stdout, line by line.
struct Foreground {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Foreground {
    async fn next_line(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("stdout open")
    }
}

/// Starts a foreground `runner --insecure start` and waits until it says alice is ready.
async fn foreground(setup: &Setup) -> Foreground {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("--config")
        .arg(&setup.config)
        .args(["--insecure", "start"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut fg = Foreground {
        child,
        lines: tokio::io::BufReader::new(stdout).lines(),
    };
    let ready = fg.next_line().await;
    assert!(
        ready.starts_with("alice: ready at ws://127.0.0.1:"),
        "{ready}"
    );
    fg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn sigint_and_sigterm_stop_a_foreground_runner_and_its_guests() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let ws = setup.ws("alice");
    for sig in [Signal::INT, Signal::TERM] {
        let mut fg = foreground(&setup).await;
        let marker: RunnerMarker = runner::read_json(&runner::runner_marker_path(&ws))
            .unwrap()
            .unwrap();
        runner::signal(fg.child.id().unwrap(), sig);
        assert_eq!(fg.next_line().await, "stopped");
        let status = tokio::time::timeout(Duration::from_secs(20), fg.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "{sig:?}: {status:?}");
        for c in marker.children.values() {
            assert!(!runner::is_alive(c.pid), "{sig:?}: guest {} alive", c.pid);
        }
        assert_eq!(left_behind(&ws), Vec::<String>::new(), "{sig:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn a_guest_that_keeps_crashing_is_given_up_with_the_reason() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let text = std::fs::read_to_string(&setup.config).unwrap();
    std::fs::write(
        &setup.config,
        text.replace("[supervision]\n", "[supervision]\nmax_restarts = 1\n"),
    )
    .unwrap();
    let mut fg = foreground(&setup).await;
    let first = setup.gateway("alice").unwrap();
    runner::signal(first.pid, Signal::KILL);
    let restarted = fg.next_line().await;
    assert!(
        restarted.starts_with("alice: oxydra-vm restarted after it exited (killed by signal 9)"),
        "{restarted}"
    );
    let second = setup.gateway("alice").unwrap();
    runner::signal(second.pid, Signal::KILL);
    let out = tokio::time::timeout(Duration::from_secs(20), fg.child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "alice's oxydra-vm failed 2 times within 60 s (last: killed by signal 9); giving up"
        ),
        "{err}"
    );
    // The give-up names the cause and how to go on.
    assert!(
        err.contains("it was killed or crashed each time")
            && err.contains("then start it again with `runner --user alice start`"),
        "{err}"
    );
    assert_eq!(left_behind(&setup.ws("alice")), Vec::<String>::new());
}
