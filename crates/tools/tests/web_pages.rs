//! `web_fetch` against pages that broke the HTML conversion, served by a real local HTTP server:
//! a large page in a non-Latin script (its title was looked for in the first 64 KiB, cut inside
//! a character: a panic, and the page could not be read) and a page of deeply nested elements
//! (the converter walks the tree recursively: the agent's process overflowed its stack), and a
//! page whose conversion takes longer than the call's time limit (it ran past the limit).

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use std::time::{Duration, Instant};

use serde_json::json;
use tools::{ToolOutcome, ToolRegistry, ToolSet};
use types::WebConfig;

use crate::common;
use crate::web_server::{Reply, ScriptedDns, Server};

/// The pages `web-bench --adversarial` measures.
#[path = "../src/bin/web_bench/adversarial.rs"]
#[allow(
    dead_code,
    clippy::print_stdout,
    reason = "the benchmark's page builders; its report is not used here"
)]
mod adversarial;

fn config(timeout_secs: u64) -> WebConfig {
    WebConfig {
        enabled: true,
        allow_hosts: vec!["site.test".to_owned()],
        timeout_secs,
        ..WebConfig::default()
    }
}

fn registry() -> ToolRegistry {
    registry_with(&config(10))
}

fn registry_with(config: &WebConfig) -> ToolRegistry {
    let dns = ScriptedDns::with(&[("site.test", &["127.0.0.1"])]);
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
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::context("alice", dir.path());
    let args = json!({ "url": url, "max_chars": 2000 });
    registry.execute("web_fetch", &args.to_string(), &ctx).await
}

/// A page in Cyrillic (two bytes a letter) whose 65,536th byte falls inside a letter.
fn cyrillic_page() -> String {
    let head = "<!doctype html><html><head><title>Ройбуш</title></head><body><p>";
    let mut page = head.to_owned();
    if page.len().is_multiple_of(2) {
        page.push(' ');
    }
    while page.len() < 80 * 1024 {
        page.push_str("чай ");
    }
    page.push_str("</p></body></html>");
    assert!(
        !page.is_char_boundary(64 * 1024),
        "the test page is cut mid-letter"
    );
    page
}

fn nested_page(depth: usize) -> String {
    format!(
        "<!doctype html><html><head><title>Deep</title></head><body><p>Rooibos at the top.</p>{}bottom{}</body></html>",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    )
}

async fn site() -> Server {
    Server::start(|path, _, _| match path {
        "/cyrillic" => Reply::ok("text/html; charset=utf-8", cyrillic_page()),
        "/deep" => Reply::ok("text/html", nested_page(200_000)),
        _ => Reply::ok("text/plain", "nothing here"),
    })
    .await
}

#[tokio::test]
async fn a_large_page_in_a_non_latin_script_is_read_with_its_title() {
    let server = site().await;
    let registry = registry();
    let url = format!("http://site.test:{}/cyrillic", server.port());
    let page = fetch(&registry, &url).await;
    assert!(page.ok, "{}", page.output);
    assert!(page.output.contains("Title: Ройбуш"), "{}", page.output);
    assert!(page.output.contains("чай чай"), "{}", page.output);
}

#[tokio::test]
async fn a_page_of_deeply_nested_elements_is_read_without_ending_the_agent() {
    let server = site().await;
    let registry = registry();
    let url = format!("http://site.test:{}/deep", server.port());
    let page = fetch(&registry, &url).await;
    assert!(page.ok, "{}", page.output);
    assert!(page.output.contains("Title: Deep"), "{}", page.output);
    assert!(
        page.output.contains("Rooibos at the top."),
        "{}",
        page.output
    );
}

/// A page that converts at once for its first part, then takes seconds (formatting elements the
/// parser re-opens before every `<br>`, from `web-bench --adversarial`): the call answers within
/// its 1 s limit with the first part, marked as cut. Before, it waited for the whole conversion.
#[tokio::test]
async fn a_page_slow_to_convert_is_answered_within_the_time_limit() {
    let first = format!("<p>Rooibos first.</p><!--{}-->", "x".repeat(70 * 1024));
    let slow = adversarial::page("formatting-reopened", 8 << 20).unwrap();
    let page = format!("{first}{slow}");
    let server = Server::start(move |_, _, _| Reply::ok("text/html", page.clone())).await;
    let config = WebConfig {
        max_bytes: 16 << 20,
        ..config(1)
    };
    let registry = registry_with(&config);
    let url = format!("http://site.test:{}/slow", server.port());
    let started = Instant::now();
    let out = fetch(&registry, &url).await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "took {took:?}: {}",
        out.output
    );
    assert!(out.ok, "{}", out.output);
    assert!(out.output.contains("Rooibos first."), "{}", out.output);
    assert!(
        out.output
            .contains("[cut: converting the page takes longer than the 1 s time limit"),
        "{}",
        out.output
    );
}
