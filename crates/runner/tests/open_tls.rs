//! The gateway's TLS through the runner, in the process tier: a key that is missing stops
//! `runner start` with what to fix; a gateway bound to every interface without TLS is warned
//! about by `start` and `status`; with `[gateway] tls_cert` / `tls_key` (a certificate the
//! `openssl` CLI makes, its key readable by root only) the agent serves `wss://` without a
//! warning, no process holds the key in its command line or environment, and `runner open`
//! prints an `https://` link that signs a browser in once with a `Secure` cookie.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::Path;

use crate::common;

use common::{Setup, StopOnDrop, respond};
use test_support::ScriptedLlm;

fn set_gateway(setup: &Setup, base: &str, gateway: &str) {
    std::fs::write(
        setup.dir.path().join("agent.toml"),
        format!("{base}[gateway]\n{gateway}"),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn runner_serves_tls_from_agent_toml_and_open_prints_an_https_link() {
    test_support::need(test_support::Need::Landlock);
    let server = ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    let base = std::fs::read_to_string(setup.dir.path().join("agent.toml")).unwrap();
    let (cert, key) = test_support::self_signed_cert(setup.dir.path(), "gw");
    let shouting = "BEYOND THIS MACHINE, WITHOUT TLS";

    let missing = setup.dir.path().join("missing-key.pem");
    set_gateway(
        &setup,
        &base,
        &format!("tls_cert = {cert:?}\ntls_key = {missing:?}\n"),
    );
    let out = setup.runner(&["--insecure", "start", "--detach"]).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(said.contains("cannot read gateway.tls_key"), "{said}");
    assert!(said.contains("missing-key.pem"), "{said}");
    assert!(setup.gateway("alice").is_none(), "nothing started");

    set_gateway(&setup, &base, "bind = \"0.0.0.0\"\n");
    let started = setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    assert!(
        started.contains(&format!(
            "alice: WARNING: THE GATEWAY LISTENS ON 0.0.0.0, {shouting}"
        )),
        "{started}"
    );
    let status = setup.runner_ok(&["status"]).await;
    assert!(status.contains(shouting), "{status}");
    assert!(
        setup
            .gateway("alice")
            .unwrap()
            .url
            .starts_with("ws://127.0.0.1:")
    );
    setup.runner_ok(&["stop"]).await;

    set_gateway(
        &setup,
        &base,
        &format!("bind = \"0.0.0.0\"\ntls_cert = {cert:?}\ntls_key = {key:?}\n"),
    );
    let started = setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    assert!(!started.contains(shouting), "{started}");
    let status = setup.runner_ok(&["status"]).await;
    assert!(!status.contains(shouting), "{status}");
    let marker = setup.gateway("alice").unwrap();
    assert!(marker.url.starts_with("wss://127.0.0.1:"), "{}", marker.url);
    // The key went over stdin: no process shows it (a line of its base64 is enough to find it).
    let key_text = std::fs::read_to_string(&key).unwrap();
    let key_line = key_text.lines().nth(1).unwrap();
    common::assert_no_host_process_holds(key_line);

    let printed = setup
        .runner_ok(&["--user", "alice", "open", "--no-browser"])
        .await;
    let link = printed
        .split_whitespace()
        .find(|w| w.starts_with("https://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no https link in {printed}"));
    let client = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(cert_pem(&cert).as_bytes()).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let first = client.get(link).send().await.unwrap();
    assert_eq!(first.status(), 303);
    let set_cookie = first.headers()["set-cookie"].to_str().unwrap();
    assert!(set_cookie.contains("; Secure"), "{set_cookie}");
    assert!(first.headers().contains_key("strict-transport-security"));
    let second = client.get(link).send().await.unwrap();
    assert_eq!(second.status(), 403);
    setup.runner_ok(&["stop"]).await;
}

fn cert_pem(cert: &Path) -> String {
    std::fs::read_to_string(cert).unwrap()
}
