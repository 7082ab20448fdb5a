//! `cargo bench -p mcp --bench mcp-client-bench [-- --calls N]`: what the MCP client adds to a
//! tool call, and what starting servers costs, against the real Python SDK demo server
//! (`tests/servers/demo.py`; needs `OXYDRA_MCP_PYTHON`).
//!
//! - Call overhead: `demo__echo` through a `ToolRegistry` offering `McpClients`' tools (schema
//!   check, timeout, scrubbing, bounds, rmcp's client), minus the same call made bare — one
//!   JSON-RPC line written to the server's stdin and read from its stdout, or one plain HTTP POST
//!   with the session id — which is the server's own time plus the wire. Over stdio and HTTP.
//! - HTTP before and after issue 34's fix: the same calls through a bare rmcp client on rmcp's
//!   default HTTP client (a new connection per request: what `McpClients` used before) and on a
//!   pooled one (what it uses now), side by side in one run.
//! - Start: `McpClients::start` + `ready` for one and for three stdio servers; `start` alone
//!   (what composing an agent waits for) and until `settled` (what its first turn waits for).
//!
//! Prints p50/p95 (a plain binary, no harness).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a bench binary reports on stdout and fails loudly"
)]

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp::client::{DirectLauncher, McpClients};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tools::{DynamicTools, ToolRegistry};
use types::{
    McpConfig, McpServerConfig, SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths,
};

const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/demo.py");

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn python() -> String {
    test_support::mcp_python()
        .expect("set OXYDRA_MCP_PYTHON to a python with `mcp`")
        .display()
        .to_string()
}

fn stdio() -> McpServerConfig {
    McpServerConfig {
        command: Some(python()),
        args: vec![SERVER.to_owned(), "stdio".to_owned()],
        ..McpServerConfig::default()
    }
}

fn pct(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn report(what: &str, mut ours: Vec<Duration>, mut bare: Vec<Duration>) {
    let (o50, o95) = (pct(&mut ours, 0.5), pct(&mut ours, 0.95));
    let (b50, b95) = (pct(&mut bare, 0.5), pct(&mut bare, 0.95));
    println!(
        "{what}: client p50 {:.3} ms p95 {:.3} ms | bare p50 {:.3} ms p95 {:.3} ms | overhead p50 {:.3} ms p95 {:.3} ms",
        ms(o50),
        ms(o95),
        ms(b50),
        ms(b95),
        ms(o50.saturating_sub(b50)),
        ms(o95.saturating_sub(b95)),
    );
}

async fn clients(dir: &std::path::Path, servers: &[(&str, McpServerConfig)]) -> Arc<McpClients> {
    let config = McpConfig {
        servers: servers
            .iter()
            .map(|(n, s)| ((*n).to_owned(), s.clone()))
            .collect::<BTreeMap<_, _>>(),
    };
    let clients = Arc::new(McpClients::start(
        &config,
        Arc::new(DirectLauncher::new(dir)),
        &[],
    ));
    assert!(clients.ready(Duration::from_secs(60)).await);
    clients
}

async fn through_client(
    registry: &ToolRegistry,
    ctx: &ToolExecutionContext,
    tool: &str,
    calls: usize,
) -> Vec<Duration> {
    let mut out = Vec::with_capacity(calls);
    for i in 0..calls + 20 {
        let args = json!({"text": format!("hello {i}")}).to_string();
        let began = Instant::now();
        let outcome = registry.execute(tool, &args, ctx).await;
        let took = began.elapsed();
        assert!(outcome.ok, "{}", outcome.output);
        if i >= 20 {
            out.push(took);
        }
    }
    out
}

fn call_line(id: usize) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"text": format!("hello {id}")}}})
    .to_string()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

type Lines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// The demo server over stdio once it has answered `initialize` (killed when the child drops).
async fn initialized(
    dir: &std::path::Path,
) -> (tokio::process::Child, tokio::process::ChildStdin, Lines) {
    let mut child = tokio::process::Command::new(python())
        .args([SERVER, "stdio"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin
        .write_all(format!("{INIT}\n").as_bytes())
        .await
        .unwrap();
    lines.next_line().await.unwrap().unwrap();
    (child, stdin, lines)
}

/// The same calls as bare JSON-RPC lines on the server's stdin/stdout.
async fn bare_stdio(dir: &std::path::Path, calls: usize) -> Vec<Duration> {
    let (_child, mut stdin, mut lines) = initialized(dir).await;
    stdin
        .write_all(format!("{INITIALIZED}\n").as_bytes())
        .await
        .unwrap();
    let mut out = Vec::with_capacity(calls);
    for i in 1..=calls + 20 {
        let line = format!("{}\n", call_line(i));
        let began = Instant::now();
        stdin.write_all(line.as_bytes()).await.unwrap();
        let answer = lines.next_line().await.unwrap().unwrap();
        let took = began.elapsed();
        assert!(answer.contains("echo: hello"), "{answer}");
        if i > 20 {
            out.push(took);
        }
    }
    out
}

/// The same calls as plain HTTP POSTs carrying the session id.
async fn bare_http(url: &str, calls: usize) -> Vec<Duration> {
    let http = reqwest::Client::new();
    let post = |body: String, session: Option<String>| {
        let mut req = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body);
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        req.send()
    };
    let init = post(INIT.to_owned(), None).await.unwrap();
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    init.text().await.unwrap();
    post(INITIALIZED.to_owned(), Some(session.clone()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut out = Vec::with_capacity(calls);
    for i in 1..=calls + 20 {
        let began = Instant::now();
        let answer = post(call_line(i), Some(session.clone()))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let took = began.elapsed();
        assert!(answer.contains("echo: hello"), "{answer}");
        if i > 20 {
            out.push(took);
        }
    }
    out
}

/// The same calls through a bare rmcp client: on rmcp's default HTTP client (`pooled` false, a
/// new TCP connection per request) or on a pooled reqwest client.
async fn raw_rmcp_http(url: &str, pooled: bool, calls: usize) -> Vec<Duration> {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    let transport = if pooled {
        StreamableHttpClientTransport::with_client(rmcp_reqwest::Client::new(), config)
    } else {
        StreamableHttpClientTransport::from_config(config)
    };
    let service = ().serve(transport).await.unwrap();
    let mut out = Vec::with_capacity(calls);
    for i in 0..calls + 20 {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = json!({"text": format!("hello {i}")}).as_object().cloned();
        let began = Instant::now();
        let result = service.peer().call_tool(params).await.unwrap();
        let took = began.elapsed();
        assert_ne!(result.is_error, Some(true));
        if i >= 20 {
            out.push(took);
        }
    }
    out
}

/// `n` servers spawned at once, each answering `initialize` on its stdio with no client of ours:
/// the servers' own start (the interpreter, the SDK's import), what `McpClients` cannot beat.
async fn bare_start(dir: &std::path::Path, n: usize) -> Duration {
    let began = Instant::now();
    let children = futures::future::join_all((0..n).map(|_| initialized(dir))).await;
    let took = began.elapsed();
    drop(children);
    took
}

async fn http_server(dir: &std::path::Path) -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(python())
        .args([SERVER, "http", &port.to_string()])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 300);
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolExecutionContext::new(
        UserId::parse("alice").unwrap(),
        SessionId::parse("s1").unwrap(),
        TurnId::parse("t1").unwrap(),
        WorkspacePaths::new(dir.path()),
    );

    let (_server, url) = http_server(dir.path()).await;
    let http = McpServerConfig {
        url: Some(url.clone()),
        ..McpServerConfig::default()
    };
    let both = clients(dir.path(), &[("local", stdio()), ("remote", http)]).await;
    let registry =
        ToolRegistry::default().with_dynamic_tools(Arc::clone(&both) as Arc<dyn DynamicTools>);
    let ours = through_client(&registry, &ctx, "local__echo", calls).await;
    report("stdio call", ours, bare_stdio(dir.path(), calls).await);
    let ours = through_client(&registry, &ctx, "remote__echo", calls).await;
    let bare = bare_http(&url, calls).await;
    report("http call", ours, bare.clone());
    // Before and after: rmcp's own default HTTP client against a pooled one, no registry.
    let before = raw_rmcp_http(&url, false, calls).await;
    report(
        "http, bare rmcp, rmcp's default client (before)",
        before,
        bare.clone(),
    );
    let after = raw_rmcp_http(&url, true, calls).await;
    report(
        "http, bare rmcp, pooled client (after)",
        after,
        bare.clone(),
    );
    // Again, after the others: the order's share of the load.
    let ours = through_client(&registry, &ctx, "remote__echo", calls).await;
    report("http call (again)", ours, bare);
    drop(registry);
    drop(both);

    for n in [1usize, 3] {
        let mut samples = Vec::new();
        let mut bare = Vec::new();
        let (mut returned, mut settled) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            bare.push(bare_start(dir.path(), n).await);
            let servers: Vec<(String, McpServerConfig)> =
                (0..n).map(|i| (format!("s{i}"), stdio())).collect();
            let refs: Vec<(&str, McpServerConfig)> = servers
                .iter()
                .map(|(n, s)| (n.as_str(), s.clone()))
                .collect();
            let began = Instant::now();
            let c = clients(dir.path(), &refs).await;
            samples.push(began.elapsed());
            drop(c);
            tokio::time::sleep(Duration::from_millis(200)).await;
            // What composing an agent now waits for: `start` alone (the servers connect in the
            // background; the first turn waits for them through `settled`).
            let config = McpConfig {
                servers: servers.iter().cloned().collect(),
            };
            let began = Instant::now();
            let c = McpClients::start(&config, Arc::new(DirectLauncher::new(dir.path())), &[]);
            returned.push(began.elapsed());
            c.settled().await;
            settled.push(began.elapsed());
            drop(c);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let p50 = pct(&mut samples, 0.5);
        let max = samples.iter().max().copied().unwrap_or_default();
        let bare50 = pct(&mut bare, 0.5);
        println!(
            "start {n} stdio server(s) to ready: p50 {:.0} ms, max {:.0} ms | the servers alone \
             answering initialize: p50 {:.0} ms | added by the client: p50 {:.0} ms",
            ms(p50),
            ms(max),
            ms(bare50),
            ms(p50) - ms(bare50)
        );
        println!(
            "start {n} stdio server(s), what compose waits for (McpClients::start): p50 {:.3} ms, \
             max {:.3} ms | until a first turn's tools are settled: p50 {:.0} ms",
            ms(pct(&mut returned, 0.5)),
            ms(returned.iter().max().copied().unwrap_or_default()),
            ms(pct(&mut settled, 0.5)),
        );
    }
}
