//! `cargo bench -p mcp --bench mcp-bench [-- --notes N --calls N --audit 0|1]`: the round trip of an MCP
//! `tools/call` for `memory_search` over streamable HTTP on loopback, against a real libSQL store
//! holding 10,000 notes (hash embeddings), through the registry's whole pipeline (validation,
//! governance, scrubbing, bounds). The client is plain HTTP (JSON-RPC POSTs with the session id),
//! so only the server is measured. Prints p50/p95/p99 (a plain binary, no harness).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a bench binary reports on stdout and fails loudly"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::routing::any;
use memory::{ExportedNote, HashEmbedder, MemoryRetrieval, MemoryStore, NoteMetadata};
use serde_json::{Value, json};
use tools::ToolSet;
use types::{NoteId, UserId, WorkspacePaths};

const WORDS: &[&str] = &[
    "tea", "coffee", "lisbon", "porto", "rust", "python", "garden", "bicycle", "piano", "sailing",
    "mountain", "river", "kitchen", "novel", "meeting", "project", "budget", "holiday", "doctor",
    "birthday", "concert", "museum", "recipe", "train", "flight", "hotel", "camera", "painting",
];

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn note_text(i: usize) -> String {
    let w = |k: usize| WORDS[(i * 7 + k * 13) % WORDS.len()];
    format!(
        "note {i}: the user likes {} and {}, mentioned {} near {}",
        w(0),
        w(1),
        w(2),
        w(3)
    )
}

/// The JSON-RPC answer in a streamable-HTTP response (JSON, or the `data:` of an SSE event).
fn answer(body: &str) -> Value {
    if let Ok(v) = serde_json::from_str(body) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .expect("a JSON-RPC answer")
}

#[tokio::main]
async fn main() {
    let notes = arg("--notes", 10_000);
    let calls = arg("--calls", 1_000);
    let dir = tempfile::tempdir().unwrap();
    let user = UserId::parse("bench").unwrap();
    let store = MemoryStore::open(
        memory::Target::File(&dir.path().join(".oxydra/memory.db")),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let now = chrono::Utc::now();
    let batch: Vec<ExportedNote> = (0..notes)
        .map(|i| ExportedNote {
            note_id: NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string()).unwrap(),
            content: note_text(i),
            metadata: NoteMetadata::default(),
            created_at: now,
            updated_at: now,
        })
        .collect();
    store
        .import(&user, None, batch, memory::Similar::Unchecked, None)
        .await
        .map(|report| report.imported)
        .unwrap();
    println!("loaded {notes} notes in {:.1?}", started.elapsed());

    let memory: Arc<dyn MemoryRetrieval> = Arc::new(store.clone());
    // What the agent serves over MCP (`runner::compose`), with the default settings.
    let mut registry = ToolSet::for_mcp(&types::AgentConfig::default(), Some(memory))
        .registry()
        .unwrap();
    // As the agent composes it (`--audit 1`, the default): audit rows in the store (a read gets
    // a row of its own) and metrics; `--audit 0` leaves the default policy alone.
    let audited = arg("--audit", 1) == 1;
    if audited {
        let governance = tools::Governance::new(types::GovernanceConfig::default())
            .with_audit(Arc::new(store.clone()))
            .with_metrics(Arc::new(tools::MemoryMetrics::new().unwrap()));
        registry = registry.with_governance(Arc::new(governance));
    }
    println!("governance with audit rows and metrics: {audited}");
    let registry = Arc::new(registry);
    // The same search straight through the registry, to tell MCP's share from the search's.
    let ctx = types::ToolExecutionContext {
        surface: types::CallSurface::new(types::Surface::Mcp),
        ..types::ToolExecutionContext::new(
            user.clone(),
            types::SessionId::parse("bench").unwrap(),
            types::TurnId::parse("bench").unwrap(),
            WorkspacePaths::new(dir.path()),
        )
    };
    let server =
        mcp::McpServer::new(Arc::clone(&registry), user, WorkspacePaths::new(dir.path())).unwrap();
    let service = mcp::http_service(server);
    let app = axum::Router::new().route(
        "/mcp",
        any(move |request: Request| {
            let service = service.clone();
            async move { service.handle(request).await.map(axum::body::Body::new) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    // As the gateway does (its listener sets TCP_NODELAY): without it, each small response waits
    // for the client's delayed ACK (~40 ms on Linux) and the bench measures that, not MCP.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let client = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut request = client
            .post(&url)
            .header("Accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(s) = session {
            request = request
                .header("Mcp-Session-Id", s)
                .header("Mcp-Protocol-Version", "2025-06-18");
        }
        request.send()
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "mcp-bench", "version": "1"}}}),
        None,
    )
    .await
    .unwrap();
    let session = init
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let _ = init.text().await.unwrap();
    post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        session.clone(),
    )
    .await
    .unwrap();

    // Interleaved, so that the three series see the same machine: the search straight through
    // the registry (its whole pipeline, governance included), an MCP `ping` (rmcp and HTTP alone,
    // no tool), and the MCP `tools/call` of the same search.
    let (mut direct, mut ping, mut times) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..(calls + 50) {
        let query = format!(
            "{} {}",
            WORDS[i % WORDS.len()],
            WORDS[(i * 5 + 3) % WORDS.len()]
        );
        let args = json!({ "query": query });
        let t = Instant::now();
        let outcome = registry
            .execute("memory_search", &args.to_string(), &ctx)
            .await;
        let direct_elapsed = t.elapsed();
        assert!(outcome.ok, "{}", outcome.output);

        let body = json!({"jsonrpc": "2.0", "id": 2 * i + 1, "method": "ping"});
        let t = Instant::now();
        let text = post(body, session.clone())
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let ping_elapsed = t.elapsed();
        assert!(answer(&text).get("result").is_some(), "{text}");

        let body = json!({"jsonrpc": "2.0", "id": 2 * i + 2, "method": "tools/call",
            "params": {"name": "memory_search", "arguments": args}});
        let t = Instant::now();
        let response = post(body, session.clone()).await.unwrap();
        let text = response.text().await.unwrap();
        let elapsed = t.elapsed();
        let answer = answer(&text);
        assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
        if i >= 50 {
            direct.push(direct_elapsed);
            ping.push(ping_elapsed);
            times.push(elapsed);
        }
    }
    let report = |what: &str, mut times: Vec<Duration>| {
        times.sort();
        let pct = |p: f64| -> Duration {
            let idx = ((times.len() as f64 * p).ceil() as usize).clamp(1, times.len()) - 1;
            times[idx]
        };
        println!(
            "{what}: p50 {:.2?}  p95 {:.2?}  p99 {:.2?}",
            pct(0.50),
            pct(0.95),
            pct(0.99)
        );
    };
    println!("{notes} notes, {calls} calls of each, interleaved:");
    report("registry.execute memory_search directly", direct);
    report("MCP ping over loopback HTTP", ping);
    report("MCP tools/call memory_search over loopback HTTP", times);
}
