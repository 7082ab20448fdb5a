//! `[memory] enabled = false` through the real binaries (process tier, real Landlock): the agent
//! opens no database, offers the model no memory tool, still chats, and its health file says
//! memory is disabled.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Chat, Setup, StopOnDrop, respond};
use test_support::Need;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn an_agent_with_memory_disabled_opens_no_store_offers_no_memory_tools_and_says_so() {
    test_support::need(Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let agent_toml = setup.dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&agent_toml).unwrap();
    text.push_str("[memory]\nenabled = false\n");
    std::fs::write(&agent_toml, text).unwrap();
    let _guard = StopOnDrop(setup.config.clone());

    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let ws = setup.ws("alice");
    let health: runner::Health = runner::read_json(&runner::health_path(&ws))
        .unwrap()
        .expect("a health file");
    assert_eq!(health.memory, "disabled");

    let mut chat = Chat::connect(&setup, "alice", None).await;
    let turn = chat.turn("hello").await;
    assert_eq!(turn.message, "hello");
    let offered = server.last_request().unwrap().tool_names();
    assert!(
        offered.iter().all(|name| !name.starts_with("memory_")),
        "{offered:?}"
    );
    assert!(offered.contains(&"shell_exec".to_owned()), "{offered:?}");
    assert!(
        !ws.default_memory_db().exists(),
        "a database was created with memory disabled"
    );

    setup.runner_ok(&["stop"]).await;
}
