//! A slow or failing model is visible: against a real gateway whose scripted model answers 503
//! twice before replying, the client's turn state goes through "retrying 2/3" and "retrying 3/3"
//! (the status bar's `retrying 2/3 (HTTP 503)…`) before the reply; when every attempt fails, the
//! error says how many attempts were made.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent};
use test_support::{ScriptedLlm, ScriptedReply};
use tokio::sync::{mpsc, watch};
use tui::model::Entry;
use tui::net::{self, NetConfig};
use tui::{App, ConnState, TurnState};
use types::UserId;

/// Sends `text` as one turn and returns every turn state the app passed through, and the app.
async fn turn_states(llm: &ScriptedLlm, text: &str) -> (Vec<TurnState>, App) {
    let dir = tempfile::tempdir().unwrap();
    let (gw, token_file) = common::gateway(dir.path(), "alice", llm).await;
    let user = UserId::parse("alice").unwrap();
    let mut app = App::new(user.clone(), None, None);
    let (resume_tx, resume_rx) = watch::channel(app.resume());
    let (out_tx, out_rx) = mpsc::channel(64);
    let (event_tx, mut events) = mpsc::channel(1024);
    let token = std::fs::read_to_string(&token_file).unwrap();
    let config = NetConfig::new(gw.url(), user, token.trim().to_owned());
    let net = net::spawn(config, resume_rx, out_rx, event_tx);
    common::until(&mut app, &mut events, &out_tx, &resume_tx, "online", |a| {
        a.conn == ConnState::Online
    })
    .await;
    for c in text.chars() {
        app.on_key(KeyEvent::from(KeyCode::Char(c)));
    }
    for frame in app.on_key(KeyEvent::from(KeyCode::Enter)) {
        out_tx.send(frame).await.unwrap();
    }
    let mut states = vec![app.turn.clone()];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while app.turn.is_active() {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("the turn ends in time")
            .expect("the client runs");
        for frame in app.on_conn(event) {
            out_tx.send(frame).await.unwrap();
        }
        resume_tx.send_replace(app.resume());
        if states.last() != Some(&app.turn) {
            states.push(app.turn.clone());
        }
    }
    drop(out_tx);
    net.await.unwrap();
    gw.shutdown().await;
    (states, app)
}

fn retrying(attempt: u32) -> TurnState {
    TurnState::Retrying {
        attempt,
        max_attempts: 3,
        reason: "HTTP 503".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_show_in_the_turn_state_before_the_reply() {
    let llm = ScriptedLlm::start().await;
    llm.push_all([
        ScriptedReply::http_error(503, "overloaded"),
        ScriptedReply::http_error(503, "overloaded"),
        ScriptedReply::text("here at last"),
    ]);
    let (states, _) = turn_states(&llm, "hello").await;
    assert_eq!(
        states,
        vec![
            TurnState::Sending,
            TurnState::Thinking,
            retrying(2),
            retrying(3),
            TurnState::Writing,
            TurnState::Idle,
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_final_error_says_how_many_attempts_were_made() {
    let llm = ScriptedLlm::start().await;
    llm.push_all(vec![ScriptedReply::http_error(503, "overloaded"); 3]);
    let (states, app) = turn_states(&llm, "hello").await;
    assert!(states.contains(&retrying(3)), "{states:?}");
    let failed: Vec<&Entry> = app
        .entries
        .iter()
        .filter(|e| matches!(e, Entry::Notice { text, .. } if text.starts_with("The reply failed")))
        .collect();
    assert_eq!(
        failed,
        vec![&Entry::error(
            "The reply failed: the model call failed after 3 attempts: the provider failed (HTTP 503): overloaded"
        )]
    );
}
