//! `runner --user alice open` against a running process-tier agent: it prints a one-time link
//! to the agent's gateway that signs a browser in once (an HttpOnly, SameSite=Strict cookie) and
//! is refused the second time; without a running agent it says how to start one.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests fail loudly")]

use std::io::{Read, Write};

use crate::common;

use common::{Setup, StopOnDrop, respond};
use test_support::ScriptedLlm;

/// A raw `GET path` to `addr`: the response's head.
fn get_head(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split("\r\n\r\n").next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn runner_open_prints_a_one_time_link_to_the_running_agent() {
    test_support::need(test_support::Need::Landlock);
    let server = ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());

    let out = setup
        .runner(&["--user", "alice", "open", "--no-browser"])
        .await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("alice is not running"));

    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let printed = setup
        .runner_ok(&["--user", "alice", "open", "--no-browser"])
        .await;
    let token =
        std::fs::read_to_string(setup.ws("alice").internal().join("gateway.token")).unwrap();
    assert!(
        !printed.contains(token.trim()),
        "the token is never printed"
    );
    let link = printed
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no link in {printed}"));
    let rest = link.trim_start_matches("http://");
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    assert_eq!(addr, setup.gateway("alice").unwrap().socket_addr().unwrap());
    let first = get_head(addr, path);
    assert!(first.starts_with("HTTP/1.1 303"), "{first}");
    assert!(
        first.contains("HttpOnly") && first.contains("SameSite=Strict"),
        "{first}"
    );
    let second = get_head(addr, path);
    assert!(second.starts_with("HTTP/1.1 403"), "{second}");
    setup.runner_ok(&["stop"]).await;
}
