//! A tier per user (issue 35): `runner init --tier` adds a user in their own tier and leaves the
//! others as they are; `runner start` launches each user in theirs (the process tier needs
//! `--insecure` for that user only); `runner status` shows the tier the agent really runs in (its
//! marker), not what the file says since. The shell's log stays free of the runner's own
//! readiness probe, while a root peer that sends something is still warned about.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::Value;
use test_support::Need;

use crate::common::{Setup, StopOnDrop};

/// `runner.toml` with a container-tier default, alice in it and carol in the process tier.
fn mixed(setup: &Setup) {
    let text = std::fs::read_to_string(&setup.config).unwrap();
    let text = text
        .replace("tier = \"process\"\n", "tier = \"container\"\n")
        .replace("[users.carol]\n", "[users.carol]\ntier = \"process\"\n");
    std::fs::write(&setup.config, text).unwrap();
}

fn tiers(setup: &Setup) -> Vec<(String, runner::Tier)> {
    let config = runner::RunnerConfig::load(&setup.config).unwrap();
    config
        .users
        .iter()
        .map(|u| (u.id.to_string(), u.tier))
        .collect()
}

#[tokio::test]
async fn init_adds_a_user_in_their_own_tier_and_leaves_the_others() {
    let server = test_support::ScriptedLlm::start().await;
    let setup = Setup::new(&server, &["alice"]);
    mixed(&setup);
    let before = std::fs::read_to_string(&setup.config).unwrap();

    let out = setup
        .runner_ok(&["--user", "carol", "init", "--tier", "process"])
        .await;
    assert!(out.contains("added carol to"), "{out}");
    assert!(
        out.contains("runner --insecure --user carol start"),
        "{out}"
    );
    let after = std::fs::read_to_string(&setup.config).unwrap();
    assert!(after.starts_with(&before), "the rest of the file is kept");
    assert_eq!(
        &after[before.len()..],
        "\n[users.carol]\ntier = \"process\"\n"
    );
    let dan = setup.runner_ok(&["--user", "dan", "init"]).await;
    assert!(dan.contains("runner --user dan start"), "{dan}");
    assert_eq!(
        tiers(&setup),
        vec![
            ("alice".to_owned(), runner::Tier::Container),
            ("carol".to_owned(), runner::Tier::Process),
            ("dan".to_owned(), runner::Tier::Container),
        ]
    );

    // --workspace-root only shapes a new file: refused, nothing changed.
    let kept = std::fs::read_to_string(&setup.config).unwrap();
    let out = setup
        .runner(&["--user", "erin", "init", "--workspace-root", "/elsewhere"])
        .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--workspace-root only shapes a new file"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&setup.config).unwrap(), kept);
    assert!(!setup.ws("erin").root.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn each_user_starts_in_their_tier_and_status_shows_what_runs() {
    test_support::need(Need::Landlock);
    let server = test_support::ScriptedLlm::start().await;
    let setup = Setup::new(&server, &["alice", "carol"]);
    mixed(&setup);
    let _guard = StopOnDrop(setup.config.clone());

    // carol alone is in the process tier: only she needs --insecure, and the refusal names her.
    let out = setup
        .runner(&["--user", "carol", "start", "--detach"])
        .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("process tier (carol in runner.toml)") && err.contains("--insecure"),
        "{err}"
    );
    let started = setup
        .runner_ok(&["--insecure", "--user", "carol", "start", "--detach"])
        .await;
    assert!(
        started.contains("carol: running in the background"),
        "{started}"
    );

    let status = setup.runner_ok(&["status"]).await;
    assert!(status.contains("alice  stopped\n"), "{status}");
    let carol = status
        .lines()
        .find(|l| l.starts_with("carol  running"))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(carol.ends_with("tier process"), "{carol}");
    let rows = |text: &str| -> Vec<(String, String, bool)> {
        let rows: Vec<Value> = serde_json::from_str(text).unwrap();
        rows.iter()
            .map(|r| {
                (
                    r["user"].as_str().unwrap().to_owned(),
                    r["tier"].as_str().unwrap().to_owned(),
                    r["running"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let json = setup.runner_ok(&["status", "--json"]).await;
    assert_eq!(
        rows(&json),
        vec![
            ("alice".to_owned(), "container".to_owned(), false),
            ("carol".to_owned(), "process".to_owned(), true),
        ]
    );

    // The file now says carol runs in containers: status still shows what really runs.
    let text = std::fs::read_to_string(&setup.config).unwrap();
    std::fs::write(
        &setup.config,
        text.replace("[users.carol]\ntier = \"process\"\n", "[users.carol]\n"),
    )
    .unwrap();
    let json = setup.runner_ok(&["status", "--json"]).await;
    assert_eq!(
        rows(&json)[1],
        ("carol".to_owned(), "process".to_owned(), true)
    );

    // The runner's readiness probe of carol's shell left no warning in its log.
    let ws = setup.ws("carol");
    let shell_log = runner::runner_log_path(&ws, "shell-vm");
    let log = std::fs::read_to_string(&shell_log).unwrap();
    assert!(log.contains("shell daemon ready"), "{log}");
    assert!(!log.contains("another uid"), "{log}");
    if runner::runs_as_root() {
        // A root peer (not the shell's agent uid) that sends something is refused and warned.
        let socket = types::shell_socket_path(&ws);
        let mut peer = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        peer.write_all(b"{\"auth\":\"guess\"}\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let log = std::fs::read_to_string(&shell_log).unwrap();
            if log.contains("the peer runs as another uid") {
                assert!(log.contains("peer_uid=0"), "{log}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no warning for a foreign peer: {log}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    let stopped = setup.runner_ok(&["stop"]).await;
    assert!(
        stopped.contains("carol: stopped") && stopped.contains("alice:"),
        "{stopped}"
    );
}
