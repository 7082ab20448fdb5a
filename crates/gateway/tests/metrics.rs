//! `GET /metrics` on a real gateway: the user's gateway token as a bearer token is required, a
//! token selects that user's numbers (never another user's), anything else is 401.

#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{provider, token_of, user_agent};
use gateway::{Gateway, GatewayConfig};
use test_support::ScriptedLlm;

/// One raw HTTP/1.1 request; the status code and body.
async fn get(addr: std::net::SocketAddr, authorization: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let auth = authorization.map_or_else(String::new, |a| format!("Authorization: {a}\r\n"));
    let request =
        format!("GET /metrics HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap();
    (status, body)
}

#[tokio::test]
async fn metrics_need_a_users_token_and_show_only_that_users_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let mut gw = Gateway::new(GatewayConfig::default());
    for user in ["alice", "bob"] {
        let agent = user_agent(dir.path(), user, provider(&server))
            .await
            .with_metrics(move || format!("memory_tool_requests_total{{user=\"{user}\"}} 1\n"));
        gw.add_user(agent).unwrap();
    }
    let gw = gw.start().await.unwrap();
    let addr = gw.local_addr();
    let alice = token_of(dir.path(), "alice");
    let bob = token_of(dir.path(), "bob");

    let table = [
        (None, 401, None),
        (Some("Bearer wrong".to_owned()), 401, None),
        (Some(alice.clone()), 401, None),
        (Some(format!("Basic {alice}")), 401, None),
        (Some(format!("Bearer {alice}")), 200, Some("alice")),
        (Some(format!("Bearer {bob}")), 200, Some("bob")),
    ];
    for (auth, status, user) in table {
        let (got, body) = get(addr, auth.as_deref()).await;
        assert_eq!(got, status, "{auth:?}: {body}");
        match user {
            Some(user) => assert!(
                body.contains(&format!("user=\"{user}\"")) && body.lines().count() == 1,
                "{body}"
            ),
            None => assert!(!body.contains("memory_tool"), "{body}"),
        }
    }
    gw.shutdown().await;
}
