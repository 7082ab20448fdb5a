//! DNS rebinding, over real sockets: a page on `http://evil.example:PORT` whose name was rebound
//! to this machine sends requests that name `evil.example` in their `Host` (and `Origin`), which
//! the gateway used to take for its own origin. Forged so: the sign-in routes, the page, every
//! other route and the WebSocket upgrade are refused with 421 and logged before anything counts
//! (a real sign-in works afterwards, the failure limit untouched); a name in `allow_hosts` is
//! served and signs in; any address (never rebound) is served when the gateway listens on every
//! interface, names still not; a request naming no host is served. In Chromium with the name
//! mapped to 127.0.0.1, the rebound page is refused and its script cannot shut the sign-in.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::browser::Browser;
use crate::common::{Client, logged, sign_in_by_link, start, token_of};
use crate::web::{Http, cookie_pair, hello_by_cookie, http_as, link, origin, post_token, ws_with};
use gateway::{GatewayConfig, RunningGateway};
use test_support::ScriptedLlm;
use types::Host;

/// The gateway's refusal: 421, saying which setting to add the name to, with the security
/// headers every response carries.
fn assert_refused(response: &Http, what: &str) {
    assert_eq!(response.status, 421, "{what}: {}", response.body);
    assert!(
        response.body.contains("allow_hosts"),
        "{what}: {}",
        response.body
    );
    assert_eq!(response.header("x-frame-options"), Some("DENY"), "{what}");
}

/// The status of a WebSocket upgrade to `gw` naming `host`, with `origin` if given.
async fn upgrade_status(gw: &RunningGateway, host: &str, origin: Option<&str>) -> u16 {
    let mut headers = vec![("host", host.to_owned())];
    headers.extend(origin.map(|o| ("origin", o.to_owned())));
    match ws_with(gw, &headers).await {
        Ok(_) => 101,
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("upgrade naming {host}: {e}"),
    }
}

const WRONG_TOKEN: &str = r#"{"token":"0000"}"#;

#[tokio::test]
async fn a_rebound_name_reaches_nothing_and_uses_up_no_sign_in_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let addr = gw.local_addr();
    let evil = format!("evil.example:{}", addr.port());
    // What the rebound page's script sends: to the browser it is the page's own origin.
    let same_origin = [
        format!("Origin: http://{evil}"),
        "Content-Type: application/json".to_owned(),
        "Sec-Fetch-Site: same-origin".to_owned(),
    ];
    // More wrong sign-ins than the failure limit allows in a minute (10).
    let guess = format!("/signin/{}", "0".repeat(64));
    let mut attempts = Vec::new();
    for _ in 0..6 {
        let pasted = http_as(
            addr,
            Some(&evil),
            "POST",
            "/auth/token",
            &same_origin,
            WRONG_TOKEN,
        );
        let linked = http_as(addr, Some(&evil), "GET", &guess, &same_origin, "");
        attempts.push(pasted.await);
        attempts.push(linked.await);
    }
    let bearer = ["Authorization: Bearer 0000".to_owned()];
    attempts.push(http_as(addr, Some(&evil), "POST", "/auth/link", &bearer, "").await);
    // None of them counted: the user's own sign-in still works.
    let token = token_of(dir.path(), "alice");
    let own = post_token(
        addr,
        Some(&origin(&gw)),
        &format!("{{\"token\":\"{token}\"}}"),
    )
    .await;
    let statuses: Vec<u16> = attempts.iter().map(|r| r.status).collect();
    assert_eq!(
        (statuses, own.status),
        (vec![421; 13], 200),
        "the rebound page's attempts, then the user's sign-in: {}",
        own.body
    );
    for attempt in &attempts {
        assert_refused(attempt, "a sign-in attempt");
    }
    assert_eq!(
        link(&gw, &token).await.status,
        200,
        "links are not shut either"
    );

    // Nothing else is reached: the page, its files, the session, metrics, MCP, an unknown path.
    let metrics = [format!("Authorization: Bearer {token}")];
    for (path, headers) in [
        ("/", &[][..]),
        ("/assets/app.js", &[][..]),
        ("/auth/me", &[][..]),
        ("/metrics", &metrics[..]),
        ("/mcp", &metrics[..]),
        ("/no-such-page", &[][..]),
    ] {
        let response = http_as(addr, Some(&evil), "GET", path, headers, "").await;
        assert_refused(&response, path);
    }
    // Each refusal is logged with the host it named.
    let log = logged(async {
        let response = http_as(addr, Some(&evil), "GET", "/", &[], "").await;
        assert_refused(&response, "logged");
    })
    .await;
    assert!(
        log.contains(" WARN ") && log.contains(&format!("host=\"{evil}\"")),
        "{log}"
    );
    // Nor the WebSocket, with the page's Origin or without one.
    let page_origin = format!("http://{evil}");
    assert_eq!(upgrade_status(&gw, &evil, Some(&page_origin)).await, 421);
    assert_eq!(upgrade_status(&gw, &evil, None).await, 421);
    // A name is refused whatever its case or port, or a final dot.
    for host in ["EVIL.example", "evil.example.:80", "localhost.evil.example"] {
        let response = http_as(addr, Some(host), "GET", "/", &[], "").await;
        assert_refused(&response, host);
    }
    // This machine's own names are served, as the TUI and the runner name it.
    for host in [addr.to_string(), format!("localhost:{}", addr.port())] {
        let page = http_as(addr, Some(&host), "GET", "/", &[], "").await;
        assert_eq!(page.status, 200, "{host}");
    }
    let (_, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    assert!(session.session_id.as_str().starts_with("s-"));
    gw.shutdown().await;
}

#[tokio::test]
async fn a_name_in_allow_hosts_is_served_and_others_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let config = GatewayConfig {
        allow_hosts: vec![Host::parse("agent.example").unwrap()],
        ..GatewayConfig::default()
    };
    let gw = start(dir.path(), &["alice"], &server, config).await;
    let addr = gw.local_addr();
    let port = addr.port();
    let (listed, other) = (
        format!("Agent.Example:{port}"),
        format!("other.example:{port}"),
    );

    let page = http_as(addr, Some(&listed), "GET", "/", &[], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let refused = http_as(addr, Some(&other), "GET", "/", &[], "").await;
    assert_refused(&refused, "a name not listed");

    // The listed name signs in (its page's own origin), and its cookie's hello is accepted.
    let token = token_of(dir.path(), "alice");
    let own = [
        format!("Origin: http://{listed}"),
        "Content-Type: application/json".to_owned(),
    ];
    let body = format!("{{\"token\":\"{token}\"}}");
    let signed = http_as(addr, Some(&listed), "POST", "/auth/token", &own, &body).await;
    assert_eq!(signed.status, 200, "{}", signed.body);
    let headers = [
        ("host", listed.clone()),
        ("origin", format!("http://{listed}")),
        ("cookie", cookie_pair(&signed)),
    ];
    let mut ws = ws_with(&gw, &headers).await.unwrap();
    assert_eq!(hello_by_cookie(&mut ws).await["type"], "hello_ok");
    assert_eq!(upgrade_status(&gw, &other, None).await, 421);
    gw.shutdown().await;
}

#[tokio::test]
async fn any_address_is_served_when_listening_everywhere_and_unlisted_names_never() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let everywhere = GatewayConfig {
        bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        ..GatewayConfig::default()
    };
    let gw = start(dir.path(), &["alice"], &server, everywhere).await;
    let port = gw.local_addr().port();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    // Addresses of this machine on other networks, as another machine's browser names them.
    for host in [format!("192.0.2.7:{port}"), format!("[2001:db8::7]:{port}")] {
        let page = http_as(addr, Some(&host), "GET", "/", &[], "").await;
        assert_eq!(page.status, 200, "{host}: {}", page.body);
        assert_eq!(upgrade_status(&gw, &host, None).await, 101, "{host}");
    }
    let named = http_as(
        addr,
        Some(&format!("alice.lan:{port}")),
        "GET",
        "/",
        &[],
        "",
    )
    .await;
    assert_refused(&named, "a name, not listed, on every interface");
    // A request naming no host at all (an HTTP/1.0 client) is served: browsers always name one.
    let anonymous = http_as(addr, None, "GET", "/", &[], "").await;
    assert_eq!(anonymous.status, 200, "{}", anonymous.body);
    gw.shutdown().await;

    // Bound to loopback, another address is not this gateway's.
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let host = format!("192.0.2.7:{}", gw.local_addr().port());
    let elsewhere = http_as(gw.local_addr(), Some(&host), "GET", "/", &[], "").await;
    assert_refused(&elsewhere, "another address");
    gw.shutdown().await;
}

/// A real browser with `evil.example` resolving to 127.0.0.1, as after a rebinding: the page at
/// that name is the refusal, and the script of a page of that origin cannot shut the sign-in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn in_chromium_a_rebound_name_gets_no_page_and_cannot_shut_the_sign_in() {
    test_support::need(test_support::Need::Chromium);
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let port = gw.local_addr().port();
    let mut browser =
        Browser::launch_with(&["--host-resolver-rules=MAP evil.example 127.0.0.1"]).await;
    browser
        .navigate(&format!("http://evil.example:{port}/"))
        .await;
    let text = browser
        .wait_for(
            "the refusal at the rebound name",
            "location.host.startsWith('evil.example') && document.body.innerText",
        )
        .await;
    assert!(text.as_str().unwrap().contains("allow_hosts"), "{text}");
    let statuses = browser
        .eval(
            "Promise.all([...Array(12)].map(() => fetch('/auth/token', {method: 'POST', \
             headers: {'Content-Type': 'application/json'}, body: '{\"token\":\"0000\"}'}) \
             .then(r => r.status)))",
        )
        .await;
    assert_eq!(statuses, serde_json::Value::from(vec![421; 12]));
    // The user's own sign-in, at the gateway's address, still works.
    sign_in_by_link(&mut browser, &gw, &token_of(dir.path(), "alice")).await;
    gw.shutdown().await;
}
