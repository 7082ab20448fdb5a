//! A user whose memory is on a real libSQL server (`sqld` on loopback, JWT auth), through the
//! real binaries in the process tier: the agent starts with remote memory and no local database,
//! `runner memory` reads and writes the same server, and a rejected token is one clear line.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::container::{runner_env, runner_env_ok};
use common::{Chat, Setup, StopOnDrop, respond};
use test_support::{Need, Sqld};

const TOKEN_VAR: &str = "OXYDRA_TEST_REMOTE_MEMORY_TOKEN";

fn use_remote_memory(setup: &Setup, server: &Sqld) {
    let agent_toml = setup.dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&agent_toml).unwrap();
    text.push_str(&format!(
        "[memory]\nremote_url = \"{}\"\nauth_token_env = \"{TOKEN_VAR}\"\n",
        server.url()
    ));
    std::fs::write(&agent_toml, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn a_user_with_remote_memory_starts_chats_and_shares_notes_with_the_cli() {
    test_support::need(Need::Landlock);
    test_support::need(Need::Sqld);
    let db = Sqld::start_with_auth();
    let token = db.token(r#"{"a":"rw"}"#);
    let env = [(TOKEN_VAR, token.as_str())];
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    use_remote_memory(&setup, &db);

    // `runner memory` writes to the server before the agent starts...
    let saved = runner_env_ok(
        &setup,
        &[
            "memory",
            "--user",
            "alice",
            "save",
            "The allotment is plot 12",
        ],
        &env,
    )
    .await
    .0;
    assert!(saved.contains("note-"), "{saved}");

    let _guard = StopOnDrop(setup.config.clone());
    runner_env_ok(&setup, &["--insecure", "start", "--detach"], &env).await;
    let ws = setup.ws("alice");
    let health: runner::Health = runner::read_json(&runner::health_path(&ws))
        .unwrap()
        .expect("a health file");
    assert_eq!(health.memory, "open (remote)");
    let mut chat = Chat::connect(&setup, "alice", None).await;
    assert_eq!(chat.turn("hello").await.message, "hello");

    // ...and reads it back, with the agent running against the same server.
    let (found, _) = runner_env_ok(
        &setup,
        &[
            "memory",
            "--user",
            "alice",
            "search",
            "allotment plot",
            "--json",
        ],
        &env,
    )
    .await;
    assert!(found.contains("The allotment is plot 12"), "{found}");
    assert!(
        !ws.default_memory_db().exists(),
        "remote memory created a local database"
    );
    setup.runner_ok(&["stop"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs sqld"]
async fn runner_memory_with_a_rejected_token_says_so_in_one_line() {
    test_support::need(Need::Sqld);
    let db = Sqld::start_with_auth();
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    use_remote_memory(&setup, &db);
    let out = runner_env(
        &setup,
        &["memory", "--user", "alice", "search", "anything"],
        &[(TOKEN_VAR, "not-a-jwt")],
    )
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("remote memory: the server rejected the auth token"),
        "{err}"
    );
    assert!(!err.contains("not-a-jwt"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
