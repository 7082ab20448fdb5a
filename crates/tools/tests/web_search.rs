//! `web_search` against local stand-ins speaking the backends' real formats: SearXNG's JSON API
//! (the default) and Brave Search's (its key from the environment variable the config names).

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use serde_json::{Value, json};
use tools::{ToolOutcome, ToolRegistry, ToolSet};
use types::{SearchBackend, UntrustedInput, WebConfig, WebSearchConfig};

use crate::common;
use crate::web_server::{Reply, Server};

/// SearXNG's `/search?format=json` answer, shaped as a real instance sends it.
fn searxng_answer() -> String {
    json!({
        "query": "rooibos",
        "number_of_results": 0,
        "results": [
            {"url": "https://example.org/rooibos", "title": "Rooibos - Wikipedia",
             "content": "Rooibos is a broom-like member of the plant family Fabaceae.",
             "engine": "wikipedia", "parsed_url": ["https", "example.org", "/rooibos", "", "", ""],
             "engines": ["wikipedia"], "positions": [1], "score": 1.0, "category": "general"},
            {"url": "https://example.com/tea", "title": "How to brew <b>rooibos</b>",
             "content": "Steep for five minutes.", "engine": "duckduckgo", "score": 0.5},
            {"url": "https://example.net/3", "title": "Third", "content": "third"}
        ],
        "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["rooibos tea"],
        "unresponsive_engines": []
    })
    .to_string()
}

fn registry(search: WebSearchConfig) -> ToolRegistry {
    let config = WebConfig {
        enabled: true,
        timeout_secs: 5,
        search: Some(search),
        ..WebConfig::default()
    };
    let mut registry = ToolRegistry::default();
    for tool in ToolSet::new(None).web(&config).tools().unwrap() {
        registry.register(tool).unwrap();
    }
    registry
}

async fn search(registry: &ToolRegistry, args: Value) -> ToolOutcome {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::context("alice", dir.path());
    registry
        .execute("web_search", &args.to_string(), &ctx)
        .await
}

#[tokio::test]
async fn searxng_results_come_back_as_title_url_and_snippet() {
    let server = Server::start(|path, _, _| {
        if path.starts_with("/searx/search?")
            && path.contains("format=json")
            && path.contains("q=rooibos+tea")
        {
            Reply::ok("application/json", searxng_answer())
        } else {
            Reply::Page {
                status: "400 Bad Request",
                headers: vec![],
                body: path.as_bytes().to_vec(),
            }
        }
    })
    .await;
    let registry = registry(WebSearchConfig {
        url: Some(format!("http://{}/searx/", server.addr)),
        ..WebSearchConfig::default()
    });
    let out = search(&registry, json!({"query": "rooibos tea", "count": 2})).await;
    assert!(out.ok, "{out:?}");
    let answer: Value = serde_json::from_str(&out.output).unwrap();
    assert_eq!(
        answer,
        json!({"query": "rooibos tea", "results": [
            {"title": "Rooibos - Wikipedia", "url": "https://example.org/rooibos",
             "snippet": "Rooibos is a broom-like member of the plant family Fabaceae."},
            {"title": "How to brew rooibos", "url": "https://example.com/tea",
             "snippet": "Steep for five minutes."}
        ]})
    );
    let tool = registry.get("web_search").unwrap();
    assert_eq!(tool.reads_untrusted(), Some(UntrustedInput::Web));
    let empty = search(&registry, json!({"query": "  "})).await;
    assert_eq!(empty.error_kind, Some("invalid_arguments"));
}

#[tokio::test]
async fn a_searxng_without_json_says_how_to_turn_it_on() {
    let server = Server::start(|_, _, _| Reply::Page {
        status: "403 Forbidden",
        headers: vec![],
        body: b"Forbidden".to_vec(),
    })
    .await;
    let registry = registry(WebSearchConfig {
        url: Some(format!("http://{}", server.addr)),
        ..WebSearchConfig::default()
    });
    let out = search(&registry, json!({"query": "rooibos"})).await;
    assert!(!out.ok);
    assert!(out.output.contains("search.formats"), "{}", out.output);
}

#[tokio::test]
async fn brave_is_asked_with_the_key_from_the_environment() {
    // Cargo sets CARGO_PKG_NAME for the test process: a variable that exists, standing in for
    // BRAVE_API_KEY without changing the environment.
    let key = env!("CARGO_PKG_NAME");
    let server = Server::start(move |path, headers, _| {
        let keyed = headers.get("x-subscription-token").map(String::as_str) == Some(key);
        if keyed && path.contains("count=1") {
            Reply::ok(
                "application/json",
                json!({"type": "search", "web": {"type": "search", "results": [
                    {"title": "Rooibos", "url": "https://example.org/r",
                     "description": "A <strong>red</strong> bush tea.", "language": "en"}
                ]}})
                .to_string(),
            )
        } else {
            Reply::Page {
                status: "401 Unauthorized",
                headers: vec![],
                body: Vec::new(),
            }
        }
    })
    .await;
    let brave = |env: &str| WebSearchConfig {
        backend: SearchBackend::Brave,
        url: Some(format!("http://{}/res/v1/web/search", server.addr)),
        api_key_env: Some(env.to_owned()),
        count: 5,
    };
    let out = search(
        &registry(brave("CARGO_PKG_NAME")),
        json!({"query": "rooibos", "count": 1}),
    )
    .await;
    assert!(out.ok, "{out:?}");
    assert!(
        out.output.contains(r#""snippet":"A red bush tea.""#),
        "{}",
        out.output
    );
    let unset = search(
        &registry(brave("OXYDRA_TEST_NO_SUCH_KEY")),
        json!({"query": "x"}),
    )
    .await;
    assert!(!unset.ok);
    assert!(
        unset.output.contains("OXYDRA_TEST_NO_SUCH_KEY"),
        "{}",
        unset.output
    );
}
