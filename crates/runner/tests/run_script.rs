//! `scripts/run.sh` itself, run by a real bash in a copy of the scripts whose `target/release/`
//! holds this build's binaries: no Docker engine (stand-in `docker`/`dockerd`), a no-op `cargo`
//! (the binaries are built) and a stand-in `oxydra-tui` that prints its arguments. The agents
//! are real (process tier, real Landlock). The user edited `agent.toml` before the first run (the
//! README's path), pointing it at a local stand-in of the provider that wants the key `sk-test`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use test_support::Need;
use tokio::io::AsyncBufReadExt;

use crate::common::{guest_binaries, left_behind};

const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts");

fn write_exe(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A checkout-shaped directory: `scripts/run.sh`, `scripts/lib/host.sh`, `target/release/` with
/// this build's `runner`, `oxydra-vm`, `shell-vm` and a stand-in `oxydra-tui`; and `fake/` with
/// `cargo` (leaves `fake/cargo-ran`), `docker` (no engine) and `dockerd` (exits at once) for
/// PATH; and an `agent.toml` whose `[provider]` is `server`, with its key `sk-test`.
struct Checkout {
    dir: tempfile::TempDir,
}

impl Checkout {
    fn new(server: &test_support::ScriptedLlm) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("scripts/lib")).unwrap();
        for file in ["run.sh", "lib/host.sh"] {
            std::fs::copy(
                Path::new(SCRIPTS).join(file),
                root.join("scripts").join(file),
            )
            .unwrap();
        }
        let release = root.join("target/release");
        std::fs::create_dir_all(&release).unwrap();
        let bins = guest_binaries();
        for name in ["runner", "oxydra-vm", "shell-vm"] {
            std::os::unix::fs::symlink(bins.join(name), release.join(name)).unwrap();
        }
        write_exe(&release.join("oxydra-tui"), "echo \"oxydra-tui $*\"");
        let fake = root.join("fake");
        std::fs::create_dir_all(&fake).unwrap();
        write_exe(
            &fake.join("cargo"),
            &format!("touch '{}'", fake.join("cargo-ran").display()),
        );
        server.require_api_key("sk-test");
        let example = include_str!("../../../agent.toml.example");
        let edited = example.replace(
            "base_url = \"https://api.openai.com/v1\"",
            &format!("base_url = \"{}\"", server.base_url()),
        );
        assert_ne!(edited, example);
        std::fs::write(root.join("agent.toml"), edited).unwrap();
        write_exe(&fake.join("docker"), "exit 1");
        write_exe(
            &fake.join("dockerd"),
            "echo 'dockerd: no cgroups' >&2; exit 1",
        );
        Self { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let root = self.root();
        let path = format!(
            "{}:{}",
            root.join("fake").display(),
            std::env::var("PATH").unwrap()
        );
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg(root.join("scripts/run.sh"))
            .args(args)
            .env("PATH", path)
            .env("OXYDRA_BIN_DIR", root.join("target/release"))
            .env("OXYDRA_DOCKERD_LOG", root.join("fake/dockerd.log"))
            .env("OPENAI_API_KEY", "sk-test")
            .env_remove("OXYDRA_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    async fn run(&self, args: &[&str]) -> (Output, String) {
        let out = tokio::time::timeout(Duration::from_secs(120), self.command(args).output())
            .await
            .expect("run.sh returns")
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out, text)
    }

    fn config(&self) -> PathBuf {
        self.root().join("runner.toml")
    }

    fn ws(&self, user: &str) -> types::WorkspacePaths {
        types::WorkspacePaths::new(self.root().join("workspaces").join(user))
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        let _ = std::process::Command::new(guest_binaries().join("runner"))
            .arg("--config")
            .arg(self.config())
            .arg("stop")
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_sh_checks_the_key_before_building_anything() {
    let server = test_support::ScriptedLlm::start().await;
    let co = Checkout::new(&server);
    let cargo_ran = co.root().join("fake/cargo-ran");

    let mut cmd = co.command(&["alice"]);
    cmd.env_remove("OPENAI_API_KEY");
    let out = cmd.output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("$OPENAI_API_KEY is not set"), "{text}");
    assert!(text.contains("edit [provider] in agent.toml"), "{text}");

    let mut cmd = co.command(&["alice"]);
    cmd.env("OPENAI_API_KEY", "sk-wrong");
    let out = cmd.output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("refused the key in $OPENAI_API_KEY (HTTP 401)"),
        "{text}"
    );
    assert!(!cargo_ran.exists(), "nothing was built");
    assert!(!co.config().exists(), "nothing was written");
    // The key reached the provider in its header, never on a command line.
    let asked = server.last_request().unwrap();
    assert_eq!(asked.path, "/v1/models");
    assert_eq!(asked.header("authorization"), Some("Bearer sk-wrong"));

    // The right key: the script goes on to the build (then stops at the missing engine).
    let (out, text) = co.run(&["alice"]).await;
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("accepts the key in $OPENAI_API_KEY"),
        "{text}"
    );
    assert!(text.contains("./scripts/run.sh --process alice"), "{text}");
}

/// The runner's report reaches the user whatever becomes of the shell running run.sh. Bash can end
/// the script on a Ctrl+C that the runner handled (a SIGINT taken by a command substitution's
/// subshell, a trap run while bash parses): when run.sh read the runner's words through `$(...)`,
/// the runner went on starting the agent and its "running in the background" was lost with the
/// shell. Here a stand-in `runner` kills run.sh's shell (its process group's leader, as a
/// terminal's would be), then reports the agent ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_sh_passes_the_runners_report_through_whatever_becomes_of_its_shell() {
    let server = test_support::ScriptedLlm::start().await;
    let co = Checkout::new(&server);
    let runner = co.root().join("target/release/runner");
    std::fs::remove_file(&runner).unwrap();
    write_exe(
        &runner,
        "case \"$*\" in\n\
         *'start --detach'*) kill -KILL \"$(cut -d' ' -f5 /proc/$$/stat)\"; sleep 0.2\n\
           echo \"alice: running in the background (stand-in)\" ;;\n\
         *) echo \"runner $*\" ;;\n\
         esac",
    );
    std::fs::write(
        co.config(),
        "workspace_root = \"workspaces\"\n\n[users.alice]\ntier = \"process\"\n",
    )
    .unwrap();
    let mut cmd = co.command(&["alice"]);
    cmd.process_group(0);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9), "{text}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("alice: running in the background (stand-in)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn run_sh_asks_for_the_process_tier_adds_users_follows_edits_and_stops_on_ctrl_c() {
    test_support::need(Need::Landlock);
    let server = test_support::ScriptedLlm::start().await;
    let co = Checkout::new(&server);

    // No engine and no choice: it says how to choose and writes nothing.
    let (out, text) = co.run(&["alice"]).await;
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("./scripts/run.sh --process alice"), "{text}");
    assert!(text.contains("dockerd exited at once"), "{text}");
    assert!(!co.config().exists());

    // Chosen: the process tier, said so, and how to switch back; the chat opens on alice.
    let (out, text) = co.run(&["--process", "alice"]).await;
    assert!(out.status.success(), "{text}");
    assert!(
        std::fs::read_to_string(co.config())
            .unwrap()
            .contains("\ntier = \"process\"\n")
    );
    assert!(text.contains("set tier = \"container\" there"), "{text}");
    assert!(text.contains("alice: running in the background"), "{text}");
    assert!(
        text.contains("accepts the key in $OPENAI_API_KEY"),
        "{text}"
    );
    assert!(
        text.contains("kept your"),
        "the edited agent.toml is kept: {text}"
    );
    // The steps runner init suggests are the ones the script takes: not printed.
    assert!(!text.contains("next:"), "{text}");
    assert!(
        text.contains("oxydra-tui --user alice --workspace"),
        "{text}"
    );

    // The background runner's log: every line starts with the time.
    let log = std::fs::read_to_string(runner::runner_log_path(&co.ws("alice"), "runner")).unwrap();
    assert!(log.lines().any(|l| !l.trim().is_empty()), "{log}");
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let stamp = line.split_whitespace().next().unwrap_or_default();
        assert!(
            chrono::DateTime::parse_from_rfc3339(stamp).is_ok(),
            "a line without its time in runner.log: {line:?}"
        );
    }

    // Unchanged settings: the running agent is used as it is.
    let (out, text) = co.run(&["alice"]).await;
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("alice's agent is already running (settings unchanged)"),
        "{text}"
    );

    // An edited agent.toml takes effect on the next run.
    let agent = co.root().join("agent.toml");
    let before = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(&agent, before.replace("max_retries = 3", "max_retries = 2")).unwrap();
    let (out, text) = co.run(&["alice"]).await;
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("alice: its settings changed since its agent started"),
        "{text}"
    );

    // Another user is one command.
    let (out, text) = co.run(&["bob"]).await;
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("added bob to runner.toml")
            && text.contains("bob: running in the background"),
        "{text}"
    );
    assert_eq!(text.matches("added bob").count(), 1, "{text}");

    // Ctrl+C (SIGINT to the script's process group, as a terminal sends it) while alice starts,
    // at several moments after the script says it starts her, and at moments after the
    // background runner's log appears (the runner has begun: observed, so that one outcome is
    // reached however slow the machine is, where a fixed delay could always land before it).
    let ws = co.ws("alice");
    let runner_log = runner::runner_log_path(&ws, "runner");
    let mut outcomes = Vec::new();
    let moments = [0u64, 20, 40, 60, 100, 150, 300]
        .map(|ms| (Moment::AfterTheLine, ms))
        .into_iter()
        .chain([(Moment::AfterTheLog, 0), (Moment::AfterTheLog, 50)]);
    for (moment, delay_ms) in moments {
        let stop = std::process::Command::new(guest_binaries().join("runner"))
            .arg("--config")
            .arg(co.config())
            .args(["--user", "alice", "stop"])
            .output()
            .unwrap();
        assert!(stop.status.success());
        let _ = std::fs::remove_file(&runner_log);
        let mut child = co.command(&["alice"]).process_group(0).spawn().unwrap();
        let pgid = child.id().unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .expect("run.sh prints that it starts alice");
            if line.starts_with("==> starting alice's agent") {
                break;
            }
        }
        if moment == Moment::AfterTheLog {
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while !runner_log.exists() && child.try_wait().unwrap().is_none() {
                assert!(std::time::Instant::now() < deadline, "no runner log");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        // The group may be gone already (run.sh finished): that is an outcome too.
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_raw(i32::try_from(pgid).unwrap()).unwrap(),
            rustix::process::Signal::INT,
        );
        let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
            .await
            .unwrap()
            .unwrap();
        let mut rest = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push_str(&line);
            rest.push('\n');
        }
        let marker: Option<runner::RunnerMarker> =
            runner::read_json(&runner::runner_marker_path(&ws)).unwrap();
        if status.success() || rest.contains("alice: running in the background") {
            // Alice was ready before the signal (it reached the chat, which it leaves running).
            assert!(marker.is_some_and(|m| runner::is_alive(m.pid)));
            outcomes.push("ready first");
            continue;
        }
        assert!(marker.is_none(), "{delay_ms} ms {moment:?}: {marker:?}");
        assert_eq!(
            crate::lifecycle::processes_left_in(&ws.root),
            Vec::<String>::new()
        );
        assert_eq!(left_behind(&ws), Vec::<String>::new());
        assert!(
            runner::read_json::<runner::GatewayMarker>(&ws.endpoint())
                .unwrap()
                .is_none()
        );
        outcomes.push(if runner_log.exists() {
            "interrupted while the background runner started"
        } else {
            "interrupted before the runner began"
        });
    }
    eprintln!("run.sh and Ctrl+C: {outcomes:?}");
    assert!(
        outcomes.contains(&"interrupted while the background runner started"),
        "{outcomes:?}"
    );
}

/// What the Ctrl+C of a round waits for before its delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moment {
    /// run.sh's line saying it starts the agent.
    AfterTheLine,
    /// The background runner's log (the runner has begun).
    AfterTheLog,
}
