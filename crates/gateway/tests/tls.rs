//! The gateway's own TLS, over real sockets with a self-signed certificate made by the `openssl`
//! CLI for each test: HTTPS and WSS with a client that trusts only that certificate (a one-time
//! link signs in, its cookie is `Secure`, pages carry HSTS, the cookie authenticates a WebSocket
//! `hello` from the `https://` origin while the `http://` one is refused, a request or upgrade
//! naming another host is refused with 421); plaintext gets no HTTP
//! on the TLS port; a missing file, bad PEM or a key that is not the certificate's is a clear
//! error; a gateway bound beyond loopback without TLS warns loudly, with TLS or on loopback not;
//! and the web client in Chromium signs in over HTTPS and goes online over WSS.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::browser::Browser;
use crate::common::{Client, logged, start, token_of};
use gateway::{GatewayConfig, RunningGateway, TlsIdentity};
use test_support::{ScriptedLlm, self_signed_cert};

fn tls_config(cert: &Path, key: &Path) -> GatewayConfig {
    GatewayConfig {
        tls: Some(TlsIdentity::load(cert, key).unwrap()),
        ..GatewayConfig::default()
    }
}

/// An HTTPS client that trusts only `cert` and follows no redirect.
fn https_client(cert: &Path) -> reqwest::Client {
    let pem = std::fs::read(cert).unwrap();
    reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap()
}

type Wss = tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<TcpStream>>;

/// A WebSocket over TLS to `gw`, trusting only `cert`, with extra headers.
async fn wss(
    gw: &RunningGateway,
    cert: &Path,
    headers: &[(&str, String)],
) -> Result<Wss, tokio_tungstenite::tungstenite::Error> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(cert).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(gw.local_addr()).await.unwrap();
    let name = ServerName::IpAddress(gw.local_addr().ip().into());
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    let mut request = gw.url().into_client_request().unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    tokio_tungstenite::client_async(request, tls)
        .await
        .map(|(ws, _)| ws)
}

#[tokio::test]
async fn https_and_wss_sign_in_with_a_secure_cookie_and_hsts() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed_cert(dir.path(), "gw");
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, tls_config(&cert, &key)).await;
    let port = gw.local_addr().port();
    assert_eq!(gw.url(), format!("wss://127.0.0.1:{port}/"));
    assert_eq!(gw.web_url(), format!("https://127.0.0.1:{port}/"));
    let client = https_client(&cert);

    let page = client.get(gw.web_url()).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(
        page.headers()["strict-transport-security"],
        "max-age=31536000"
    );
    assert!(page.headers().contains_key("content-security-policy"));
    // Over TLS too, a request or upgrade naming a host the gateway does not serve is refused.
    let evil = format!("evil.example:{port}");
    let rebound = client
        .get(gw.web_url())
        .header("host", &evil)
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 421);
    match wss(&gw, &cert, &[("Host", evil)]).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 421);
        }
        other => panic!("a WSS upgrade for another host was not refused: {other:?}"),
    }

    let token = token_of(dir.path(), "alice");
    let link = client
        .post(format!("{}auth/link", gw.web_url()))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(link.status(), 200);
    let body: serde_json::Value = link.json().await.unwrap();
    let path = body["path"].as_str().unwrap().trim_start_matches('/');
    let signed_in = client
        .get(format!("{}{path}", gw.web_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 303);
    let set_cookie = signed_in.headers()["set-cookie"].to_str().unwrap();
    assert!(set_cookie.contains("; Secure"), "{set_cookie}");
    assert!(set_cookie.contains("HttpOnly"), "{set_cookie}");
    let cookie = set_cookie.split(';').next().unwrap().to_owned();

    // The page's own origin is https://: the same host over http:// is another origin.
    let plain_origin = format!("http://127.0.0.1:{port}");
    let refused = wss(
        &gw,
        &cert,
        &[("Cookie", cookie.clone()), ("Origin", plain_origin)],
    )
    .await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 403);
        }
        other => panic!("an http:// origin was not refused: {other:?}"),
    }

    let origin = format!("https://127.0.0.1:{port}");
    let mut ws = wss(&gw, &cert, &[("Cookie", cookie), ("Origin", origin)])
        .await
        .unwrap();
    let hello = r#"{"type":"hello","protocol_version":1,"token":"","user_id":"alice"}"#;
    ws.send(Message::Text(hello.into())).await.unwrap();
    let answer = loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .unwrap()
        {
            Some(Ok(Message::Text(t))) => break serde_json::from_str::<serde_json::Value>(&t),
            Some(Ok(_)) => {}
            other => panic!("connection ended: {other:?}"),
        }
    }
    .unwrap();
    assert_eq!(answer["type"], "hello_ok", "{answer}");
    gw.shutdown().await;
}

#[tokio::test]
async fn plaintext_gets_no_http_on_the_tls_port() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed_cert(dir.path(), "gw");
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, tls_config(&cert, &key)).await;
    let mut tcp = TcpStream::connect(gw.local_addr()).await.unwrap();
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        gw.local_addr()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    // The handshake fails: at most a TLS alert comes back before the socket closes.
    let read = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the socket was not closed");
    assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");
    assert!(
        answer.is_empty() || answer[0] == 0x15,
        "not a TLS alert: {answer:?}"
    );
    // A WebSocket in clear is refused the same way.
    assert!(
        tokio_tungstenite::connect_async(gw.url().replace("wss://", "ws://"))
            .await
            .is_err()
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_bad_certificate_or_key_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed_cert(dir.path(), "one");
    let (_, other_key) = self_signed_cert(dir.path(), "two");
    let error = |cert: &Path, key: &Path| TlsIdentity::load(cert, key).unwrap_err().to_string();

    let missing = dir.path().join("nowhere.pem");
    let e = error(&missing, &key);
    assert!(e.starts_with("cannot read gateway.tls_cert "), "{e}");
    assert!(e.contains("nowhere.pem"), "{e}");
    let e = error(&cert, &missing);
    assert!(e.starts_with("cannot read gateway.tls_key "), "{e}");

    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let e = error(&garbage, &key);
    assert!(e.contains("gateway.tls_cert holds no certificate"), "{e}");
    let e = error(&cert, &garbage);
    assert!(e.contains("gateway.tls_key holds no private key"), "{e}");
    // A key given as the certificate, and the certificate as the key.
    let e = error(&key, &key);
    assert!(e.contains("gateway.tls_cert holds no certificate"), "{e}");
    let e = error(&cert, &cert);
    assert!(e.contains("gateway.tls_key holds no private key"), "{e}");

    let damaged = dir.path().join("damaged.pem");
    let text = std::fs::read_to_string(&cert).unwrap();
    std::fs::write(&damaged, text.replacen("\n", "\n!!!!", 2)).unwrap();
    let e = error(&damaged, &key);
    assert!(e.starts_with("gateway.tls_cert is not valid PEM"), "{e}");

    let e = error(&cert, &other_key);
    assert!(
        e.contains("gateway.tls_key is not the key of the certificate"),
        "{e}"
    );
    for e in [error(&garbage, &key), error(&cert, &other_key)] {
        assert!(!e.contains("BEGIN PRIVATE KEY-----\n"), "{e}");
    }
    assert!(TlsIdentity::load(&cert, &key).is_ok());
}

#[tokio::test]
async fn listening_beyond_loopback_without_tls_warns_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed_cert(dir.path(), "gw");
    let server = ScriptedLlm::start().await;
    let everywhere = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    let shouting = "BEYOND THIS MACHINE, WITHOUT TLS";

    let log = logged(async {
        let config = GatewayConfig {
            bind: everywhere,
            ..GatewayConfig::default()
        };
        let gw = start(dir.path(), &["alice"], &server, config).await;
        // This machine's clients are pointed at the loopback address, which reaches it.
        let port = gw.local_addr().port();
        assert_eq!(gw.url(), format!("ws://127.0.0.1:{port}/"));
        let (_, _session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
        gw.shutdown().await;
    })
    .await;
    assert!(log.contains(" WARN "), "{log}");
    assert!(log.contains(shouting), "{log}");
    assert!(log.contains("tls_cert"), "{log}");

    let with_tls = GatewayConfig {
        bind: everywhere,
        ..tls_config(&cert, &key)
    };
    for config in [with_tls, GatewayConfig::default()] {
        let log = logged(async {
            start(dir.path(), &["alice"], &server, config)
                .await
                .shutdown()
                .await;
        })
        .await;
        assert!(log.contains("gateway listening"), "{log}");
        assert!(!log.contains(shouting), "{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn the_web_client_signs_in_over_https_and_goes_online_over_wss() {
    test_support::need(test_support::Need::Chromium);
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed_cert(dir.path(), "gw");
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, tls_config(&cert, &key)).await;
    let token = token_of(dir.path(), "alice");
    let link: serde_json::Value = https_client(&cert)
        .post(format!("{}auth/link", gw.web_url()))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The certificate is self-signed: this browser is told to accept it.
    let mut browser = Browser::launch_with(&["--ignore-certificate-errors"]).await;
    let path = link["path"].as_str().unwrap().trim_start_matches('/');
    browser.navigate(&format!("{}{path}", gw.web_url())).await;
    browser
        .wait_for(
            "the page online over wss",
            "document.getElementById('conn').textContent === 'online'",
        )
        .await;
    assert_eq!(browser.eval("location.protocol").await, "https:");
    let cookies = browser
        .call("Network.getCookies", serde_json::json!({}))
        .await;
    let cookie = &cookies["cookies"][0];
    assert_eq!(cookie["secure"], true, "{cookies}");
    assert_eq!(cookie["httpOnly"], true, "{cookies}");
    gw.shutdown().await;
}
