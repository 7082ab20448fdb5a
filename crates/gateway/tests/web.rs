//! The web client's routes on a real gateway over real sockets: the page on a plain `GET /` with
//! strict security headers (and the WebSocket still at `/` and `/ws`), a one-time sign-in link
//! (issued for the gateway token only, dead after first use or its lifetime, refused without a
//! failure counted when another site's page requests it), sign-in with a pasted token (same
//! origin only, failures rate-limited), the session cookie's flags, a WebSocket `hello`
//! authenticated by the cookie (only from the gateway's own origin; a foreign `Origin` is
//! refused at the upgrade), and sign-out ending the session and its connections.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::common::{Client, start, token_of};
use gateway::{CONTENT_SECURITY_POLICY, GatewayConfig, RunningGateway};
use test_support::ScriptedLlm;

/// A raw HTTP/1.1 response: status, headers (lower-case names), body.
pub(crate) struct Http {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Http {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request with `headers` (each `Name: value`) and an optional body.
pub(crate) async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[String],
    body: &str,
) -> Http {
    let host = addr.to_string();
    http_as(addr, Some(&host), method, path, headers, body).await
}

/// [`http`] naming `host` in its `Host` header (none without), whatever address it connects to.
pub(crate) async fn http_as(
    addr: SocketAddr,
    host: Option<&str>,
    method: &str,
    path: &str,
    headers: &[String],
    body: &str,
) -> Http {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if let Some(host) = host {
        request.push_str(&format!("Host: {host}\r\n"));
    }
    for h in headers {
        request.push_str(h);
        request.push_str("\r\n");
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Http {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// `POST /auth/token` as JSON, with an `Origin` header line if given.
pub(crate) async fn post_token(addr: SocketAddr, origin: Option<&str>, body: &str) -> Http {
    let mut headers = vec!["Content-Type: application/json".to_owned()];
    headers.extend(origin.map(str::to_owned));
    http(addr, "POST", "/auth/token", &headers, body).await
}

pub(crate) fn origin(gw: &RunningGateway) -> String {
    format!("Origin: http://{}", gw.local_addr())
}

/// A one-time link for `token`'s user: its path.
pub(crate) async fn link(gw: &RunningGateway, token: &str) -> Http {
    http(
        gw.local_addr(),
        "POST",
        "/auth/link",
        &[format!("Authorization: Bearer {token}")],
        "",
    )
    .await
}

pub(crate) fn link_path(response: &Http) -> String {
    let body: serde_json::Value = serde_json::from_str(&response.body).unwrap();
    body["path"].as_str().unwrap().to_owned()
}

/// `name=value` of the Set-Cookie header.
pub(crate) fn cookie_pair(response: &Http) -> String {
    let set = response.header("set-cookie").unwrap();
    set.split(';').next().unwrap().to_owned()
}

/// A WebSocket to `/` with extra headers.
pub(crate) async fn ws_with(
    gw: &RunningGateway,
    headers: &[(&str, String)],
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    tokio_tungstenite::tungstenite::Error,
> {
    let mut request = gw.url().into_client_request().unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(ws, _)| ws)
}

pub(crate) async fn hello_by_cookie(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
) -> serde_json::Value {
    let hello = r#"{"type":"hello","protocol_version":1,"token":"","user_id":"alice"}"#;
    ws.send(Message::Text(hello.into())).await.unwrap();
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .unwrap()
        {
            Some(Ok(Message::Text(t))) => return serde_json::from_str(t.as_str()).unwrap(),
            Some(Ok(_)) => {}
            other => panic!("connection ended: {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_page_is_served_with_strict_headers_and_the_websocket_still_at_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let page = http(gw.local_addr(), "GET", "/", &[], "").await;
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(page.body.contains("/assets/app.js"));
    assert!(!page.body.contains("<script>"), "no inline script");
    assert!(!page.body.contains("style="), "no inline style");
    assert_eq!(
        page.header("content-security-policy"),
        Some(CONTENT_SECURITY_POLICY)
    );
    let csp = CONTENT_SECURITY_POLICY;
    assert!(csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self'"));
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    for (name, kind, body) in gateway::ASSETS {
        let asset = http(gw.local_addr(), "GET", &format!("/assets/{name}"), &[], "").await;
        assert_eq!(asset.status, 200, "{name}");
        assert_eq!(asset.header("content-type"), Some(*kind));
        assert_eq!(asset.body.len(), body.len());
        assert!(
            !body.contains("innerHTML") && !body.contains("eval("),
            "{name}"
        );
    }
    let missing = http(gw.local_addr(), "GET", "/assets/../Cargo.toml", &[], "").await;
    assert_eq!(missing.status, 404);
    assert!(gateway::web_client_bytes() <= 200 * 1024);

    // Token clients keep working at `/` and `/ws`.
    let (_, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    assert!(session.session_id.as_str().starts_with("s-"));
    let url = format!("ws://{}/ws", gw.local_addr());
    assert!(tokio_tungstenite::connect_async(url).await.is_ok());
    gw.shutdown().await;
}

#[tokio::test]
async fn a_one_time_link_signs_in_once_and_its_cookie_authenticates_the_websocket() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let addr = gw.local_addr();
    let token = token_of(dir.path(), "alice");

    assert_eq!(link(&gw, "wrong").await.status, 401);
    let browser = http(
        addr,
        "POST",
        "/auth/link",
        &[format!("Authorization: Bearer {token}"), origin(&gw)],
        "",
    )
    .await;
    assert_eq!(browser.status, 403, "a browser page cannot ask for a link");
    let issued = link(&gw, &token).await;
    assert_eq!(issued.status, 200);
    let path = link_path(&issued);
    assert!(!path.contains(&token), "the token is not in the link");

    let redeemed = http(addr, "GET", &path, &[], "").await;
    assert_eq!(redeemed.status, 303);
    assert_eq!(redeemed.header("location"), Some("/"));
    let set = redeemed.header("set-cookie").unwrap().to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    assert!(!set.contains(&token));
    let cookie = cookie_pair(&redeemed);
    let again = http(addr, "GET", &path, &[], "").await;
    assert_eq!(again.status, 403, "a link works once");
    assert!(again.header("set-cookie").is_none());

    let me = http(addr, "GET", "/auth/me", &[format!("Cookie: {cookie}")], "").await;
    assert_eq!(me.status, 200);
    assert!(me.body.contains("\"alice\""));

    // The cookie authenticates a same-origin upgrade's hello with an empty token.
    let mut ws = ws_with(
        &gw,
        &[
            ("cookie", cookie.clone()),
            ("origin", format!("http://{addr}")),
        ],
    )
    .await
    .unwrap();
    assert_eq!(hello_by_cookie(&mut ws).await["type"], "hello_ok");
    // Without the cookie, or without Origin, the empty token is refused.
    let mut bare = ws_with(&gw, &[("origin", format!("http://{addr}"))])
        .await
        .unwrap();
    assert_eq!(hello_by_cookie(&mut bare).await["code"], "unauthorized");
    let mut no_origin = ws_with(&gw, &[("cookie", cookie.clone())]).await.unwrap();
    assert_eq!(
        hello_by_cookie(&mut no_origin).await["code"],
        "unauthorized"
    );
    // Another origin cannot even upgrade, cookie or not.
    let foreign = ws_with(
        &gw,
        &[
            ("cookie", cookie.clone()),
            ("origin", "http://evil.example".into()),
        ],
    )
    .await;
    assert!(foreign.is_err(), "a foreign origin is refused");

    // Sign-out (same origin only) ends the session: the cookie is dead, its sockets close.
    let foreign_out = http(
        addr,
        "POST",
        "/auth/signout",
        &[
            format!("Cookie: {cookie}"),
            "Origin: http://evil.example".into(),
        ],
        "",
    )
    .await;
    assert_eq!(foreign_out.status, 403);
    let out = http(
        addr,
        "POST",
        "/auth/signout",
        &[format!("Cookie: {cookie}"), origin(&gw)],
        "",
    )
    .await;
    assert_eq!(out.status, 204);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the signed-out session's socket closes");
    let me = http(addr, "GET", "/auth/me", &[format!("Cookie: {cookie}")], "").await;
    assert_eq!(me.status, 401);
    let mut after = ws_with(
        &gw,
        &[("cookie", cookie), ("origin", format!("http://{addr}"))],
    )
    .await
    .unwrap();
    assert_eq!(hello_by_cookie(&mut after).await["code"], "unauthorized");
    gw.shutdown().await;
}

#[tokio::test]
async fn an_unused_link_dies_after_its_lifetime() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let config = GatewayConfig {
        signin_code_lifetime: Duration::from_millis(200),
        ..GatewayConfig::default()
    };
    let gw = start(dir.path(), &["alice"], &server, config).await;
    let path = link_path(&link(&gw, &token_of(dir.path(), "alice")).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let late = http(gw.local_addr(), "GET", &path, &[], "").await;
    assert_eq!(late.status, 403);
    assert!(late.header("set-cookie").is_none());
    gw.shutdown().await;
}

#[tokio::test]
async fn a_pasted_token_signs_in_from_the_page_only_and_failures_are_rate_limited() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let addr = gw.local_addr();
    let token = token_of(dir.path(), "alice");
    let body = format!("{{\"token\":\"{token}\"}}");
    let own = origin(&gw);

    let foreign = post_token(addr, Some("Origin: http://evil.example"), &body).await;
    assert_eq!(
        foreign.status, 403,
        "another site cannot sign the browser in"
    );
    assert_eq!(post_token(addr, None, &body).await.status, 403);

    let good = post_token(addr, Some(&own), &body).await;
    assert_eq!(good.status, 200);
    assert!(good.body.contains("\"alice\""));
    let set = good.header("set-cookie").unwrap();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"));
    assert!(!set.contains(&token) && !good.body.contains(&token));

    for _ in 0..10 {
        let wrong = post_token(addr, Some(&own), r#"{"token":"0000"}"#).await;
        assert_eq!(wrong.status, 401);
    }
    let limited = post_token(addr, Some(&own), &body).await;
    assert_eq!(
        limited.status, 429,
        "even the right token waits once the limit is hit"
    );
    assert!(limited.header("retry-after").is_some());
    let code = link(&gw, &token).await;
    assert_eq!(code.status, 429, "the link route shares the limit");
    gw.shutdown().await;
}

/// Any page the user visits can make their browser request a URL of the gateway (an image, a
/// link) with no cookie and no token: such a request to `/signin/…` (the browser marks it
/// `Sec-Fetch-Site: cross-site`, or `same-site` from another port of the host) is refused before
/// it counts as a failed sign-in — ten a minute used to shut every sign-in route for everyone —
/// and a live code it carries is neither redeemed nor used up. The link the user opens
/// themselves (`none`) still signs in.
#[tokio::test]
async fn another_sites_pages_cannot_shut_the_sign_in_or_use_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, GatewayConfig::default()).await;
    let addr = gw.local_addr();
    let token = token_of(dir.path(), "alice");
    let from = |site: &str| {
        vec![
            format!("Sec-Fetch-Site: {site}"),
            "Sec-Fetch-Mode: no-cors".to_owned(),
            "Sec-Fetch-Dest: image".to_owned(),
        ]
    };
    let guess = format!("/signin/{}", "0".repeat(64));
    for site in ["cross-site", "same-site"].iter().cycle().take(12) {
        let planted = http(addr, "GET", &guess, &from(site), "").await;
        assert_eq!(planted.status, 403, "{site}: {}", planted.body);
    }
    let path = link_path(&link(&gw, &token).await);
    let used = http(addr, "GET", &path, &from("cross-site"), "").await;
    assert_eq!(used.status, 403);
    assert!(used.header("set-cookie").is_none(), "not signed in");

    let opened = http(addr, "GET", &path, &["Sec-Fetch-Site: none".to_owned()], "").await;
    assert_eq!(opened.status, 303, "the user's own link still works");
    assert!(opened.header("set-cookie").is_some());
    let body = format!("{{\"token\":\"{token}\"}}");
    let pasted = post_token(addr, Some(&origin(&gw)), &body).await;
    assert_eq!(pasted.status, 200, "sign-in is not shut: {}", pasted.body);
    gw.shutdown().await;
}
