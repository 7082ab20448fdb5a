//! `gateway-bench`: what the gateway adds to a turn, and what an idle connection costs.
//!
//! One user with a real libSQL store (hash embedder) and an in-process provider that answers
//! instantly. It opens N authenticated WebSocket connections (default 1,000; each on its own new
//! session) and measures the process's resident memory per idle connection (client and server
//! ends both live in this process, so the figure covers both), then the latency of turns sent over
//! a connection (send_turn to turn_completed) against the same turns run directly on the runtime,
//! and finally every connection sending one turn at once.
//!
//! `cargo bench -p gateway --bench gateway-bench [-- --connections N]`
//!
//! `cargo bench -p gateway --bench gateway-bench -- flood [--idle N] [--floods K] [--no-auth]`
//! measures instead the gateway's memory while another process holds N idle connections
//! (default 10,000; authenticated, bare TCP, and upgrades without `hello`), a newcomer's turn
//! meanwhile, and the memory left after K floods (default 8): see `flood.rs`.
//!
//! `cargo bench -p gateway --bench gateway-bench -- undo [--notes N] [--rounds R]`: the frame
//! round trip of an undo from the TUI: see `undo.rs`.
//!
//! `cargo bench -p gateway --bench gateway-bench -- mcp-sessions [--sessions N] [--cap C]
//! [--idle-secs S]`: the memory left by MCP sessions opened and abandoned: see `mcp_sessions.rs`.

mod flood;
mod mcp_sessions;
mod undo;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use async_trait::async_trait;
use futures::{SinkExt, StreamExt};
use gateway::{Gateway, GatewayConfig, GatewayToken, RunningGateway, UserAgent};
use memory::{HashEmbedder, MemoryStore};
use provider::{
    ChatRequest, ChatResponse, EventStream, FinishReason, Provider, ProviderError, StreamEvent,
};
use runtime::{AgentRuntime, ModelLimits, TurnEvent};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tools::ToolSet;
use types::{
    ClientFrame, MemoryDialect, PROTOCOL_VERSION, RetrievalConfig, RuntimeConfig, ServerFrame,
    SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths,
};

#[derive(Debug)]
struct InstantProvider;

#[async_trait]
impl Provider for InstantProvider {
    fn model(&self) -> &str {
        "instant"
    }

    async fn stream(&self, _req: &ChatRequest) -> Result<EventStream, ProviderError> {
        let events = vec![
            StreamEvent::TextDelta("Noted, ".into()),
            StreamEvent::TextDelta("thanks.".into()),
            StreamEvent::Done {
                finish_reason: FinishReason::Stop,
            },
        ];
        Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed())
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        provider::collect_response(self.stream(req).await?).await
    }
}

/// The standard agent over `store`, composed as `oxydra-vm` does (`runner::compose`): every
/// built-in tool over this one store, history and recall in it.
fn compose(store: &MemoryStore, provider: Arc<dyn Provider>) -> anyhow::Result<AgentRuntime> {
    let registry = ToolSet::new(Some(Arc::new(store.clone())))
        .builtin(MemoryDialect::Notes)
        .registry()?;
    let limits = ModelLimits {
        context_window: 128_000,
        max_output_tokens: 1024,
    };
    Ok(AgentRuntime::new(
        provider,
        Arc::new(registry),
        RuntimeConfig::default(),
        limits,
    )
    .with_retrieval(RetrievalConfig::default())
    .with_memory(store.clone()))
}

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn recv(ws: &mut Ws) -> anyhow::Result<ServerFrame> {
    loop {
        match tokio::time::timeout(Duration::from_secs(60), ws.next()).await? {
            Some(Ok(Message::Text(text))) => return Ok(serde_json::from_str(text.as_str())?),
            Some(Ok(_)) => {}
            other => bail!("connection ended: {other:?}"),
        }
    }
}

async fn send(ws: &mut Ws, frame: &ClientFrame) -> anyhow::Result<()> {
    ws.send(Message::Text(serde_json::to_string(frame)?.into()))
        .await?;
    Ok(())
}

async fn connect(gw_url: &str, token: &str, user: &UserId) -> anyhow::Result<(Ws, SessionId)> {
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(8 * 1024)
        .write_buffer_size(8 * 1024);
    let (mut ws, _) =
        tokio_tungstenite::connect_async_with_config(gw_url, Some(config), true).await?;
    let hello = ClientFrame::Hello {
        protocol_version: PROTOCOL_VERSION,
        token: token.to_owned(),
        user_id: user.clone(),
        session_id: None,
        last_seq: None,
    };
    send(&mut ws, &hello).await?;
    match recv(&mut ws).await? {
        ServerFrame::HelloOk { session, .. } => Ok((ws, session.session_id)),
        other => bail!("expected hello_ok, got {other:?}"),
    }
}

/// One turn over the connection; its latency.
async fn turn(ws: &mut Ws, session: &SessionId, i: usize) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let frame = ClientFrame::SendTurn {
        session_id: session.clone(),
        text: format!("remember that I like tea number {i}"),
        client_turn_id: format!("c{i}"),
    };
    send(ws, &frame).await?;
    loop {
        let frame = recv(ws).await?;
        if frame.ends_turn() {
            if !matches!(
                frame,
                ServerFrame::Turn {
                    event: TurnEvent::TurnCompleted { .. },
                    ..
                }
            ) {
                bail!("turn did not complete: {frame:?}");
            }
            return Ok(start.elapsed());
        }
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |p: f64| {
        let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
        samples.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    format!(
        "p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms (n={})",
        at(0.5),
        at(0.95),
        at(0.99),
        samples.len()
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // `cargo bench` adds `--bench`.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let value = |name: &str, default: usize| -> anyhow::Result<usize> {
        match args.iter().position(|a| a == name) {
            Some(i) => Ok(args.get(i + 1).context("a number")?.parse()?),
            None => Ok(default),
        }
    };
    match args.first().map(String::as_str) {
        Some("child") => {
            let (Some(mode), Some(url), Some(n)) = (args.get(1), args.get(2), args.get(3)) else {
                bail!("child MODE URL N");
            };
            return flood::child(mode, url, n.parse()?).await;
        }
        Some("undo") => {
            let report = undo::run(value("--notes", 10_000)?, value("--rounds", 300)?).await?;
            std::io::Write::write_all(&mut std::io::stdout(), report.as_bytes())?;
            return Ok(());
        }
        Some("mcp-sessions") => {
            let idle = Duration::from_secs(value("--idle-secs", 5)? as u64);
            let report = mcp_sessions::run(
                value("--sessions", 3_000)?,
                value("--cap", mcp::McpLimits::DEFAULT_MAX_SESSIONS)?,
                idle,
            )
            .await?;
            std::io::Write::write_all(&mut std::io::stdout(), report.as_bytes())?;
            return Ok(());
        }
        Some("flood") => {
            let (idle, floods) = (value("--idle", 10_000)?, value("--floods", 8)?);
            // `--no-auth`: only the floods (authenticated sessions stay in memory afterwards).
            let modes: &[&str] = if args.iter().any(|a| a == "--no-auth") {
                &["tcp", "ws"]
            } else {
                &["auth", "tcp", "ws"]
            };
            let dir = tempfile::tempdir()?;
            let user = UserId::parse("bench")?;
            let ws_paths = WorkspacePaths::for_user(dir.path(), &user);
            let store = MemoryStore::open(
                memory::Target::File(&ws_paths.default_memory_db()),
                memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
            )
            .await?;
            let token = GatewayToken::load_or_create(&ws_paths.internal())?;
            let agent = UserAgent::new(
                user.clone(),
                token.clone(),
                ws_paths,
                compose(&store, Arc::new(InstantProvider))?,
            );
            let mut gw = Gateway::new(GatewayConfig::default());
            gw.add_user(agent)?;
            let gw = gw.start().await?;
            let report = flood::run(&gw, token.secret(), &user, idle, floods, modes).await?;
            std::io::Write::write_all(&mut std::io::stdout(), report.as_bytes())?;
            gw.shutdown().await;
            return Ok(());
        }
        _ => {}
    }
    let connections = value("--connections", 1000)?;
    let dir = tempfile::tempdir()?;
    let user = UserId::parse("bench")?;
    let ws_paths = WorkspacePaths::for_user(dir.path(), &user);
    let store = MemoryStore::open(
        memory::Target::File(&ws_paths.default_memory_db()),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await?;
    let token = GatewayToken::load_or_create(&ws_paths.internal())?;
    let provider: Arc<dyn Provider> = Arc::new(InstantProvider);
    let agent = UserAgent::new(
        user.clone(),
        token.clone(),
        ws_paths.clone(),
        compose(&store, Arc::clone(&provider))?,
    );
    let direct = compose(&store, provider)?;
    let mut gw = Gateway::new(GatewayConfig::default());
    gw.add_user(agent)?;
    let gw: RunningGateway = gw.start().await?;
    let url = gw.url();

    // Idle connections.
    let before = rss_kib();
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        clients.push(connect(&url, token.secret(), &user).await?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    let per_conn = (after.saturating_sub(before)) as f64 / connections as f64;

    // Turn latency over the gateway (with the idle connections open), warm-up first.
    let (ws, session) = clients.first_mut().context("no connections")?;
    for i in 0..20 {
        turn(ws, session, i).await?;
    }
    let mut over_gateway = Vec::new();
    for i in 0..300 {
        over_gateway.push(turn(ws, session, 100 + i).await?);
    }

    // The same turns straight on the runtime, for the gateway's share.
    let runtime = &direct;
    let session = SessionId::parse("direct")?;
    let mut on_runtime = Vec::new();
    for i in 0..320 {
        let ctx = ToolExecutionContext::new(
            user.clone(),
            session.clone(),
            TurnId::parse(&format!("d{i}"))?,
            ws_paths.clone(),
        );
        let (tx, mut rx) = mpsc::channel::<TurnEvent>(64);
        let start = Instant::now();
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        runtime
            .run_turn(&ctx, &format!("remember that I like tea number {i}"), &tx)
            .await?;
        drop(tx);
        drain.await?;
        if i >= 20 {
            on_runtime.push(start.elapsed());
        }
    }

    // Every connection sends one turn at once.
    let start = Instant::now();
    let mut tasks = Vec::new();
    for (i, (mut ws, session)) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let d = turn(&mut ws, &session, 10_000 + i).await;
            (d, ws)
        }));
    }
    let mut burst = Vec::new();
    let mut keep = Vec::new();
    for task in tasks {
        let (d, ws) = task.await?;
        burst.push(d?);
        keep.push(ws);
    }
    let burst_total = start.elapsed();

    let report = format!(
        "connections: {connections}\n\
         rss before {before} KiB, after {after} KiB: {per_conn:.1} KiB per idle connection (both ends)\n\
         turn over the gateway: {}\n\
         same turn on the runtime directly: {}\n\
         {connections} turns at once: all done in {:.2} s; per turn {}\n",
        percentiles(over_gateway),
        percentiles(on_runtime),
        burst_total.as_secs_f64(),
        percentiles(burst),
    );
    std::io::Write::write_all(&mut std::io::stdout(), report.as_bytes())?;
    drop(keep);
    gw.shutdown().await;
    Ok(())
}
