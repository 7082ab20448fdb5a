//! `web_fetch` against real local HTTP servers: pages as Markdown, redirects followed and each hop
//! checked, every private address refused (literal, resolved, redirected into, or a DNS answer
//! that changes), slow, endless, compressed-bomb and huge bodies bounded, other charsets decoded.
//! The test server is itself on loopback, so the tests name it in `allow_hosts` (as `site.test`)
//! and prove that other private destinations stay refused.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tools::{ToolOutcome, ToolRegistry, ToolSet};
use types::{UntrustedInput, WebConfig};

use crate::common;
use crate::web_server::{Reply, ScriptedDns, Server};

fn config(allow: &[&str]) -> WebConfig {
    WebConfig {
        enabled: true,
        allow_hosts: allow.iter().map(|h| (*h).to_owned()).collect(),
        timeout_secs: 2,
        ..WebConfig::default()
    }
}

fn registry(config: &WebConfig, dns: Arc<ScriptedDns>) -> ToolRegistry {
    let mut registry = ToolRegistry::default().with_output_limit(1 << 20);
    for tool in ToolSet::new(None)
        .web_resolving(config, dns)
        .tools()
        .unwrap()
    {
        registry.register(tool).unwrap();
    }
    registry
}

async fn fetch(registry: &ToolRegistry, url: &str) -> ToolOutcome {
    fetch_with(registry, json!({ "url": url })).await
}

async fn fetch_with(registry: &ToolRegistry, args: serde_json::Value) -> ToolOutcome {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::context("alice", dir.path());
    registry.execute("web_fetch", &args.to_string(), &ctx).await
}

const PAGE: &str = "<!doctype html><html><head><title>Rooibos</title></head><body>\
    <nav><a href=\"/\">Home</a> <a href=\"/shop\">Shop</a></nav>\
    <main><h1>Rooibos</h1><p>A <a href=\"https://example.org/bush\">red bush</a> from the Cederberg.</p></main>\
    <footer>cookie banner</footer><script>steal()</script></body></html>";

/// A site with a page, JSON, a PDF and redirects (relative, chained, and into private places).
async fn site() -> Server {
    Server::start(|path, _, port| match path {
        "/page" => Reply::ok("text/html; charset=utf-8", PAGE),
        "/data.json" => Reply::ok("application/json", r#"{"tea":"rooibos","cups":3}"#),
        "/file.pdf" => Reply::ok("application/pdf", b"%PDF-1.7 binary".to_vec()),
        "/missing" => Reply::Page {
            status: "404 Not Found",
            headers: vec![("Content-Type", "text/plain".to_owned())],
            body: b"no such page".to_vec(),
        },
        "/r1" => Reply::redirect("/r2"),
        "/r2" => Reply::redirect(format!("http://site.test:{port}/page")),
        p if p.starts_with("/loop") => {
            let n: u32 = p[5..].parse().unwrap_or(0);
            Reply::redirect(format!("/loop{}", n + 1))
        }
        "/to-loopback" => Reply::redirect(format!("http://127.0.0.1:{port}/secret")),
        "/to-metadata" => Reply::redirect("http://169.254.169.254/latest/meta-data/iam"),
        "/to-internal" => Reply::redirect(format!("http://internal.test:{port}/secret")),
        "/to-file" => Reply::redirect("file:///etc/passwd"),
        _ => Reply::ok("text/plain", "secret"),
    })
    .await
}

fn site_dns() -> Arc<ScriptedDns> {
    ScriptedDns::with(&[
        ("site.test", &["127.0.0.1"]),
        ("internal.test", &["127.0.0.1"]),
    ])
}

#[tokio::test]
async fn pages_come_back_as_markdown_with_their_url_and_status() {
    let server = site().await;
    let registry = registry(&config(&["site.test"]), site_dns());
    let base = format!("http://site.test:{}", server.port());
    let page = fetch(&registry, &format!("{base}/page")).await;
    assert!(page.ok, "{page:?}");
    let out = &page.output;
    assert!(
        out.starts_with(&format!("URL: {base}/page\nStatus: 200 OK\n")),
        "{out}"
    );
    assert!(out.contains("Title: Rooibos"), "{out}");
    assert!(out.contains("# Rooibos"), "{out}");
    assert!(
        out.contains("[red bush](https://example.org/bush)"),
        "{out}"
    );
    for chrome in ["Shop", "cookie banner", "steal()"] {
        assert!(!out.contains(chrome), "{chrome} kept: {out}");
    }
    let data = fetch(&registry, &format!("{base}/data.json")).await;
    assert!(
        data.output.ends_with(r#"{"tea":"rooibos","cups":3}"#),
        "{data:?}"
    );
    let pdf = fetch(&registry, &format!("{base}/file.pdf")).await;
    assert!(pdf.ok, "{pdf:?}");
    assert!(
        pdf.output
            .contains("application/pdf document (15 bytes), not shown"),
        "{pdf:?}"
    );
    assert!(!pdf.output.contains("%PDF"), "{pdf:?}");
    let missing = fetch(&registry, &format!("{base}/missing")).await;
    assert!(
        missing.output.contains("Status: 404 Not Found") && missing.output.contains("no such page")
    );
    let tool = registry.get("web_fetch").unwrap();
    assert_eq!(tool.reads_untrusted(), Some(UntrustedInput::Web));
}

#[tokio::test]
async fn redirects_are_followed_up_to_five_and_the_final_url_is_said() {
    let server = site().await;
    let registry = registry(&config(&["site.test"]), site_dns());
    let base = format!("http://site.test:{}", server.port());
    let page = fetch(&registry, &format!("{base}/r1")).await;
    assert!(page.ok, "{page:?}");
    assert!(
        page.output.starts_with(&format!("URL: {base}/page\n")),
        "{}",
        page.output
    );
    let looped = fetch(&registry, &format!("{base}/loop0")).await;
    assert!(!looped.ok);
    assert!(
        looped.output.contains("more than 5 redirects"),
        "{}",
        looped.output
    );
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|p| p.starts_with("/loop"))
            .count(),
        6
    );
}

#[tokio::test]
async fn redirects_into_private_addresses_are_refused() {
    let server = site().await;
    let registry = registry(&config(&["site.test"]), site_dns());
    let base = format!("http://site.test:{}", server.port());
    for (path, kind) in [
        ("/to-loopback", "loopback"),
        ("/to-metadata", "cloud metadata"),
        ("/to-internal", "loopback"),
        ("/to-file", "http and https URLs only"),
    ] {
        let out = fetch(&registry, &format!("{base}{path}")).await;
        assert!(!out.ok, "{path}: {out:?}");
        assert_eq!(out.error_kind, Some("denied"), "{path}: {out:?}");
        assert!(out.output.contains(kind), "{path}: {}", out.output);
    }
    assert!(
        !server.requests().iter().any(|p| p == "/secret"),
        "a refused redirect reached the server: {:?}",
        server.requests()
    );
}

#[tokio::test]
async fn private_destinations_are_refused_before_any_connection() {
    let server = site().await;
    let port = server.port();
    // No allow_hosts: the same loopback server is out of reach by address and by name, and the
    // real system resolver's answer for `localhost` is checked like any other.
    let registry = {
        let mut registry = ToolRegistry::default();
        for tool in ToolSet::new(None).web(&config(&[])).tools().unwrap() {
            registry.register(tool).unwrap();
        }
        registry
    };
    for url in [
        format!("http://127.0.0.1:{port}/page"),
        format!("http://localhost:{port}/page"),
        format!("http://[::ffff:127.0.0.1]:{port}/page"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://10.0.0.1/".to_owned(),
        "http://0.0.0.0/".to_owned(),
    ] {
        let out = fetch(&registry, &url).await;
        assert!(!out.ok, "{url}: {out:?}");
        assert_eq!(out.error_kind, Some("denied"), "{url}: {}", out.output);
    }
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    assert!(
        ToolSet::new(None)
            .web(&WebConfig::default())
            .tools()
            .unwrap()
            .is_empty(),
        "on by default"
    );
}

#[tokio::test]
async fn a_host_whose_dns_answer_changes_is_only_reached_at_the_address_checked() {
    let server = site().await;
    // The first answer passes the check (a public documentation address that leads nowhere),
    // the next one says loopback: a client that looked the name up again to connect would reach
    // the server. Ours connects to what it checked, once per lookup.
    let dns = ScriptedDns::with(&[("rebind.test", &["192.0.2.1", "127.0.0.1"])]);
    let registry = registry(&config(&[]), dns.clone());
    let url = format!("http://rebind.test:{}/secret", server.port());
    let first = fetch(&registry, &url).await;
    assert!(!first.ok, "{first:?}");
    assert_ne!(first.error_kind, Some("denied"), "{first:?}");
    assert_eq!(
        dns.count(),
        1,
        "the name was looked up more than once for one connection"
    );
    let second = fetch(&registry, &url).await;
    assert_eq!(second.error_kind, Some("denied"), "{second:?}");
    assert!(
        second.output.contains("rebind.test` resolves to 127.0.0.1"),
        "{}",
        second.output
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[tokio::test]
async fn slow_silent_and_endless_bodies_are_bounded() {
    let server = Server::start(|path, _, _| match path {
        "/slow" => Reply::Trickle {
            chunk: b"tick\n".to_vec(),
            every: Duration::from_millis(200),
        },
        "/endless" => Reply::Trickle {
            chunk: vec![b'x'; 64 * 1024],
            every: Duration::ZERO,
        },
        _ => Reply::Silent,
    })
    .await;
    let mut cfg = config(&["site.test"]);
    cfg.max_bytes = 256 * 1024;
    let registry = registry(&cfg, site_dns());
    let base = format!("http://site.test:{}", server.port());
    let started = Instant::now();
    let slow = fetch(&registry, &format!("{base}/slow")).await;
    assert!(slow.ok, "{slow:?}");
    assert!(
        slow.output.contains("still arriving after 1.8 s") && slow.output.contains("tick"),
        "{}",
        slow.output
    );
    let silent = fetch(&registry, &format!("{base}/silent")).await;
    assert_eq!(silent.error_kind, Some("timeout"), "{silent:?}");
    let endless = fetch_with(
        &registry,
        json!({"url": format!("{base}/endless"), "max_chars": 200_000}),
    )
    .await;
    assert!(endless.ok, "{endless:?}");
    assert!(
        endless
            .output
            .contains("only the first 262144 bytes were read"),
        "{}",
        endless.output
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_gzip_bomb_is_read_only_to_the_byte_limit() {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![b'a'; 1 << 20];
    for _ in 0..200 {
        encoder.write_all(&zeros).unwrap();
    }
    let bomb = encoder.finish().unwrap();
    assert!(bomb.len() < 1 << 20, "the bomb is {} bytes", bomb.len());
    let server = Server::start(move |_, _, _| Reply::Page {
        status: "200 OK",
        headers: vec![
            ("Content-Type", "text/plain".to_owned()),
            ("Content-Encoding", "gzip".to_owned()),
        ],
        body: bomb.clone(),
    })
    .await;
    let mut cfg = config(&["site.test"]);
    cfg.max_bytes = 1 << 20;
    let registry = registry(&cfg, site_dns());
    let out = fetch(
        &registry,
        &format!("http://site.test:{}/bomb", server.port()),
    )
    .await;
    assert!(out.ok, "{out:?}");
    assert!(
        out.output
            .contains("only the first 1048576 bytes were read"),
        "{}",
        &out.output[..300]
    );
    assert!(
        out.output.contains("[cut at 20000 of 1048576 characters"),
        "{}",
        &out.output[out.output.len() - 200..]
    );
}

#[tokio::test]
async fn pages_in_other_charsets_are_decoded() {
    let server = Server::start(|path, _, _| match path {
        "/cp1251" => Reply::ok("text/html; charset=windows-1251", b"<p>\xcf\xf0\xe8\xe2\xe5\xf2</p>".to_vec()),
        "/sjis" => Reply::ok(
            "text/html",
            b"<html><head><meta charset=\"shift_jis\"></head><body><p>\x93\xfa\x96\x7b</p></body></html>".to_vec(),
        ),
        _ => Reply::ok("text/plain; charset=iso-8859-1", b"caf\xe9 cr\xe8me".to_vec()),
    })
    .await;
    let registry = registry(&config(&["site.test"]), site_dns());
    let base = format!("http://site.test:{}", server.port());
    for (path, text) in [
        ("/cp1251", "Привет"),
        ("/sjis", "日本"),
        ("/latin1", "café crème"),
    ] {
        let out = fetch(&registry, &format!("{base}{path}")).await;
        assert!(out.output.contains(text), "{path}: {}", out.output);
    }
}

#[tokio::test]
async fn huge_pages_are_cut_to_max_chars_and_the_output_budget() {
    let paragraph = "<p>Steeped rooibos keeps well. </p>";
    let huge = format!("<html><body>{}</body></html>", paragraph.repeat(100_000));
    let server = Server::start(move |_, _, _| Reply::ok("text/html", huge.clone())).await;
    let registry = registry(&config(&["site.test"]), site_dns());
    let url = format!("http://site.test:{}/huge", server.port());
    let out = fetch_with(&registry, json!({"url": url, "max_chars": 1000})).await;
    assert!(out.ok, "{out:?}");
    assert!(
        out.output
            .contains("[cut at 1000 characters of a longer page ("),
        "{}",
        out.output
    );
    assert!(out.output.len() < 1500, "{}", out.output.len());
    // Without max_chars the configured default applies, and the registry's own bound holds.
    let small = {
        let mut registry = ToolRegistry::default().with_output_limit(4096);
        for tool in ToolSet::new(None)
            .web_resolving(&config(&["site.test"]), site_dns())
            .tools()
            .unwrap()
        {
            registry.register(tool).unwrap();
        }
        registry
    };
    let bounded = fetch(&small, &url).await;
    assert!(
        bounded.output.len() <= 4096 + 200,
        "{}",
        bounded.output.len()
    );
}

#[tokio::test]
async fn bad_urls_get_a_clear_error() {
    let registry = registry(&config(&[]), site_dns());
    let out = fetch(&registry, "not a url").await;
    assert_eq!(out.error_kind, Some("invalid_arguments"));
    assert!(
        out.output.contains("an absolute http:// or https:// URL"),
        "{}",
        out.output
    );
    let ftp = fetch(&registry, "ftp://example.org/x").await;
    assert_eq!(ftp.error_kind, Some("denied"), "{ftp:?}");
}
