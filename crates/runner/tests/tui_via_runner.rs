//! `runner --tui --user U`: the real `oxydra-tui` inside tmux, started by the runner against a
//! running process-tier agent with the scripted model — save a note, `/new`, recall it from the
//! other session — after the agent's shell forged the public endpoint in `ipc/` (the TUI must not
//! follow it). Then a supervised crash: the runner restarts the killed agent on a new port
//! (`gateway_port = 0`) and the open TUI follows it there, re-reading `.oxydra/gateway.json`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Chat, Setup, StopOnDrop, guest_binaries, respond};
use test_support::{ScriptedLlm, Tmux};

/// `oxydra-tui` next to the runner (built here when `cargo test -p runner` did not build it).
fn ensure_tui_built() {
    if !guest_binaries().join("oxydra-tui").is_file() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-p", "tui", "--bins"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building oxydra-tui failed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock, tmux"]
async fn runner_tui_chats_with_the_running_agent_and_recalls_across_sessions() {
    test_support::need(test_support::Need::Landlock);
    test_support::need(test_support::Need::Tmux);
    ensure_tui_built();
    let server = ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());

    // Not running yet: --tui says how to start the agent.
    let out = setup.runner(&["--tui", "--user", "alice"]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("alice is not running"));

    setup.runner_ok(&["--insecure", "start", "--detach"]).await;

    // A command run by the agent's shell rewrites the public endpoint in ipc/ to point at a
    // listener of its own (which would receive the gateway token); it cannot touch .oxydra/.
    let decoy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let decoy_port = decoy.local_addr().unwrap().port();
    let ws = setup.ws("alice");
    let mut alice = Chat::connect(&setup, "alice", None).await;
    let forged = format!(r#"{{"url":"ws://127.0.0.1:{decoy_port}/","pid":1,"started_at":"x"}}"#);
    let report = alice
        .shell(&format!(
            "rm -f {ipc}/gateway.json; printf '%s' '{forged}' > {ipc}/gateway.json; \
             printf '%s' '{forged}' > {internal}/gateway.json",
            ipc = ws.ipc().display(),
            internal = ws.internal().display()
        ))
        .await;
    assert!(report.contains("Permission denied"), "{report}");
    assert_eq!(
        std::fs::read_to_string(ws.public_endpoint()).unwrap(),
        forged
    );
    let real = setup.gateway("alice").unwrap();
    assert_ne!(real.url, format!("ws://127.0.0.1:{decoy_port}/"));
    drop(alice);

    let command = format!(
        "{} --config {} --tui --user alice; echo \"tui exited with $?\"; sleep 60",
        env!("CARGO_BIN_EXE_runner"),
        setup.config.display()
    );
    let tmux = Tmux::start("runner-tui-test", 100, 30, &command);
    tmux.wait_for("the connection", |s| s.contains("● connected"))
        .await;
    // The TUI went to the real gateway: the decoy was never contacted.
    let contacted =
        tokio::time::timeout(std::time::Duration::from_millis(200), decoy.accept()).await;
    assert!(
        contacted.is_err(),
        "the TUI connected to the forged endpoint"
    );

    tmux.type_line("save Alice loves the trams in Lisbon");
    let screen = tmux
        .wait_for("the saved note", |s| s.contains("✓ saved note note-"))
        .await;
    assert!(
        screen.contains("› save Alice loves the trams in Lisbon"),
        "{screen}"
    );

    tmux.type_line("/new");
    tmux.wait_for("the new session", |s| s.contains("New session."))
        .await;
    tmux.type_line("search trams");
    let screen = tmux
        .wait_for("the recalled note", |s| {
            s.contains("✓ searched memory for \"trams\": 1 result")
                && s.contains("\"text\":\"Alice loves the trams")
                && s.contains("ready")
        })
        .await;
    assert!(
        !screen.contains("› save Alice"),
        "the new session starts empty:\n{screen}"
    );

    // kill -9 of the agent: the runner restarts it on a new port; the TUI reconnects there.
    let before = setup.gateway("alice").unwrap();
    runner::signal(before.pid, rustix::process::Signal::KILL);
    let after = setup.wait_gateway("alice", Some(before.pid)).await;
    assert_ne!(
        after.url, before.url,
        "the restarted agent listens on a new port"
    );
    tmux.wait_for("the reconnect to the new port", |s| {
        s.contains("Reconnected (the agent restarted).") && s.contains("● connected")
    })
    .await;
    tmux.type_line("search Lisbon");
    tmux.wait_for("a reply from the restarted agent", |s| {
        s.contains("✓ searched memory for \"Lisbon\": 1 result") && s.contains("ready")
    })
    .await;

    tmux.type_line("/quit");
    let after = tmux
        .wait_for("the exit", |s| s.contains("tui exited with"))
        .await;
    assert!(after.contains("tui exited with 0"), "{after}");
    setup.runner_ok(&["stop"]).await;
}
