//! With `gateway_port = 0` a restarted agent listens on a new port and rewrites
//! `.oxydra/gateway.json`: a client started with `--workspace` reads the marker again before each
//! reconnect and finds the agent there, back on its session.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common::{self, until};

use std::path::Path;
use std::time::Duration;

use clap::Parser;
use crossterm::event::{KeyCode, KeyEvent};
use test_support::{ScriptedLlm, ScriptedReply};
use tokio::sync::{mpsc, watch};
use tui::model::Entry;
use tui::net::{self, NetConfig};
use tui::{App, Args, ConnState};
use types::WorkspacePaths;

fn write_marker(workspace: &Path, url: &str) {
    let marker = serde_json::json!({"url": url, "pid": 1, "started_at": "2025-01-01T09:00:00Z"});
    std::fs::write(
        WorkspacePaths::new(workspace).endpoint(),
        marker.to_string(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_follows_a_restarted_agent_to_its_new_port() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("alice");
    let llm = ScriptedLlm::start().await;
    llm.push(ScriptedReply::text("first answer"));
    let (first, _) = common::gateway(dir.path(), "alice", &llm).await;
    write_marker(&workspace, &first.url());

    let target = Args::try_parse_from([
        "oxydra-tui",
        "--user",
        "alice",
        "--workspace",
        workspace.to_str().unwrap(),
    ])
    .unwrap()
    .resolve()
    .unwrap();
    assert_eq!(target.url, first.url());
    let mut app = App::new(target.user.clone(), None, None);
    let (resume_tx, resume_rx) = watch::channel(app.resume());
    let (out_tx, out_rx) = mpsc::channel(64);
    let (event_tx, mut events) = mpsc::channel(1024);
    let mut config = NetConfig::new(target.url, target.user, target.token);
    config.source = target.source;
    config.backoff = Duration::from_millis(20);
    config.max_backoff = Duration::from_millis(200);
    let net = net::spawn(config, resume_rx, out_rx, event_tx);

    let online = |app: &App| app.conn == ConnState::Online;
    until(&mut app, &mut events, &out_tx, &resume_tx, "online", online).await;
    for c in "hi".chars() {
        app.on_key(KeyEvent::from(KeyCode::Char(c)));
    }
    for frame in app.on_key(KeyEvent::from(KeyCode::Enter)) {
        out_tx.send(frame).await.unwrap();
    }
    until(
        &mut app,
        &mut events,
        &out_tx,
        &resume_tx,
        "the reply",
        |app| !app.turn.is_active(),
    )
    .await;
    let session = app.session.as_ref().unwrap().session_id.clone();

    // The agent restarts on another port and rewrites its marker.
    let old = first.local_addr();
    first.shutdown().await;
    until(
        &mut app,
        &mut events,
        &out_tx,
        &resume_tx,
        "offline",
        |app| matches!(app.conn, ConnState::Offline { .. }),
    )
    .await;
    let (second, _) = common::gateway(dir.path(), "alice", &llm).await;
    assert_ne!(second.local_addr(), old, "the new agent has a new port");
    write_marker(&workspace, &second.url());

    until(
        &mut app,
        &mut events,
        &out_tx,
        &resume_tx,
        "back online",
        online,
    )
    .await;
    assert_eq!(
        app.session.as_ref().map(|s| &s.session_id),
        Some(&session),
        "back on the same session"
    );
    assert!(
        app.entries
            .iter()
            .any(|e| *e == Entry::info("Reconnected (the agent restarted).")),
        "{:?}",
        app.entries
    );

    drop(out_tx);
    tokio::time::timeout(Duration::from_secs(5), net)
        .await
        .expect("the client stops when the app does")
        .unwrap();
    second.shutdown().await;
}

/// A fresh client's empty session, across agent restarts: the client says it reconnected and
/// which session it is on, and the user's sessions never list two empty untitled ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_session_across_restarts_is_said_and_does_not_pile_up() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("alice");
    let llm = ScriptedLlm::start().await;
    let (mut gw, _) = common::gateway(dir.path(), "alice", &llm).await;
    write_marker(&workspace, &gw.url());
    let target = Args::try_parse_from([
        "oxydra-tui",
        "--user",
        "alice",
        "--workspace",
        workspace.to_str().unwrap(),
    ])
    .unwrap()
    .resolve()
    .unwrap();
    let mut app = App::new(target.user.clone(), None, None);
    let (resume_tx, resume_rx) = watch::channel(app.resume());
    let (out_tx, out_rx) = mpsc::channel(64);
    let (event_tx, mut events) = mpsc::channel(1024);
    let mut config = NetConfig::new(target.url, target.user, target.token);
    config.source = target.source;
    config.backoff = Duration::from_millis(20);
    config.max_backoff = Duration::from_millis(200);
    let net = net::spawn(config, resume_rx, out_rx, event_tx);
    let online = |app: &App| app.conn == ConnState::Online;
    until(&mut app, &mut events, &out_tx, &resume_tx, "online", online).await;

    for round in 0..2 {
        // The agent restarts (a new port, its marker rewritten) with nothing typed yet.
        gw.shutdown().await;
        let offline = |app: &App| matches!(app.conn, ConnState::Offline { .. });
        until(
            &mut app,
            &mut events,
            &out_tx,
            &resume_tx,
            "offline",
            offline,
        )
        .await;
        (gw, _) = common::gateway(dir.path(), "alice", &llm).await;
        write_marker(&workspace, &gw.url());
        until(&mut app, &mut events, &out_tx, &resume_tx, "online", online).await;
        let now = app.session.as_ref().unwrap().session_id.clone();
        let said: Vec<String> = app
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Notice { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect();
        assert!(
            said.iter()
                .any(|t| t.starts_with("Reconnected") && t.contains(now.as_str())),
            "round {round}: a line says the client reconnected, naming the session: {said:?}"
        );
    }

    // `/sessions`: one empty untitled session at most.
    for c in "/sessions".chars() {
        app.on_key(KeyEvent::from(KeyCode::Char(c)));
    }
    for frame in app.on_key(KeyEvent::from(KeyCode::Enter)) {
        out_tx.send(frame).await.unwrap();
    }
    let listed = |app: &App| {
        app.entries
            .iter()
            .any(|e| matches!(e, Entry::Notice { text, .. } if text.contains("untitled session")))
    };
    until(
        &mut app,
        &mut events,
        &out_tx,
        &resume_tx,
        "the list",
        listed,
    )
    .await;
    let list = app
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Notice { text, .. } if text.contains("untitled session") => Some(text.clone()),
            _ => None,
        })
        .next_back()
        .unwrap();
    assert_eq!(
        list.matches("untitled session · 0 messages").count(),
        1,
        "{list}"
    );

    drop(out_tx);
    tokio::time::timeout(Duration::from_secs(5), net)
        .await
        .expect("the client stops when the app does")
        .unwrap();
    gw.shutdown().await;
}

/// An agent that stopped (or crashed and is not back yet) has no `.oxydra/gateway.json`. The
/// client kept the old address and knocked on it with `hello` and the token every few hundred
/// milliseconds, so a command of the agent's shell listening on that loopback port (the port is
/// in `ipc/gateway.json`, which the shell reads) was handed the gateway token. Now the client
/// waits for a marker and connects only where it says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_never_knocks_on_the_old_port_once_the_marker_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("alice");
    let llm = ScriptedLlm::start().await;
    let (first, _) = common::gateway(dir.path(), "alice", &llm).await;
    write_marker(&workspace, &first.url());
    let target = Args::try_parse_from([
        "oxydra-tui",
        "--user",
        "alice",
        "--workspace",
        workspace.to_str().unwrap(),
    ])
    .unwrap()
    .resolve()
    .unwrap();
    let mut app = App::new(target.user.clone(), None, None);
    let (resume_tx, resume_rx) = watch::channel(app.resume());
    let (out_tx, out_rx) = mpsc::channel(64);
    let (event_tx, mut events) = mpsc::channel(1024);
    let mut config = NetConfig::new(target.url, target.user, target.token);
    config.source = target.source;
    config.backoff = Duration::from_millis(20);
    config.max_backoff = Duration::from_millis(100);
    let net = net::spawn(config, resume_rx, out_rx, event_tx);
    let online = |app: &App| app.conn == ConnState::Online;
    until(&mut app, &mut events, &out_tx, &resume_tx, "online", online).await;

    // The agent stops (removing its marker) and a squatter takes its port at once.
    let old = first.local_addr();
    std::fs::remove_file(WorkspacePaths::new(&workspace).endpoint()).unwrap();
    first.shutdown().await;
    let squatter = tokio::net::TcpSocket::new_v4().unwrap();
    squatter.set_reuseaddr(true).unwrap();
    squatter.bind(old).unwrap();
    let squatter = squatter.listen(8).unwrap();
    let knocked = tokio::spawn(async move { squatter.accept().await.is_ok() });
    let offline = |app: &App| matches!(app.conn, ConnState::Offline { .. });
    until(
        &mut app,
        &mut events,
        &out_tx,
        &resume_tx,
        "offline",
        offline,
    )
    .await;
    // Many retries' worth of time (20 ms doubling to 100 ms).
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    while tokio::time::Instant::now() < deadline {
        tokio::select! {
            Some(event) = events.recv() => { let _ = app.on_conn(event); }
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
    assert!(
        !knocked.is_finished(),
        "the client connected to the old port, where anything may listen now"
    );
    knocked.abort();

    // A new agent writes its marker: the client finds it there.
    let (second, _) = common::gateway(dir.path(), "alice", &llm).await;
    write_marker(&workspace, &second.url());
    until(
        &mut app,
        &mut events,
        &out_tx,
        &resume_tx,
        "back online",
        online,
    )
    .await;
    drop(out_tx);
    tokio::time::timeout(Duration::from_secs(5), net)
        .await
        .expect("the client stops when the app does")
        .unwrap();
    second.shutdown().await;
}
