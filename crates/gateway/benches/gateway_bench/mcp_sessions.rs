//! `gateway-bench mcp-sessions`: the gateway's memory after many MCP sessions are opened and
//! abandoned (`initialize` + `initialized`, never used again, never deleted), with the user's
//! session cap and idle time, before and after the sessions expire.
//!
//! `cargo bench -p gateway --bench gateway-bench -- mcp-sessions [--sessions N] [--cap C]
//! [--idle-secs S]` (defaults 3,000 sessions, the default cap of 32, 5 s idle so the run is short).
//! The client is this process, one short HTTP/1.1 connection per request (its own share of the
//! memory is a few buffers at a time).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use gateway::{Gateway, GatewayConfig, GatewayToken, UserAgent};
use memory::{HashEmbedder, MemoryStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use types::{UserId, WorkspacePaths};

use crate::{InstantProvider, compose, rss_kib};

/// One POST to `/mcp` on a fresh connection: the whole answer as text.
async fn post(addr: std::net::SocketAddr, headers: &str, body: &str) -> anyhow::Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{headers}\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// Opens a session and leaves it: its id.
async fn abandon_one(addr: std::net::SocketAddr, bearer: &str) -> anyhow::Result<String> {
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    let answer = post(addr, &format!("Authorization: {bearer}\r\n"), init).await?;
    let session = answer
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l.split_once(':').map(|(_, v)| v.trim().to_owned()))
                .flatten()
        })
        .with_context(|| format!("no session id in {answer}"))?;
    let headers = format!(
        "Authorization: {bearer}\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n"
    );
    post(
        addr,
        &headers,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await?;
    Ok(session)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub async fn run(sessions: usize, cap: usize, idle: Duration) -> anyhow::Result<String> {
    let dir = tempfile::tempdir()?;
    let user = UserId::parse("bench")?;
    let ws = WorkspacePaths::for_user(dir.path(), &user);
    let store = MemoryStore::open(
        memory::Target::File(&ws.default_memory_db()),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await?;
    let token = GatewayToken::load_or_create(&ws.internal())?;
    // The MCP registry as `oxydra-vm` composes it for the notes dialect.
    let memory: Arc<dyn memory::MemoryRetrieval> = Arc::new(store.clone());
    // What the agent serves over MCP (`runner::compose`), with the default settings.
    let registry =
        tools::ToolSet::for_mcp(&types::AgentConfig::default(), Some(memory)).registry()?;
    let server = mcp::McpServer::new(Arc::new(registry), user.clone(), ws.clone())?;
    let limits = mcp::McpLimits {
        max_sessions: cap,
        idle,
        ..mcp::McpLimits::default()
    };
    let agent = UserAgent::new(
        user,
        token.clone(),
        ws,
        compose(&store, Arc::new(InstantProvider))?,
    )
    .with_mcp(server, limits);
    let mut gw = Gateway::new(GatewayConfig::default());
    gw.add_user(agent)?;
    let gw = gw.start().await?;
    let addr = gw.local_addr();
    let bearer = format!("Bearer {}", token.secret());
    // One session first, so that what is made once (rmcp's statics, the first tool listing) is
    // in the starting figure.
    abandon_one(addr, &bearer).await?;
    tokio::time::sleep(idle + Duration::from_secs(2)).await;
    let start = rss_kib();
    let mut peak = start;
    for i in 0..sessions {
        abandon_one(addr, &bearer).await?;
        if i % 100 == 99 {
            peak = peak.max(rss_kib());
        }
    }
    let held = rss_kib();
    peak = peak.max(held);
    // Expiry (idle time), then a moment for the trim on a blocking thread.
    tokio::time::sleep(idle + Duration::from_secs(3)).await;
    let expired = rss_kib();
    gw.shutdown().await;
    Ok(format!(
        "mcp-sessions bench: {sessions} sessions opened and abandoned, cap {cap}, idle {idle:?}\n\
         rss at start {:.1} MiB, peak {:.1} MiB, right after the last {:.1} MiB, \
         after expiry {:.1} MiB ({:+.1} MiB from start)\n",
        mib(start),
        mib(peak),
        mib(held),
        mib(expired),
        mib(expired) - mib(start),
    ))
}
