//! Connection limits: a flood of idle sockets never locks a legitimate client out, half-open
//! sockets are closed at the handshake deadline, and the caps hold.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::time::Duration;

use common::{Client, WAIT, start, test_config, text_of};
use futures::StreamExt;
use gateway::{ConnectionStats, GatewayConfig, RunningGateway};
use test_support::{ScriptedLlm, ScriptedReply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use types::{ServerFrame, TurnEvent};

/// Opens `n` TCP connections to the gateway and keeps them (they send nothing).
async fn flood(gw: &RunningGateway, n: usize) -> Vec<TcpStream> {
    let addr = gw.local_addr();
    futures::stream::iter(0..n)
        .map(|_| async move { TcpStream::connect(addr).await.expect("connects") })
        .buffer_unordered(64)
        .collect()
        .await
}

/// Waits until the gateway's counters satisfy `ok`; returns them.
async fn stats_until(
    gw: &RunningGateway,
    ok: impl Fn(&ConnectionStats) -> bool,
) -> ConnectionStats {
    let mut rx = gw.connections();
    let seen = tokio::time::timeout(WAIT, rx.wait_for(|s| ok(s)))
        .await
        .expect("counters reached in time")
        .expect("gateway running");
    *seen
}

/// Reads until the server closes the socket (end of file or reset).
async fn expect_closed_by_server(mut socket: TcpStream) {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(WAIT, socket.read(&mut buf))
            .await
            .expect("closed in time")
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

#[tokio::test]
async fn a_flood_of_idle_sockets_does_not_lock_out_a_legitimate_client() {
    const FLOOD: usize = 3000;
    const UPGRADES: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::text("Still here."));
    // Deadlines far away: only the caps make room here.
    let config = GatewayConfig {
        auth_timeout: Duration::from_secs(600),
        max_connections: Some(200),
        max_unauthenticated: Some(50),
        ..GatewayConfig::default()
    };
    let gw = start(dir.path(), &["alice"], &server, config).await;
    let held = flood(&gw, FLOOD).await;
    // And WebSocket upgrades that never send hello (some are evicted during their upgrade).
    let url = gw.url();
    let upgraded: Vec<_> = futures::stream::iter(0..UPGRADES)
        .map(|_| tokio_tungstenite::connect_async(url.as_str()))
        .buffer_unordered(16)
        .collect()
        .await;
    // Every flood socket has been dealt with: admitted (then maybe evicted, and its socket
    // closed) or refused.
    let stats = stats_until(&gw, |s| {
        s.accepted + s.refused >= (FLOOD + UPGRADES) as u64 && s.open == s.unauthenticated
    })
    .await;
    assert!(stats.evicted > 0, "{stats:?}");
    assert!(
        stats.open <= 200 && stats.unauthenticated <= 50,
        "{stats:?}"
    );

    // With all of them still held, a legitimate client gets in and completes a turn.
    let (mut client, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    client
        .send_turn(&session.session_id, "are you there?", "c-1")
        .await;
    let frames = client.recv_turn().await;
    assert!(
        matches!(
            frames.last(),
            Some(ServerFrame::Turn {
                event: TurnEvent::TurnCompleted { .. },
                ..
            })
        ),
        "{frames:?}"
    );
    assert_eq!(text_of(&frames), "Still here.");
    let stats = *gw.connections().borrow();
    assert!(
        stats.open <= 200 && stats.unauthenticated <= 50,
        "{stats:?}"
    );
    assert_eq!(stats.max_connections, 200);
    drop((held, upgraded));
    gw.shutdown().await;
}

#[tokio::test]
async fn half_open_sockets_are_closed_at_the_handshake_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let addr = gw.local_addr();
    // Connected, but no HTTP request at all.
    let silent = TcpStream::connect(addr).await.unwrap();
    // An HTTP request that never ends.
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    expect_closed_by_server(silent).await;
    expect_closed_by_server(slow).await;
    let stats = stats_until(&gw, |s| s.timed_out >= 2 && s.open == 0).await;
    assert_eq!(stats.unauthenticated, 0);
    gw.shutdown().await;
}

#[tokio::test]
async fn authenticated_clients_keep_their_slots_and_extra_connections_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let config = GatewayConfig {
        auth_timeout: Duration::from_secs(600),
        max_connections: Some(4),
        max_unauthenticated: Some(2),
        ..GatewayConfig::default()
    };
    let gw = start(dir.path(), &["alice"], &server, config).await;
    let (_a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let (_b, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    // Two idle sockets take the unauthenticated slots; every slot is now taken.
    let idle = flood(&gw, 2).await;
    stats_until(&gw, |s| s.open == 4).await;
    let extra = TcpStream::connect(gw.local_addr()).await.unwrap();
    expect_closed_by_server(extra).await;
    let stats = stats_until(&gw, |s| s.refused == 1).await;
    assert_eq!((stats.open, stats.unauthenticated), (4, 2), "{stats:?}");
    drop(idle);
    // Their slots come back once they are gone.
    stats_until(&gw, |s| s.open == 2 && s.unauthenticated == 0).await;
    let (_c, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    gw.shutdown().await;
}
