//! The "done when", end to end through the real runner and `oxydra-vm` (process tier,
//! real Landlock): "remind me in 3 seconds to stretch" is sent as a turn, the agent is killed
//! and restarted by the runner before the reminder is due, and the user's next connect is shown
//! the reminder's notification (stored unread while no client was there).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Chat, Setup, StopOnDrop, respond};
use serde_json::json;
use test_support::{RecordedRequest, ScriptedReply};
use types::ServerFrame;

/// The scripted model: "remind …" makes a schedule; a scheduled run answers the reminder.
fn remind(req: &RecordedRequest) -> ScriptedReply {
    let text = req.last_user_text().unwrap_or_default();
    if text.starts_with("[Scheduled run") {
        return ScriptedReply::text("Time to stretch!");
    }
    if text.starts_with("remind") && req.last_tool_result().is_none() {
        let args = json!({"when": "in 3 seconds", "instruction": "Remind the user to stretch."});
        return ScriptedReply::tool_call("schedule_create", args);
    }
    respond(req)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn a_reminder_survives_an_agent_restart_and_notifies_on_the_next_connect() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(remind).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    let turn = chat.turn("remind me in 3 seconds to stretch").await;
    assert_eq!(
        turn.tools,
        vec![("schedule_create".to_owned(), true)],
        "{turn:?}"
    );
    drop(chat);
    // The agent dies before the reminder is due; the runner starts it again.
    let before = setup.gateway("alice").unwrap();
    runner::signal(before.pid, rustix::process::Signal::KILL);
    setup.wait_gateway("alice", Some(before.pid)).await;
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let mut chat = Chat::connect(&setup, "alice", None).await;
    let deadline = std::time::Instant::now() + common::WAIT;
    loop {
        assert!(std::time::Instant::now() < deadline, "no notification");
        if let ServerFrame::Notification { notification } = chat.recv().await {
            assert_eq!(notification.text, "Time to stretch!");
            assert_eq!(notification.status, "ok");
            assert!(notification.unread, "{notification:?}");
            break;
        }
    }
}
