//! Memory beyond a local plaintext file in the container tier, with real containers on the
//! machine's Docker engine: a user whose memory is on a real `sqld` (the `oxydra-vm` container
//! reaches it; the shell container still has no network), and a user whose local database is
//! encrypted (the key reaches `oxydra-vm` in the bootstrap written to its stdin; no container's
//! configuration, no host process and nothing the shell can reach holds it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;
use crate::common::container;

use common::{Chat, respond};
use container::{ContainersOnDrop, container_setup, inspect, name, prepare, runner_env_ok};
use test_support::{Need, Sqld};

const TOKEN_VAR: &str = "OXYDRA_TEST_CONTAINER_MEMORY_TOKEN";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn a_container_user_with_remote_memory_chats_and_the_shell_stays_offline() {
    test_support::need(Need::Docker);
    test_support::need(Need::Sqld);
    prepare().await;
    let db = Sqld::start_with_auth();
    let token = db.token(r#"{"a":"rw"}"#);
    let env = [(TOKEN_VAR, token.as_str())];
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("alice", "")]);
    let agent_toml = setup.dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&agent_toml).unwrap();
    text.push_str(&format!(
        "[memory]\nremote_url = \"{}\"\nauth_token_env = \"{TOKEN_VAR}\"\n",
        db.url()
    ));
    std::fs::write(&agent_toml, text).unwrap();
    let _guard = ContainersOnDrop::new(&setup, &["alice"]);

    runner_env_ok(&setup, &["start", "--detach"], &env).await;
    let ws = setup.ws("alice");
    let mut chat = Chat::connect(&setup, "alice", None).await;
    chat.save("The spare key is under the blue pot").await;
    let found = chat.turn("search spare key").await;
    assert!(found.message.contains("blue pot"), "{found:?}");
    // The note is on the server: the CLI reads it there, and no local database exists.
    let (cli, _) = runner_env_ok(
        &setup,
        &["--user", "alice", "memory", "search", "spare key", "--json"],
        &env,
    )
    .await;
    assert!(cli.contains("blue pot"), "{cli}");
    assert!(!ws.default_memory_db().exists());

    // The shell container has no network: the server the agent uses is out of its reach.
    let shell = inspect(&name(&setup, "alice", "shell-vm")).await.unwrap();
    assert_eq!(shell["HostConfig"]["NetworkMode"], "none");
    let health = format!("{}/health", db.url());
    let report = chat
        .shell(&format!(
            "wget -q -T 3 -O- {health} && echo REACHED || echo unreachable"
        ))
        .await;
    assert!(report.contains("unreachable"), "{report}");
    assert!(!report.contains("REACHED"), "{report}");
    runner_env_ok(&setup, &["stop"], &env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs docker"]
async fn an_encrypted_container_user_keeps_its_key_from_the_shell() {
    test_support::need(Need::Docker);
    prepare().await;
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = container_setup(&server, &[("alice", "")]);
    let text = std::fs::read_to_string(&setup.config).unwrap();
    let (head, users) = text.split_once("[users.").unwrap();
    std::fs::write(
        &setup.config,
        format!("{head}[memory_encryption]\nenabled = true\n[users.{users}"),
    )
    .unwrap();
    let _guard = ContainersOnDrop::new(&setup, &["alice"]);

    runner_env_ok(&setup, &["start", "--detach"], &[]).await;
    let ws = setup.ws("alice");
    let mut chat = Chat::connect(&setup, "alice", None).await;
    chat.save("The boat is called Heron").await;
    let db = ws.default_memory_db();
    let bytes = std::fs::read(&db).unwrap();
    assert!(
        !bytes.starts_with(b"SQLite format 3\0"),
        "encrypted at rest"
    );
    let key = std::fs::read_to_string(setup.root.join(".runner/alice/memory.key")).unwrap();
    let key = key.trim();

    // The agent got the key on its stdin: no container's configuration holds it (what `docker
    // inspect` shows, and the engine keeps on disk), and no host process's command line or
    // environment does (the engine's, the runner's, the containers' own processes).
    for role in ["shell-vm", "oxydra-vm"] {
        let seen = inspect(&name(&setup, "alice", role))
            .await
            .unwrap()
            .to_string();
        assert!(seen.contains("/workspace/alice"), "the check can fail");
        assert!(!seen.contains(key), "{role}: {seen}");
    }
    common::assert_no_host_process_holds(key);

    // From inside the shell, as in the process tier: only its own copy is found.
    let (k1, k2) = key.split_at(key.len() / 2);
    let report = chat
        .shell(&format!(
            "k1={k1}; k2={k2}; echo \"$k1$k2\" > /workspace/alice/shared/probe.txt; \
             for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do \
               tr '\\0' '\\n' < $f 2>/dev/null | grep -q -e \"$k1$k2\" && echo \"FOUND-IN $f\"; \
             done; \
             grep -rl -e \"$k1$k2\" /workspace /workspace/alice/shared /workspace/alice/tmp \
               /workspace/alice/logs /workspace/alice/ipc /tmp /etc 2>/dev/null | sort -u \
               | sed 's/^/FOUND-IN /'; \
             rm -f /workspace/alice/shared/probe.txt; echo end-of-search"
        ))
        .await;
    assert!(report.contains("end-of-search"), "{report}");
    let found: Vec<&str> = report.lines().filter(|l| l.contains("FOUND-IN")).collect();
    assert!(
        found.len() == 1 && found[0].ends_with("shared/probe.txt"),
        "{report}"
    );

    // Restarted, the agent gets the key the same way and opens the encrypted store again.
    runner_env_ok(&setup, &["stop"], &[]).await;
    runner_env_ok(&setup, &["start", "--detach"], &[]).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    let found = chat.turn("search boat called").await;
    assert!(found.message.contains("Heron"), "{found:?}");
    let vm = inspect(&name(&setup, "alice", "oxydra-vm")).await.unwrap();
    assert!(!vm.to_string().contains(key));
    runner_env_ok(&setup, &["stop"], &[]).await;
}
