//! The runner's lifecycle as a user meets it, with real `runner`, `oxydra-vm` and `shell-vm`
//! processes (process tier, real Landlock): Ctrl+C while a start is under way, an edited
//! agent.toml taking effect on the next start, adding a user with one command, and `restart`
//! keeping a background agent in the background.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{Setup, StopOnDrop, left_behind, respond};
use runner::RunnerMarker;
use rustix::process::Signal;
use test_support::Need;

/// Processes working in `dir` (a guest's working directory is its user's workspace).
pub fn processes_in(dir: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
            && runner::is_alive(pid)
        {
            found.push(pid);
        }
    }
    found
}

/// The command lines of processes still in `dir` once every process there has had up to 30 s to
/// finish dying (a guest's own child gets its signal as the guest exits, and dies a moment later).
pub fn processes_left_in(dir: &Path) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = processes_in(dir);
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return left
                .iter()
                .map(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default())
                .collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pid of the runner serving `user` (from its marker).
fn runner_pid(setup: &Setup, user: &str) -> u32 {
    let marker: RunnerMarker = runner::read_json(&runner::runner_marker_path(&setup.ws(user)))
        .unwrap()
        .expect("a runner marker");
    marker.pid
}

/// `runner --config <runner.toml> ARGS...` within `within`.
async fn runner_within(setup: &Setup, args: &[&str], within: Duration) -> std::process::Output {
    tokio::time::timeout(within, setup.runner(args))
        .await
        .unwrap_or_else(|_| panic!("runner {args:?} did not return within {within:?}"))
}

/// A bin dir whose `shell-vm` announces itself in `started`, then waits `hold` before becoming
/// the real `shell-vm` (and ends, with its wait, on SIGTERM — after reaping the `sleep`, so that
/// nothing of it outlives the runner): a start that is certainly still under way while the test
/// acts.
fn slow_shell_bin_dir(dir: &Path, hold_s: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let real = common::guest_binaries();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(real.join("oxydra-vm"), bin.join("oxydra-vm")).unwrap();
    let script = format!(
        "#!/bin/sh\ntrap 'kill $! 2>/dev/null; wait $! 2>/dev/null; exit 143' TERM INT\n\
         touch '{started}'\nsleep {hold_s} &\nwait $!\nexec '{real}' \"$@\"\n",
        started = dir.join("started").display(),
        real = real.join("shell-vm").display(),
    );
    // The shell runs as the user's own uid when the runner is root: it must be able to announce.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let wrapper = bin.join("shell-vm");
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn spawn_start(setup: &Setup, bin_dir: Option<&Path>) -> tokio::process::Child {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.arg("--config")
        .arg(&setup.config)
        .args(["--insecure", "start"])
        .env_remove("OXYDRA_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = bin_dir {
        cmd.env(runner::BIN_DIR_ENV, dir);
    }
    cmd.spawn().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn ctrl_c_while_a_foreground_start_is_under_way_stops_what_it_started() {
    test_support::need(Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let ws = setup.ws("alice");
    let scratch = tempfile::tempdir().unwrap();
    let bin = slow_shell_bin_dir(scratch.path(), 60);
    let child = spawn_start(&setup, Some(&bin));
    // Its shell has been launched and cannot be ready for a minute: the start is under way.
    let started = scratch.path().join("started");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the shell was not launched"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!processes_in(&ws.root).is_empty(), "guests were launched");
    // What oxydra-vm leaves when it is stopped in the middle of writing its endpoint marker.
    let torn = ws
        .ipc()
        .join(format!(".{}.4242.0.1f.tmp", types::ENDPOINT_FILE));
    std::fs::write(&torn, "{\"url\":").unwrap();
    runner::signal(child.id().unwrap(), Signal::INT);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the runner stops within 30 s")
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let what = format!("{:?}\n{stdout}{stderr}", out.status);
    assert_eq!(out.status.code(), Some(130), "{what}");
    assert!(
        stderr.contains("interrupted before alice was ready; stopped what had started"),
        "{what}"
    );
    assert!(!stdout.contains("ready at"), "{what}");
    assert_eq!(processes_left_in(&ws.root), Vec::<String>::new(), "{what}");
    assert_eq!(left_behind(&ws), Vec::<String>::new(), "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn ctrl_c_after_a_foreground_start_is_ready_stops_the_agent_cleanly() {
    test_support::need(Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let ws = setup.ws("alice");
    let mut child = spawn_start(&setup, None);
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let ready = tokio::time::timeout(Duration::from_secs(60), async {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 4096];
        loop {
            let n = stdout.read(&mut buf).await.unwrap();
            assert!(n > 0, "the runner ended before it was ready");
            seen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&seen).contains("alice: ready at") {
                break;
            }
        }
    })
    .await;
    assert!(ready.is_ok(), "{}", String::from_utf8_lossy(&seen));
    runner::signal(child.id().unwrap(), Signal::INT);
    let out = tokio::time::timeout(Duration::from_secs(30), async {
        use tokio::io::AsyncReadExt;
        stdout.read_to_end(&mut seen).await.unwrap();
        child.wait_with_output().await
    })
    .await
    .expect("the runner stops within 30 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&seen);
    let what = format!(
        "{:?}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what}");
    assert!(stdout.ends_with("stopped\n"), "{what}");
    assert_eq!(processes_in(&ws.root), Vec::<u32>::new(), "{what}");
    assert_eq!(left_behind(&ws), Vec::<String>::new(), "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn an_edited_agent_toml_takes_effect_on_the_next_start() {
    test_support::need(Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let start = ["--insecure", "--user", "alice", "start", "--detach"];
    setup.runner_ok(&start).await;
    let first = runner_pid(&setup, "alice");

    // Unchanged: a second start refuses, naming the running agent and how to restart it.
    let again = setup.runner(&start).await;
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success(), "{err}");
    assert!(
        err.contains("alice is already running") && err.contains("runner --user alice restart"),
        "{err}"
    );
    assert_eq!(runner_pid(&setup, "alice"), first);

    // Edited: the next start restarts her agent on the new settings.
    let agent = setup.dir.path().join("agent.toml");
    let text = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(&agent, text.replace("max_retries = 0", "max_retries = 1")).unwrap();
    let out = setup.runner_ok(&start).await;
    assert!(
        out.contains(&format!(
            "alice: its settings changed since its agent started (runner pid {first}); restarting it"
        )) && out.contains("alice: running in the background"),
        "{out}"
    );
    let second = runner_pid(&setup, "alice");
    assert_ne!(second, first);
    assert!(!runner::is_alive(first));

    // A broken edit is reported and the running agent is left alone.
    std::fs::write(&agent, "[provider]\nmax_retries = \"x\"\n").unwrap();
    let out = setup.runner(&start).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("line 2, provider.max_retries"),
        "{err}"
    );
    assert_eq!(runner_pid(&setup, "alice"), second);
    assert!(runner::is_alive(second));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn a_user_is_added_with_one_command_and_restart_keeps_agents_in_the_background() {
    test_support::need(Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let alice = runner_pid(&setup, "alice");

    // `init` on an existing runner.toml adds the user: the file is kept byte for byte.
    let before = format!(
        "# my settings\n{}",
        std::fs::read_to_string(&setup.config).unwrap()
    );
    std::fs::write(&setup.config, &before).unwrap();
    let out = setup.runner_ok(&["--user", "bob", "init"]).await;
    assert!(out.contains("added bob to"), "{out}");
    let after = std::fs::read_to_string(&setup.config).unwrap();
    assert_eq!(after, format!("{before}\n[users.bob]\n"));
    assert!(setup.ws("bob").internal().is_dir());

    // Starting every user starts the one not yet running and leaves alice's agent alone.
    let out = setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    assert!(
        out.contains(&format!("alice: already running (runner pid {alice}")),
        "{out}"
    );
    assert!(out.contains("bob: running in the background"), "{out}");
    assert_eq!(runner_pid(&setup, "alice"), alice);

    // `restart` without --detach: both come back in the background, and the command returns.
    let out = runner_within(&setup, &["--insecure", "restart"], Duration::from_secs(60)).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("alice: running in the background")
            && text.contains("bob: running in the background"),
        "{text}"
    );
    let restarted = runner_pid(&setup, "alice");
    assert_ne!(restarted, alice);
    assert!(runner::is_alive(restarted) && runner::is_alive(runner_pid(&setup, "bob")));
}
