//! The network client and the model together against a real gateway, through a TCP proxy that
//! drops every connection in the middle of a slowly streamed reply: the client reconnects with
//! backoff, resumes by `last_seq`, and the reply reads exactly once, whole.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use test_support::{ScriptedLlm, ScriptedReply};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tui::model::Entry;
use tui::net::{self, NetConfig};
use tui::{App, ConnEvent, TurnState};
use types::{ServerFrame, TurnEvent, UserId};

/// Forwards connections to `target`; `cut()` drops every open one (new ones are still accepted).
struct Proxy {
    addr: std::net::SocketAddr,
    links: Arc<Mutex<Vec<JoinHandle<()>>>>,
    _accept: JoinHandle<()>,
}

impl Proxy {
    async fn start(target: std::net::SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let links: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept_links = links.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let link = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                accept_links.lock().unwrap().push(link);
            }
        });
        Self {
            addr,
            links,
            _accept: accept,
        }
    }

    fn cut(&self) {
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_resumes_without_losing_or_repeating_text() {
    let words: Vec<String> = (0..60).map(|i| format!("w{i}")).collect();
    let reply = words.join(" ");
    let llm = ScriptedLlm::start().await;
    llm.push(ScriptedReply::text(&reply).slow(Duration::from_millis(100)));
    let dir = tempfile::tempdir().unwrap();
    let (gw, token_file) = common::gateway(dir.path(), "alice", &llm).await;
    let proxy = Proxy::start(gw.local_addr()).await;

    let user = UserId::parse("alice").unwrap();
    let mut app = App::new(user.clone(), None, None);
    let (resume_tx, resume_rx) = watch::channel(app.resume());
    let (out_tx, out_rx) = mpsc::channel(64);
    let (event_tx, mut events) = mpsc::channel(1024);
    let mut config = NetConfig::new(
        format!("ws://{}", proxy.addr),
        user,
        std::fs::read_to_string(&token_file)
            .unwrap()
            .trim()
            .to_owned(),
    );
    config.backoff = Duration::from_millis(20);
    let net = net::spawn(config, resume_rx, out_rx, event_tx);

    let mut sent = false;
    let mut cuts = 0;
    let mut deltas_since_cut = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("the turn ends in time")
            .expect("the client runs");
        let delta = matches!(
            event,
            ConnEvent::Frame(ServerFrame::Turn {
                event: TurnEvent::AssistantDelta { .. },
                ..
            })
        );
        let done = matches!(event, ConnEvent::Frame(ref f) if f.ends_turn());
        for frame in app.on_conn(event) {
            out_tx.send(frame).await.unwrap();
        }
        resume_tx.send_replace(app.resume());
        if !sent && app.conn == tui::ConnState::Online {
            for c in "tell me".chars() {
                app.on_key(crossterm::event::KeyEvent::from(
                    crossterm::event::KeyCode::Char(c),
                ));
            }
            for frame in app.on_key(crossterm::event::KeyEvent::from(
                crossterm::event::KeyCode::Enter,
            )) {
                out_tx.send(frame).await.unwrap();
            }
            sent = true;
        }
        if delta {
            deltas_since_cut += 1;
            // Drop the connection after each of the first two pieces of the reply (of three).
            if deltas_since_cut == 1 && cuts < 2 {
                proxy.cut();
                cuts += 1;
                deltas_since_cut = 0;
            }
        }
        if done {
            break;
        }
    }
    assert_eq!(cuts, 2, "the stream was long enough to cut twice");
    assert_eq!(app.turn, TurnState::Idle);
    let texts: Vec<&str> = app
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Assistant { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec![reply.as_str()]);
    let reconnects = app
        .entries
        .iter()
        .filter(|e| **e == Entry::info("Reconnected."))
        .count();
    assert_eq!(reconnects, 2);

    drop(out_tx);
    tokio::time::timeout(Duration::from_secs(5), net)
        .await
        .expect("the client stops when the app does")
        .unwrap();
    gw.shutdown().await;
}
